package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// This file is the one place where SQL is assembled at run time: the list
// filters are optional and combine freely. Every value is a ? parameter.

// VerdictFilter selects incidents by review state.
type VerdictFilter string

// Verdict filters; the empty filter selects every incident.
const (
	VerdictAny        VerdictFilter = ""
	VerdictUnreviewed VerdictFilter = "unreviewed"
	VerdictIsCorrect  VerdictFilter = "correct"
	VerdictIsWrong    VerdictFilter = "wrong"
)

// Cursor is a keyset position in the list order (newest first).
type Cursor struct {
	OpenedAt time.Time
	ID       int64
}

// IsZero reports whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.ID == 0 }

// String encodes the cursor for a URL.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(nanos(c.OpenedAt), 36) + "." + strconv.FormatInt(c.ID, 36)
}

// ParseCursor decodes a cursor made by Cursor.String; "" is the start.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	a, b, ok := strings.Cut(s, ".")
	t, err1 := strconv.ParseInt(a, 36, 64)
	id, err2 := strconv.ParseInt(b, 36, 64)
	if !ok || err1 != nil || err2 != nil || id <= 0 {
		return Cursor{}, invalidf("page cursor %q is malformed", s)
	}
	return Cursor{OpenedAt: fromNanos(t), ID: id}, nil
}

// Limits on list pages.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
	MaxQueryBytes   = 512
)

// ListFilter selects and pages incidents. Zero fields do not filter.
type ListFilter struct {
	Model    string
	Instance string
	// Cause matches incidents whose cause is this id: the true cause of
	// the current label when reviewed, else the current diagnosis's.
	Cause    string
	Severity string
	Verdict  VerdictFilter
	From, To time.Time // opened in [From, To)
	// Query is full-text search over titles, notes and diagnosis evidence.
	// Words are matched as prefixes and all must occur; FTS5 operators in
	// it are treated as plain text. Search results come newest-archived
	// first (by id, which follows opening order for incidents archived as
	// they open), and only the cursor's ID positions the next page. The
	// words are looked up as the exact terms of the index they begin, read
	// newest first; when some word cannot be (see exactQuery), the newest
	// 20,000 incidents are searched first in their own small index, so a
	// word that occurs in every incident fills a page without FTS5
	// expanding it over the whole archive (see search).
	Query string
	After Cursor // start after this position; zero is the first page
	Limit int    // default DefaultPageSize, at most MaxPageSize
}

// ListPage is one page of incidents, newest first.
type ListPage struct {
	Items []Summary `json:"items"`
	// Next is the cursor of the following page; zero when this is the last.
	Next Cursor `json:"-"`
}

// ftsWords splits user text into the words a search matches, at most 16.
func ftsWords(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	return words[:min(len(words), 16)]
}

// ftsQuote quotes a word for an FTS5 query, so that operators, column
// filters and quotes in user text are inert.
func ftsQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// maxExpansion bounds how many terms exactQuery puts in place of a word
// (a variable for tests, which set it to 0 to keep every word a prefix).
var maxExpansion = 32

// exactQuery returns an FTS5 query for the rows that hold every word of q
// as a prefix of a term, naming exact terms where it can: a word of ASCII
// letters and digits becomes the terms of the full index that begin with
// it, OR-ed. Other
// words, and words that begin more than maxExpansion terms or a term with
// other characters, stay prefixes; exact reports whether none did. FTS5
// reads exact terms newest first and skips to the rows the other words
// match, where it collects every row of a prefix's terms first (see
// migration 11): a word in every incident costs nothing, alone or beside
// a rare one.
func exactQuery(ctx context.Context, db querier, q string) (query string, exact bool, err error) {
	var parts []string
	exact = true
	for _, w := range ftsWords(q) {
		part := ""
		if isPlain(w) {
			if part, err = exactTerms(ctx, db, strings.ToLower(w)); err != nil {
				return "", false, err
			}
		}
		if part == "" {
			part, exact = ftsQuote(w)+"*", false
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " AND "), exact, nil
}

// exactTerms returns the terms of the full index that begin with w, a
// plain word in lower case, OR-ed; "" when there are more than
// maxExpansion of them or one is not plain.
func exactTerms(ctx context.Context, db querier, w string) (string, error) {
	// Every term that begins with w sorts below hi, and none equals it
	// (U+10FFFF is no token character), so a lookup stops at the first
	// term past w's: the table lists every occurrence of a term it reaches.
	hi := w + "\U0010FFFF"
	var terms []string
	for from := w; ; {
		var t string
		err := db.QueryRowContext(ctx, `SELECT term FROM search_vocab WHERE term >= ? AND term <= ? LIMIT 1`, from, hi).Scan(&t)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("search vocabulary: %w", err)
		}
		if !isPlain(t) || len(terms) == maxExpansion {
			return "", nil
		}
		terms = append(terms, ftsQuote(t))
		from = t + "\x00" // the least string after t
	}
	switch len(terms) {
	case 0:
		return ftsQuote(w), nil // no term: it matches nothing
	case 1:
		return terms[0], nil
	}
	return "(" + strings.Join(terms, " OR ") + ")", nil
}

// isPlain reports whether s is non-empty ASCII letters and digits: what
// unicode61 indexes as one token, s in lower case, and what a quoted term
// in a query means only itself.
func isPlain(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// List returns one page of incidents matching f, newest first.
func (s *Store) List(ctx context.Context, f ListFilter) (ListPage, error) {
	if len(f.Query) > MaxQueryBytes {
		return ListPage{}, fmt.Errorf("store: list incidents: %w", invalidf("search text longer than %d bytes", MaxQueryBytes))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)

	var where []string
	var args []any
	add := func(cond string, a ...any) { where = append(where, cond); args = append(args, a...) }
	if f.Model != "" {
		add(`i.model = ?`, f.Model)
	}
	if f.Instance != "" {
		add(`i.instance = ?`, f.Instance)
	}
	if f.Cause != "" {
		add(`i.cause = ?`, f.Cause)
	}
	if f.Severity != "" {
		add(`i.severity = ?`, f.Severity)
	}
	switch f.Verdict {
	case VerdictAny:
	case VerdictUnreviewed:
		add(`i.verdict = ''`)
	case VerdictIsCorrect, VerdictIsWrong:
		add(`i.verdict = ?`, string(f.Verdict))
	default:
		return ListPage{}, fmt.Errorf("store: list incidents: %w", invalidf("verdict filter %q is not unreviewed, correct or wrong", f.Verdict))
	}
	if !f.From.IsZero() {
		add(`i.opened_at >= ?`, nanos(f.From))
	}
	if !f.To.IsZero() {
		add(`i.opened_at < ?`, nanos(f.To))
	}
	if strings.TrimSpace(f.Query) != "" {
		if len(ftsWords(f.Query)) == 0 {
			return ListPage{}, nil // only punctuation: nothing can match
		}
		items, err := s.search(ctx, f.Query, where, args, f.After.ID, limit+1)
		if err != nil {
			return ListPage{}, fmt.Errorf("store: list incidents: %w", err)
		}
		return pageOf(items, limit), nil
	}
	if !f.After.IsZero() {
		add(`(i.opened_at, i.id) < (?, ?)`, nanos(f.After.OpenedAt), f.After.ID)
	}
	query := `SELECT ` + summaryColumns + ` FROM incidents i`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY i.opened_at DESC, i.id DESC LIMIT ?`
	items, err := querySummaries(ctx, s.r, query, append(args, limit+1)...)
	if err != nil {
		return ListPage{}, fmt.Errorf("store: list incidents: %w", err)
	}
	return pageOf(items, limit), nil
}

// search returns up to n incidents matching the words of the user text q
// and the filter conditions, with ids below before (when not zero), highest
// id first.
//
// When every word can be matched as exact terms (exactQuery), the full
// index answers at once, newest first. Otherwise the newest incidents are
// searched first in search_recent, whose prefix expansion is small; the
// full index is read only for the rows below its range when the newest
// ones do not fill the page. Both reads share one snapshot, so a
// concurrent insert cannot shift the boundary between them.
func (s *Store) search(ctx context.Context, q string, where []string, args []any, before int64, n int) ([]Summary, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	match, exact, err := exactQuery(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	if exact {
		return searchIndex(ctx, tx, "search", match, where, args, before, n)
	}
	var lo int64
	err = tx.QueryRowContext(ctx, `SELECT ifnull((SELECT rowid FROM search_recent ORDER BY rowid LIMIT 1), 0)`).Scan(&lo)
	if err != nil {
		return nil, err
	}
	var items []Summary
	if lo > 0 && (before == 0 || before > lo) {
		if items, err = searchIndex(ctx, tx, "search_recent", match, where, args, before, n); err != nil {
			return nil, err
		}
		if len(items) == n {
			return items, nil
		}
		before = lo // search_recent held every match at or above lo
	}
	more, err := searchIndex(ctx, tx, "search", match, where, args, before, n-len(items))
	if err != nil {
		return nil, err
	}
	return append(items, more...), nil
}

// searchIndex runs one search over the FTS table index (search or
// search_recent, never user input).
func searchIndex(ctx context.Context, db querier, index, q string, where []string, args []any, before int64, n int) ([]Summary, error) {
	query := `SELECT ` + summaryColumns + ` FROM ` + index + ` JOIN incidents i ON i.id = ` + index + `.rowid
		WHERE ` + index + ` MATCH ?`
	all := append([]any{q}, args...)
	for _, w := range where {
		query += ` AND ` + w
	}
	if before != 0 {
		query += ` AND ` + index + `.rowid < ?`
		all = append(all, before)
	}
	query += ` ORDER BY ` + index + `.rowid DESC LIMIT ?`
	return querySummaries(ctx, db, query, append(all, n)...)
}

func querySummaries(ctx context.Context, db querier, query string, args ...any) ([]Summary, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []Summary
	for rows.Next() {
		sum, err := scanSummary(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, sum)
	}
	return items, rows.Err()
}

// pageOf cuts items, read with one extra row, to a page of limit.
func pageOf(items []Summary, limit int) ListPage {
	page := ListPage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		page.Next = Cursor{OpenedAt: last.OpenedAt, ID: last.ID}
	}
	return page
}
