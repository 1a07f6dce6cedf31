-- Kernel traces attached to an incident: a PyTorch profiler or Nsight
-- Systems trace of the slow period ('incident') or of a healthy period to
-- compare with ('baseline'). Only the parsed summary is kept, never the
-- uploaded file.

CREATE TABLE traces (
    id          INTEGER PRIMARY KEY,
    incident_id INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    role        TEXT NOT NULL CHECK (role IN ('incident', 'baseline')),
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    size        INTEGER NOT NULL CHECK (size >= 0),
    uploaded_at INTEGER NOT NULL,
    summary     BLOB NOT NULL  -- gzip-compressed summary JSON
);

CREATE INDEX traces_incident ON traces (incident_id, role, id);
