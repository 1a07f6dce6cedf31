-- Review counts per day, kept current by triggers, so the accuracy page
-- and the knowledge base read a few thousand tally rows instead of every
-- label: a million-incident archive costs what a small one does.
--
-- A row counts the incidents opened on one UTC day (days since the Unix
-- epoch) whose current label judged a diagnosis of diagnosed_cause from
-- engine_version, with that true cause and verdict. The triggers follow
-- incidents.label_id, the pointer to an incident's current label, so every
-- writer that re-labels an incident keeps the tally true. Rows that fall to
-- zero stay (readers skip them): a day's causes are few.

CREATE TABLE label_tally (
    day             INTEGER NOT NULL,
    diagnosed_cause TEXT NOT NULL,
    true_cause      TEXT NOT NULL,
    correct         INTEGER NOT NULL,
    engine_version  TEXT NOT NULL,
    n               INTEGER NOT NULL,
    PRIMARY KEY (day, diagnosed_cause, true_cause, correct, engine_version)
) WITHOUT ROWID;

INSERT INTO label_tally (day, diagnosed_cause, true_cause, correct, engine_version, n)
SELECT i.opened_at / 86400000000000, l.diagnosed_cause, l.true_cause, l.verdict = 'correct', l.engine_version, count(*)
FROM incidents i JOIN labels l ON l.id = i.label_id
GROUP BY 1, 2, 3, 4, 5;

CREATE TRIGGER label_tally_add AFTER UPDATE OF label_id ON incidents
WHEN NEW.label_id IS NOT NULL AND NEW.label_id IS NOT OLD.label_id
BEGIN
    INSERT INTO label_tally (day, diagnosed_cause, true_cause, correct, engine_version, n)
    SELECT NEW.opened_at / 86400000000000, l.diagnosed_cause, l.true_cause, l.verdict = 'correct', l.engine_version, 1
    FROM labels l WHERE l.id = NEW.label_id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER label_tally_replace AFTER UPDATE OF label_id ON incidents
WHEN OLD.label_id IS NOT NULL AND NEW.label_id IS NOT OLD.label_id
BEGIN
    UPDATE label_tally SET n = n - 1
    WHERE (day, diagnosed_cause, true_cause, correct, engine_version) =
        (SELECT OLD.opened_at / 86400000000000, l.diagnosed_cause, l.true_cause, l.verdict = 'correct', l.engine_version
         FROM labels l WHERE l.id = OLD.label_id);
END;

-- BEFORE: the incident's labels are deleted with it by the cascade.
CREATE TRIGGER label_tally_delete BEFORE DELETE ON incidents
WHEN OLD.label_id IS NOT NULL
BEGIN
    UPDATE label_tally SET n = n - 1
    WHERE (day, diagnosed_cause, true_cause, correct, engine_version) =
        (SELECT OLD.opened_at / 86400000000000, l.diagnosed_cause, l.true_cause, l.verdict = 'correct', l.engine_version
         FROM labels l WHERE l.id = OLD.label_id);
END;
