-- Accounts, login sessions, API tokens and the audit log. Secrets are
-- never stored: passwords as bcrypt hashes, session ids and API tokens as
-- SHA-256 hashes.

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    role          TEXT NOT NULL CHECK (role IN ('viewer', 'reviewer', 'admin')),
    password_hash BLOB,           -- NULL: the account signs in through the proxy only
    created_at    INTEGER NOT NULL
);

CREATE TABLE sessions (
    id_hash     BLOB PRIMARY KEY,
    user_id     INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    remote_addr TEXT NOT NULL
);

CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY,
    name         TEXT NOT NULL,
    token_hash   BLOB NOT NULL UNIQUE,
    scope        TEXT NOT NULL CHECK (scope IN ('webhook', 'read', 'write')),
    created_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER
);

CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    remote_addr TEXT NOT NULL,
    before      TEXT,             -- JSON, NULL for a creation
    after       TEXT              -- JSON, NULL for a deletion
);

CREATE INDEX audit_log_at ON audit_log (at, id);
