-- An account's language preference ("en", "zh-CN"): the console speaks it
-- to the account when a request names no language of its own (?lang= or
-- the switch's cookie). NULL: no preference, the browser's
-- Accept-Language decides.
ALTER TABLE users ADD COLUMN language TEXT;
