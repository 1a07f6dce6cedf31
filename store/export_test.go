package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// SeedBulk opens incidents, each with its diagnosis and optional note, in
// one transaction through the same code as OpenIncident, and indexes them
// for search as its triggers would. Benchmarks use it to build a large
// archive without one fsync per incident.
func (s *Store) SeedBulk(ctx context.Context, ins []NewIncident, ds []DiagnosisRecord, notes []string) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	restore, err := dropSearchTriggers(ctx, tx)
	if err != nil {
		return err
	}
	// Each statement is prepared once per batch, not once per row.
	ex := &preparedTx{tx: tx, stmts: map[string]*sql.Stmt{}}
	defer ex.close()
	var first, last int64
	for i := range ins {
		if err := ins[i].validate(); err != nil {
			return err
		}
		p, err := pack(ins[i])
		if err != nil {
			return err
		}
		id, _, created, err := openIncident(ctx, ex, ins[i], ds[i], p)
		if err != nil {
			return fmt.Errorf("seed %d: %w", i, err)
		}
		if !created {
			continue // its alert is archived already: OpenIncident would return that incident
		}
		if first == 0 {
			first = id
		}
		last = id
		if notes[i] != "" {
			_, err := ex.ExecContext(ctx, `INSERT INTO notes (incident_id, author, created_at, body) VALUES (?, 'seed', ?, ?)`,
				id, nanos(ins[i].OpenedAt), notes[i])
			if err != nil {
				return err
			}
		}
	}
	if first != 0 {
		if err := indexSeeded(ctx, tx, first, last); err != nil {
			return err
		}
	}
	if err := restore(); err != nil {
		return err
	}
	return tx.Commit()
}

// searchTriggers index each incident, note and diagnosis as it is written
// (migrations 1 and 8). Row by row that costs FTS5 an insert per incident,
// a delete and re-insert per diagnosis and note, and a flush of its
// pending index at each of those, in both indexes: most of a seeded
// incident's cost. SeedBulk drops them for its transaction and indexes the
// batch at the end with indexSeeded, which writes the same rows.
var searchTriggers = []string{
	"incidents_search", "notes_search", "diagnoses_search",
	"incidents_search_recent", "notes_search_recent", "diagnoses_search_recent",
}

// dropSearchTriggers drops searchTriggers in tx and returns the function
// that creates them again, as they were, before tx commits.
func dropSearchTriggers(ctx context.Context, tx *sql.Tx) (restore func() error, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var defs []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return nil, err
		}
		if slices.Contains(searchTriggers, name) {
			defs = append(defs, def)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(defs) != len(searchTriggers) {
		return nil, fmt.Errorf("seed: found %d of the search triggers %v: indexSeeded is out of date", len(defs), searchTriggers)
	}
	for _, name := range searchTriggers {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER `+name); err != nil {
			return nil, err
		}
	}
	return func() error {
		for _, def := range defs {
			if _, err := tx.ExecContext(ctx, def); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// recentWindow is how many of the newest incidents search_recent holds
// (migration 8).
const recentWindow = 20000

// indexSeeded writes the search rows the search triggers would have
// written for the incidents first..last, just created with their notes and
// diagnoses: in search, the title, then each note and each diagnosis's
// evidence text after a newline, in the order they were added; in
// search_recent, the same for those within its window, which then drops
// what fell out of it. In rowid order, FTS5 builds the index in large
// segments.
func indexSeeded(ctx context.Context, tx *sql.Tx, first, last int64) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO search (rowid, title, notes, evidence)
		SELECT i.id, i.title,
			ifnull((SELECT string_agg(char(10) || n.body, '' ORDER BY n.id) FROM notes n WHERE n.incident_id = i.id), ''),
			ifnull((SELECT string_agg(char(10) || d.evidence_text, '' ORDER BY d.id) FROM diagnoses d WHERE d.incident_id = i.id), '')
		FROM incidents i WHERE i.id BETWEEN ? AND ? ORDER BY i.id`, first, last)
	if err != nil {
		return fmt.Errorf("index seeded incidents: %w", err)
	}
	_, err = tx.ExecContext(ctx, `
		INSERT INTO search_recent (rowid, title, notes, evidence)
		SELECT rowid, title, notes, evidence FROM search
		WHERE rowid BETWEEN max(?1, ?2 - ?3 + 1) AND ?2
			-- as the trigger's WHEN: below the covered range stays out
			AND rowid >= ifnull((SELECT rowid FROM search_recent ORDER BY rowid LIMIT 1), 0)
		ORDER BY rowid`, first, last, recentWindow)
	if err != nil {
		return fmt.Errorf("index seeded incidents: recent: %w", err)
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM search_recent WHERE rowid <= ? - ?`, last, recentWindow)
	if err != nil {
		return fmt.Errorf("index seeded incidents: prune recent: %w", err)
	}
	return nil
}

// preparedTx runs statements in tx, preparing each distinct query once.
type preparedTx struct {
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
}

func (p *preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, ok := p.stmts[query]
	if !ok {
		var err error
		if st, err = p.tx.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		p.stmts[query] = st
	}
	return st.ExecContext(ctx, args...)
}

func (p *preparedTx) close() {
	for _, st := range p.stmts {
		st.Close()
	}
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
