-- Change requests made from an incident's suggested actions, their
-- webhook deliveries and, once applied, the measured outcome. The
-- document (JSON) and its Markdown are kept as they were generated, so
-- what was sent is what the page shows.

CREATE TABLE change_requests (
    id           INTEGER PRIMARY KEY,
    incident_id  INTEGER NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    uid          TEXT NOT NULL UNIQUE,        -- the document id, the webhook's idempotency key
    root_cause   TEXT NOT NULL,
    action_id    TEXT NOT NULL,
    knob         TEXT NOT NULL DEFAULT '',    -- '' for an operational step
    before_value TEXT NOT NULL DEFAULT '',
    after_value  TEXT NOT NULL DEFAULT '',
    doc          TEXT NOT NULL,               -- the change request JSON
    markdown     TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'proposed'
                 CHECK (status IN ('proposed', 'sent', 'applied', 'rolled_back')),
    created_at   INTEGER NOT NULL,
    created_by   TEXT NOT NULL DEFAULT '',
    applied_at   INTEGER,
    outcome      TEXT,                        -- the outcome JSON, once evaluated
    verdict      TEXT NOT NULL DEFAULT '',    -- the outcome's verdict: expected, not_expected, inconclusive
    -- Delivery state of the webhook: none (no webhook), pending (to try),
    -- delivered, failed (attempts used up or refused).
    delivery     TEXT NOT NULL DEFAULT 'none'
                 CHECK (delivery IN ('none', 'pending', 'delivered', 'failed')),
    -- Attempts made before the current round of delivery (a round is
    -- started again by hand after a failure).
    round_start  INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX change_requests_incident ON change_requests (incident_id, id);
CREATE INDEX change_requests_pending ON change_requests (delivery) WHERE delivery = 'pending';
CREATE INDEX change_requests_outcome ON change_requests (root_cause, action_id, verdict);

CREATE TABLE change_deliveries (
    id        INTEGER PRIMARY KEY,
    change_id INTEGER NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
    attempt   INTEGER NOT NULL,
    at        INTEGER NOT NULL,
    ok        INTEGER NOT NULL,
    code      INTEGER NOT NULL DEFAULT 0,
    error     TEXT NOT NULL DEFAULT ''
);

CREATE INDEX change_deliveries_change ON change_deliveries (change_id, id);
