-- The full-text index's vocabulary, so a search can match the exact terms
-- that begin with its words instead of the words as prefixes (see
-- exactQuery in list.go). FTS5 answers a prefix by first collecting the
-- rows of every term it matches, whatever the ORDER BY, LIMIT and rowid
-- bounds: for a word in every incident that is the whole archive, even
-- when another word of the query is rare. An exact term is read newest
-- first and skips ahead to the rows the rarer words match.
--
-- One row per occurrence of a term ('instance'): a lookup of the first
-- term at or after a string reads one occurrence, where the per-term
-- form ('row') counts every row of each term it passes. The table is a
-- view of the index: it stores nothing.

CREATE VIRTUAL TABLE search_vocab USING fts5vocab (search, instance);
