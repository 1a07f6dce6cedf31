package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
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
	db := oldArchive(t, path, migs[:1])
	seedLabelledIncident(t, db, 5)
	db.Close()

	s := openUpgraded(t, path, migs)
	defer s.Close()
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

// TestMigrationCaseSignatures builds an archive with migrations 1-5
// holding a reviewed incident, opens it with the current code, and checks
// that migration 6 adds the signature table: the incident streams without
// a signature until one is stored, and deleting the incident drops it.
func TestMigrationCaseSignatures(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v5.db")
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) < 6 || migs[5].Version != 6 {
		t.Fatalf("migration 6 missing: %d migrations", len(migs))
	}
	db := oldArchive(t, path, migs[:5])
	snap := metrics.Snapshot{At: time.Unix(5, 0).UTC(), Scope: metrics.Scope{Model: "m"}, Current: metrics.Values{metrics.TTFT: 900}}
	blob, err := packSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	seedLabelledIncident(t, db, 5000000000)
	if _, err := db.ExecContext(ctx, `INSERT INTO incident_evidence (incident_id, snapshot, windows) VALUES (1, ?, x'')`, blob); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openUpgraded(t, path, migs)
	defer s.Close()
	each := func() []ReviewedCase { return reviewedCases(t, s) }
	got := each()
	if len(got) != 1 || got[0].IncidentID != 1 || got[0].Cause != "none" || len(got[0].Signature) != 0 || !got[0].At.Equal(time.Unix(5, 0)) {
		t.Fatalf("reviewed cases of the upgraded archive: %+v", got)
	}
	snaps, _, err := s.CaseSnapshots(ctx, []int64{1})
	if err != nil || snaps[1].Current[metrics.TTFT] != 900 {
		t.Fatalf("snapshot of the upgraded archive: %+v, %v", snaps, err)
	}
	if n, err := s.PutCaseSignatures(ctx, []CaseSignature{{IncidentID: 1, Version: 1, Verdict: VerdictWrong, Cause: "none", Signature: []byte{1, 2, 3, 4}}}); err != nil || n != 1 {
		t.Fatalf("put: %d, %v", n, err)
	}
	if got := each(); len(got) != 1 || string(got[0].Signature) != "\x01\x02\x03\x04" {
		t.Errorf("after put: %+v", got)
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM incidents WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.w.QueryRowContext(ctx, `SELECT count(*) FROM case_signatures`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d signature rows after deleting the incident (%v), want 0", n, err)
	}
}

// seedLabelledIncident writes, in an old schema, incident 1 opened at
// openedAt with diagnosis 7 (queue_backlog) and label 3 correcting it to
// none, as the migrations under test find an archive.
func seedLabelledIncident(t *testing.T, db *sql.DB, openedAt int64) {
	t.Helper()
	for _, q := range []string{
		`INSERT INTO causes (id, title, builtin, created_at) VALUES ('queue_backlog', 'Queue backlog', 1, 0), ('none', 'No anomaly', 1, 0)`,
		fmt.Sprintf(`INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end) VALUES (1, 't', 'm', 'manual', %d, 0, 10)`, openedAt),
		`INSERT INTO diagnoses (id, incident_id, engine_version, created_at, root_cause, confidence, body) VALUES (7, 1, 'rules-0', 5, 'queue_backlog', 0.5, '{}')`,
		`INSERT INTO labels (id, incident_id, diagnosis_id, verdict, true_cause, labeled_by, created_at) VALUES (3, 1, 7, 'wrong', 'none', 'ana', 6)`,
		`UPDATE incidents SET diagnosis_id = 7, root_cause = 'queue_backlog', label_id = 3, verdict = 'wrong', true_cause = 'none', cause = 'none' WHERE id = 1`,
	} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// oldArchive creates the SQLite file at path with only the given
// migrations applied, as an older Casebook left it.
func oldArchive(t *testing.T, path string, migs []Migration) *sql.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on&_journal_mode=WAL&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{w: db}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migs {
		if err := old.apply(ctx, m); err != nil {
			t.Fatalf("migration %d: %v", m.Version, err)
		}
	}
	return db
}

// openUpgraded opens the archive at path with the current code and checks
// it reached the last migration.
func openUpgraded(t *testing.T, path string, migs []Migration) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if v, _ := s.SchemaVersion(ctx); v != migs[len(migs)-1].Version {
		t.Errorf("schema version %d after upgrade, want %d", v, migs[len(migs)-1].Version)
	}
	return s
}

// TestMigrationCaseRulesCause builds an archive with migrations 1-9
// holding a reviewed incident and its stored signature, opens it with the
// current code, and checks that migration 10 keeps the signature with an
// unknown rules' cause, and that a signature stored afterwards carries
// the rules' cause it was given.
func TestMigrationCaseRulesCause(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v9.db")
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) < 10 || migs[9].Version != 10 {
		t.Fatalf("migration 10 missing: %d migrations", len(migs))
	}
	db := oldArchive(t, path, migs[:9])
	seedLabelledIncident(t, db, 5000000000)
	if _, err := db.ExecContext(ctx, `INSERT INTO case_signatures (incident_id, version, verdict, cause, signature) VALUES (1, 1, 'wrong', 'none', x'01020304')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openUpgraded(t, path, migs)
	defer s.Close()
	each := func() []ReviewedCase { return reviewedCases(t, s) }
	got := each()
	if len(got) != 1 || string(got[0].Signature) != "\x01\x02\x03\x04" || got[0].RulesCause != "" || got[0].Cause != "none" {
		t.Fatalf("reviewed cases of the upgraded archive: %+v, want the old signature with no rules' cause", got)
	}
	put := func(rules string) {
		t.Helper()
		if n, err := s.PutCaseSignatures(ctx, []CaseSignature{{IncidentID: 1, Version: 1, Verdict: VerdictWrong, Cause: "none", Signature: []byte{5, 6}, RulesCause: rules}}); err != nil || n != 1 {
			t.Fatalf("put: %d, %v", n, err)
		}
	}
	put("queue_backlog")
	if got := each(); len(got) != 1 || got[0].RulesCause != "queue_backlog" || string(got[0].Signature) != "\x05\x06" {
		t.Errorf("after put with the rules' cause: %+v", got)
	}
	// A rewrite without it stores unknown (NULL), not the old value.
	put("")
	var null int
	if err := s.r.QueryRowContext(ctx, `SELECT rules_cause IS NULL FROM case_signatures WHERE incident_id = 1`).Scan(&null); err != nil || null != 1 {
		t.Errorf("rules_cause IS NULL = %d (%v) after a put without one, want 1", null, err)
	}
	if got := each(); len(got) != 1 || got[0].RulesCause != "" {
		t.Errorf("after put without the rules' cause: %+v", got)
	}
}

// reviewedCases reads every reviewed case of s, copying the signatures
// the callback's buffer would otherwise reuse.
func reviewedCases(t *testing.T, s *Store) []ReviewedCase {
	t.Helper()
	var out []ReviewedCase
	if err := s.EachReviewedCase(context.Background(), 1, func(c ReviewedCase) error {
		c.Signature = append([]byte(nil), c.Signature...)
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
