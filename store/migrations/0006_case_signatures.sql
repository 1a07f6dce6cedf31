-- The case signature of each reviewed incident, written when it is
-- labelled, so the knowledge base loads at start from these rows instead
-- of decoding and re-deriving every snapshot. A row counts only while its
-- verdict and cause are the incident's current label's and its version is
-- the signature format the console computes; any other row is recomputed
-- from the snapshot (and rewritten) at the next start.

CREATE TABLE case_signatures (
    incident_id INTEGER PRIMARY KEY REFERENCES incidents (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,                -- diagnose.SignatureVersion
    verdict     TEXT NOT NULL CHECK (verdict IN ('correct', 'wrong')),
    cause       TEXT NOT NULL,                   -- the true cause the case teaches
    signature   BLOB NOT NULL CHECK (length(signature) <= 1024)  -- diagnose.Signature, float32 little-endian
);
