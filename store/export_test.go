package store

import (
	"context"
	"fmt"
)

// SeedBulk opens incidents, each with its diagnosis and optional note, in
// one transaction through the same code as OpenIncident. Benchmarks use it
// to build a large archive without one fsync per incident.
func (s *Store) SeedBulk(ctx context.Context, ins []NewIncident, ds []DiagnosisRecord, notes []string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := range ins {
		if err := ins[i].validate(); err != nil {
			return err
		}
		p, err := pack(ins[i])
		if err != nil {
			return err
		}
		id, _, _, err := openIncident(ctx, tx, ins[i], ds[i], p)
		if err != nil {
			return fmt.Errorf("seed %d: %w", i, err)
		}
		if notes[i] != "" {
			_, err := tx.ExecContext(ctx, `INSERT INTO notes (incident_id, author, created_at, body) VALUES (?, 'seed', ?, ?)`,
				id, nanos(ins[i].OpenedAt), notes[i])
			if err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// SeedLabels reviews every nth incident in one transaction: one in four of
// those wrong. Benchmarks use it; the rules AddLabel enforces hold for the
// rows it writes.
func (s *Store) SeedLabels(ctx context.Context, every int) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `
		INSERT INTO labels (incident_id, diagnosis_id, diagnosed_cause, engine_version, verdict, true_cause, labeled_by, created_at, note)
		SELECT id, diagnosis_id, root_cause, (SELECT engine_version FROM diagnoses d WHERE d.id = incidents.diagnosis_id),
			CASE WHEN id % (4 * ?) = 0 THEN 'wrong' ELSE 'correct' END,
			CASE WHEN id % (4 * ?) != 0 THEN root_cause WHEN root_cause = 'none' THEN 'unknown' ELSE 'none' END,
			'seed', opened_at, ''
		FROM incidents WHERE id % ? = 0`, every, every, every)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE incidents SET (label_id, verdict, true_cause, cause) =
			(SELECT l.id, l.verdict, l.true_cause, l.true_cause FROM labels l WHERE l.incident_id = incidents.id ORDER BY l.id DESC LIMIT 1)
		WHERE id % ? = 0`, every)
	if err != nil {
		return err
	}
	return tx.Commit()
}

// ExecForTest runs one statement on the writer, for tests that damage an
// archive on purpose.
func (s *Store) ExecForTest(ctx context.Context, query string, args ...any) error {
	_, err := s.w.ExecContext(ctx, query, args...)
	return err
}

// SeededCounts returns how many incidents the archive holds and how many of
// them are reviewed, for benchmarks that reuse a seeded archive.
func (s *Store) SeededCounts(ctx context.Context) (incidents, reviewed int, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT count(*), count(label_id) FROM incidents`).Scan(&incidents, &reviewed)
	return incidents, reviewed, err
}
