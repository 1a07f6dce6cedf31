-- Labels keep the diagnosed cause and engine version they judged, so the
-- accuracy and knowledge-base queries read labels alone instead of one
-- diagnosis body row per review. A covering index lets them find the
-- current labels of reviewed incidents without reading incident rows.

ALTER TABLE labels ADD COLUMN diagnosed_cause TEXT NOT NULL DEFAULT '';
ALTER TABLE labels ADD COLUMN engine_version TEXT NOT NULL DEFAULT '';

UPDATE labels SET
    diagnosed_cause = coalesce((SELECT d.root_cause FROM diagnoses d WHERE d.id = labels.diagnosis_id),
                               (SELECT i.root_cause FROM incidents i WHERE i.id = labels.incident_id), ''),
    engine_version = coalesce((SELECT d.engine_version FROM diagnoses d WHERE d.id = labels.diagnosis_id), '');

DROP INDEX incidents_verdict_opened;
CREATE INDEX incidents_verdict_opened ON incidents (verdict, opened_at, label_id);
