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
		id, _, _, err := openIncident(ctx, tx, ins[i], ds[i])
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
