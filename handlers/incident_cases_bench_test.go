package handlers_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// loadBenchCases is the knowledge-base size of the start-up bar (issue 5):
// loading it must take under 2 s.
const loadBenchCases = 100_000

// seedReviewed fills the archive at path with n reviewed incidents and
// their stored signatures. The incident and label rows are inserted with
// plain SQL in one transaction (the archive's own write path syncs every
// incident, which would take minutes); the signatures go through
// PutCaseSignatures, the path labels take. It returns the file's growth
// from storing the signatures.
func seedReviewed(b *testing.B, st *store.Store, path string, n int) int64 {
	b.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on&_journal_mode=WAL&_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	causes := []string{metrics.CauseKVCacheEviction, metrics.CauseQueueBacklog, metrics.CauseGPUThrottling,
		metrics.CausePrefixCacheMiss, metrics.CauseMemoryBandwidthBound, metrics.CauseNone}
	r := rand.New(rand.NewPCG(5, 100))
	type row struct {
		verdict store.Verdict
		cause   string
	}
	rows := make([]row, n)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end,
		root_cause, verdict, true_cause, cause) VALUES (?, 'seeded', 'llama-8b', 'detector', ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	at := caseAt.UnixNano()
	for i := range rows {
		diagnosed := causes[r.IntN(len(causes))]
		rows[i] = row{store.VerdictCorrect, diagnosed}
		if i%4 == 0 {
			rows[i] = row{store.VerdictWrong, causes[(r.IntN(len(causes)-1)+1+indexOf(causes, diagnosed))%len(causes)]}
		}
		t := at + int64(i)*int64(5*60e9)
		if _, err := ins.ExecContext(ctx, i+1, t, t-3600e9, t+900e9, diagnosed, string(rows[i].verdict), rows[i].cause, rows[i].cause); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO labels (incident_id, diagnosed_cause, engine_version, verdict, true_cause, labeled_by, created_at)
		SELECT id, root_cause, 'seed', verdict, true_cause, 'seed', opened_at FROM incidents`); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE incidents SET label_id = (SELECT l.id FROM labels l WHERE l.incident_id = incidents.id)`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	before := fileSize(b, db, path)
	// Signatures: those of a few hundred simulated faults, each case
	// jittered, so the codes spread like an archive's.
	protos := make([]diagnose.Signature, 300)
	for i := range protos {
		protos[i] = diagnose.NewSignature(caseSnapshot(i))
	}
	sigs := make([]store.CaseSignature, 0, n)
	for i, rw := range rows {
		sig := protos[r.IntN(len(protos))]
		for f := range sig {
			sig[f] = max(-1, min(1, sig[f]+float32(0.05*r.NormFloat64())))
		}
		blob, _ := sig.MarshalBinary()
		sigs = append(sigs, store.CaseSignature{IncidentID: int64(i + 1), Version: diagnose.SignatureVersion, Verdict: rw.verdict, Cause: rw.cause, Signature: blob})
	}
	if k, err := st.PutCaseSignatures(ctx, sigs); err != nil || k != n {
		b.Fatalf("store signatures: %d of %d, %v", k, n, err)
	}
	return fileSize(b, db, path) - before
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

// fileSize checkpoints the write-ahead log into the database file and
// returns the file's size.
func fileSize(b *testing.B, db *sql.DB, path string) int64 {
	b.Helper()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// BenchmarkLoadCases100k loads a knowledge base of 100,000 reviewed
// incidents with stored signatures from a SQLite archive into a real
// engine, as the console does at start. Bar: under 2 s (issue 5). It
// reports the time per load, the engine's heap per case, the archive
// file per case (incident, label and signature rows together) and the
// signatures' own share of the file.
//
//	go test -tags sqlite_fts5 -run '^$' -bench LoadCases100k -benchtime 3x ./handlers/
func BenchmarkLoadCases100k(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "casebook.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	sigDisk := seedReviewed(b, st, path, loadBenchCases)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	a := &countingArchive{Store: st}
	load := func() *diagnose.Engine {
		e := diagnose.New(diagnose.Options{})
		svc := incident.New(incident.Options{Archive: a, Capture: sharedTel(), Diagnoser: e, Learner: e})
		n, err := svc.LoadCases(ctx)
		if err != nil || n != loadBenchCases {
			b.Fatalf("LoadCases: %d cases, %v", n, err)
		}
		return e
	}
	for b.Loop() {
		load()
	}
	if a.snapshots != 0 {
		b.Fatalf("the loads signed %d snapshots: the benchmark timed the backfill", a.snapshots)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/load")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := load()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/loadBenchCases, "mem-B/case")
	runtime.KeepAlive(e)
	b.ReportMetric(float64(fi.Size())/loadBenchCases, "disk-B/case")
	b.ReportMetric(float64(sigDisk)/loadBenchCases, "sig-disk-B/case")
}
