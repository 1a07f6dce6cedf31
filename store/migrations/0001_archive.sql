-- The incident archive: incidents with their evidence, every diagnosis,
-- every review label, notes, share links, engineer-created causes and a
-- full-text index. Times are INTEGER Unix nanoseconds, UTC.

CREATE TABLE causes (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    builtin     INTEGER NOT NULL DEFAULT 0 CHECK (builtin IN (0, 1)),
    created_by  TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);

CREATE TABLE incidents (
    id                INTEGER PRIMARY KEY,
    title             TEXT NOT NULL,
    model             TEXT NOT NULL,
    instance          TEXT NOT NULL DEFAULT '',
    trigger_kind      TEXT NOT NULL CHECK (trigger_kind IN ('alertmanager', 'manual', 'detector')),
    trigger_detail    TEXT NOT NULL DEFAULT '{}',
    alert_fingerprint TEXT,
    alert_starts_at   INTEGER,
    alert_state       TEXT CHECK (alert_state IN ('firing', 'resolved')),
    alert_resolved_at INTEGER,
    opened_at         INTEGER NOT NULL,
    window_start      INTEGER NOT NULL,
    window_end        INTEGER NOT NULL,
    severity          TEXT NOT NULL DEFAULT '',
    -- Current state, kept in step with the diagnoses and labels tables in
    -- the same transaction so that list filters need no subqueries.
    diagnosis_id      INTEGER,
    root_cause        TEXT NOT NULL DEFAULT '',
    confidence        REAL NOT NULL DEFAULT 0,
    label_id          INTEGER,
    verdict           TEXT NOT NULL DEFAULT '' CHECK (verdict IN ('', 'correct', 'wrong')),
    true_cause        TEXT NOT NULL DEFAULT '',
    -- The incident's cause as far as anyone knows: the current label's true
    -- cause when reviewed, else the current diagnosis's root cause.
    cause             TEXT NOT NULL DEFAULT '',
    UNIQUE (alert_fingerprint, alert_starts_at)
);

-- The evidence blobs live apart from the incident row, so list queries
-- never walk overflow pages to reach the columns after them.
CREATE TABLE incident_evidence (
    incident_id INTEGER PRIMARY KEY REFERENCES incidents (id) ON DELETE CASCADE,
    snapshot    BLOB NOT NULL,  -- gzip-compressed metrics.Snapshot JSON
    windows     BLOB NOT NULL   -- gzip-compressed []metrics.Series JSON
);

CREATE INDEX incidents_opened ON incidents (opened_at);
CREATE INDEX incidents_model_opened ON incidents (model, opened_at);
CREATE INDEX incidents_instance_opened ON incidents (model, instance, opened_at);
CREATE INDEX incidents_cause_opened ON incidents (cause, opened_at);
CREATE INDEX incidents_true_cause_opened ON incidents (true_cause, opened_at);
CREATE INDEX incidents_verdict_opened ON incidents (verdict, opened_at);
CREATE INDEX incidents_severity_opened ON incidents (severity, opened_at);
CREATE INDEX incidents_alert_fp ON incidents (alert_fingerprint);

CREATE TABLE diagnoses (
    id             INTEGER PRIMARY KEY,
    incident_id    INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    engine_version TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    root_cause     TEXT NOT NULL,
    confidence     REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    severity       TEXT NOT NULL DEFAULT '',
    body           TEXT NOT NULL,
    evidence_text  TEXT NOT NULL DEFAULT ''
);

CREATE INDEX diagnoses_incident ON diagnoses (incident_id, id);

CREATE TABLE labels (
    id           INTEGER PRIMARY KEY,
    incident_id  INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    diagnosis_id INTEGER REFERENCES diagnoses (id),
    verdict      TEXT NOT NULL CHECK (verdict IN ('correct', 'wrong')),
    true_cause   TEXT NOT NULL REFERENCES causes (id),
    labeled_by   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    note         TEXT NOT NULL DEFAULT ''
);

CREATE INDEX labels_incident ON labels (incident_id, id);

CREATE TABLE notes (
    id          INTEGER PRIMARY KEY,
    incident_id INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    author      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    body        TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 8192)
);

CREATE INDEX notes_incident ON notes (incident_id, id);

CREATE TABLE share_links (
    id          INTEGER PRIMARY KEY,
    token_hash  BLOB NOT NULL UNIQUE,  -- SHA-256 of the token; the token itself is never stored
    incident_id INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

CREATE INDEX share_links_incident ON share_links (incident_id);

-- One row per incident (rowid = incident id): its title, its notes and the
-- evidence text of each of its diagnoses, appended as they arrive.
CREATE VIRTUAL TABLE search USING fts5 (
    title,
    notes,
    evidence,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER incidents_search AFTER INSERT ON incidents BEGIN
    INSERT INTO search (rowid, title, notes, evidence) VALUES (new.id, new.title, '', '');
END;

CREATE TRIGGER incidents_search_delete AFTER DELETE ON incidents BEGIN
    DELETE FROM search WHERE rowid = old.id;
END;

CREATE TRIGGER notes_search AFTER INSERT ON notes BEGIN
    UPDATE search SET notes = notes || char(10) || new.body WHERE rowid = new.incident_id;
END;

CREATE TRIGGER diagnoses_search AFTER INSERT ON diagnoses BEGIN
    UPDATE search SET evidence = evidence || char(10) || new.evidence_text WHERE rowid = new.incident_id;
END;
