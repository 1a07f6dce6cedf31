-- The cause the rules alone named for each reviewed incident's snapshot,
-- written with its signature when it is labelled, so the diagnoser's
-- classifier learns where the rules name a symptom instead of the cause
-- the labels give. NULL: not known (a signature stored before this
-- column); the diagnoser learns such a case from its signature alone.
ALTER TABLE case_signatures ADD COLUMN rules_cause TEXT;
