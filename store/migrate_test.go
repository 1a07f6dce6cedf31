package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigrationUpgrade builds a version-1 archive holding a review, opens
// it with the current code, and checks that migration 2 copied the judged
// diagnosis onto the label so accuracy counts it.
func TestMigrationUpgrade(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on&_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{w: db}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if err := old.apply(ctx, migs[0]); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO causes (id, title, builtin, created_at) VALUES ('queue_backlog', 'Queue backlog', 1, 0), ('none', 'No anomaly', 1, 0)`,
		`INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end) VALUES (1, 't', 'm', 'manual', 5, 0, 10)`,
		`INSERT INTO diagnoses (id, incident_id, engine_version, created_at, root_cause, confidence, body) VALUES (7, 1, 'rules-0', 5, 'queue_backlog', 0.5, '{}')`,
		`INSERT INTO labels (id, incident_id, diagnosis_id, verdict, true_cause, labeled_by, created_at) VALUES (3, 1, 7, 'wrong', 'none', 'ana', 6)`,
		`UPDATE incidents SET diagnosis_id = 7, root_cause = 'queue_backlog', label_id = 3, verdict = 'wrong', true_cause = 'none', cause = 'none' WHERE id = 1`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(ctx); v != migs[len(migs)-1].Version {
		t.Errorf("schema version %d after upgrade, want %d", v, migs[len(migs)-1].Version)
	}
	// The version-1 database was kept before migrating.
	baks, _ := filepath.Glob(path + ".v1-*.bak")
	if len(baks) != 1 {
		t.Fatalf("backups before migrating: %v, want one", baks)
	}
	bak, err := sql.Open("sqlite3", "file:"+baks[0]+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer bak.Close()
	var v, labels int
	if err := bak.QueryRowContext(ctx, `SELECT max(version), (SELECT count(*) FROM labels) FROM schema_migrations`).Scan(&v, &labels); err != nil || v != 1 || labels != 1 {
		t.Errorf("backup holds version %d with %d labels (%v), want version 1 with 1", v, labels, err)
	}
	a, err := s.Accuracy(ctx, AccuracyFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Overall.Reviewed != 1 || len(a.ByEngine) != 1 || a.ByEngine[0].Key != "rules-0" ||
		len(a.Confusion) != 1 || a.Confusion[0] != (ConfusionCell{Diagnosed: "queue_backlog", True: "none", Count: 1}) {
		t.Errorf("accuracy after upgrade = %+v", a)
	}
}
