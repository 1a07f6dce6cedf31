package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

// caseAt is the time of the first test case; each next one is an hour later.
var caseAt = time.Date(2026, 10, 5, 8, 0, 0, 0, time.UTC)

// caseSnapshot is a snapshot of an 8B model with an hour of noisy healthy
// history and, now, one of three faults at a strength set by seed.
func caseSnapshot(seed int) metrics.Snapshot {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	base := metrics.Values{
		metrics.E2E: 2560, metrics.TTFT: 180, metrics.TPOT: 18, metrics.QueueTime: 10, metrics.PrefillTime: 120,
		metrics.ThroughputRPS: 12, metrics.RunningSeqs: 30, metrics.QueueDepth: 0.5, metrics.SMUtil: 0.72,
		metrics.KVCacheUsage: 0.45, metrics.KVCacheHitRate: 0.55, metrics.SMClock: 1980, metrics.GPUTemp: 65,
		metrics.ErrorRate: 0.002, metrics.PreemptionRate: 0.01,
	}
	faults := []metrics.Values{
		{metrics.KVCacheUsage: 0.99, metrics.KVCacheHitRate: 0.2, metrics.TTFT: 900, metrics.PreemptionRate: 3},
		{metrics.QueueDepth: 150, metrics.QueueTime: 2000, metrics.E2E: 4600, metrics.SMUtil: 0.95},
		{metrics.SMClock: 1200, metrics.GPUTemp: 89, metrics.TPOT: 30, metrics.E2E: 4000},
	}
	at := caseAt.Add(time.Duration(seed) * time.Hour)
	s := metrics.Snapshot{At: at, Scope: metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"}, Current: metrics.Values{}}
	for p := 0; p < 60; p++ {
		v := metrics.Values{}
		for id, x := range base {
			v[id] = x * (1 + 0.03*r.NormFloat64())
		}
		s.History = append(s.History, metrics.Point{At: at.Add(time.Duration(p-65) * time.Minute), Values: v})
	}
	strength := 0.3 + 0.7*r.Float64()
	for id, x := range base {
		s.Current[id] = x * (1 + 0.03*r.NormFloat64())
	}
	for id, x := range faults[seed%len(faults)] {
		s.Current[id] = base[id] + strength*(x-base[id])
	}
	return s
}

// caseConsole is the console with a real engine over archive.
type caseConsole struct {
	*fixture
	engine *diagnose.Engine
}

func newCaseConsole(t *testing.T, archive caseArchive) *caseConsole {
	t.Helper()
	tel := sharedTel()
	engine := diagnose.New(diagnose.Options{})
	f := newFixture(t, tel, func(o *web.Options) {
		o.Diagnoser = engine
		inc, svc := archiveHandlers(handlers.IncidentDeps{Now: o.Now}, archive, tel, engine)
		o.Incidents, o.IncidentOpener = inc, svc
	})
	return &caseConsole{fixture: f, engine: engine}
}

// openCases opens n incidents with caseSnapshot(0..n-1), each diagnosed
// as a queue backlog, and returns them.
func openCases(t *testing.T, st *store.Store, n int) []store.Incident {
	t.Helper()
	var out []store.Incident
	for i := 0; i < n; i++ {
		s := caseSnapshot(i)
		inc, _, err := st.OpenIncident(context.Background(), store.NewIncident{
			Title: fmt.Sprintf("case %d", i), Scope: s.Scope, Trigger: store.TriggerManual, OpenedAt: s.At,
			WindowStart: s.At.Add(-time.Hour), WindowEnd: s.At, Snapshot: s,
		}, store.DiagnosisRecord{EngineVersion: "test", CreatedAt: s.At, RootCause: metrics.CauseQueueBacklog, Body: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, inc)
	}
	return out
}

// trueCause is the label the tests give case i.
func trueCause(i int) (store.Verdict, string) {
	switch i % 3 {
	case 0:
		return store.VerdictWrong, metrics.CauseKVCacheEviction
	case 1:
		return store.VerdictCorrect, metrics.CauseQueueBacklog
	}
	return store.VerdictWrong, metrics.CauseGPUThrottling
}

// storedSignatures reads the archive's reviewed cases with their stored
// signatures decoded (absent when none is stored for the current label).
func storedSignatures(t *testing.T, st *store.Store) (map[int64]diagnose.Signature, []store.ReviewedCase) {
	t.Helper()
	sigs := map[int64]diagnose.Signature{}
	var all []store.ReviewedCase
	err := st.EachReviewedCase(context.Background(), diagnose.SignatureVersion, func(c store.ReviewedCase) error {
		if c.Signature != nil {
			var sig diagnose.Signature
			if err := sig.UnmarshalBinary(c.Signature); err != nil {
				return fmt.Errorf("incident %d: %w", c.IncidentID, err)
			}
			sigs[c.IncidentID] = sig
		}
		c.Signature = nil
		all = append(all, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sigs, all
}

// fromSnapshots is an engine that learned the archive's reviewed cases by
// signing their snapshots and asking the rules for their cause, oldest
// first: the knowledge base LoadCases must reproduce.
func fromSnapshots(t *testing.T, st *store.Store) *diagnose.Engine {
	t.Helper()
	_, reviewed := storedSignatures(t, st)
	e := diagnose.New(diagnose.Options{})
	var cases []diagnose.LabelledCase
	for _, c := range reviewed {
		inc, err := st.Incident(context.Background(), c.IncidentID)
		if err != nil {
			t.Fatal(err)
		}
		review := diagnose.Confirmed
		if inc.Verdict == store.VerdictWrong {
			review = diagnose.Corrected
		}
		cases = append(cases, diagnose.LabelledCase{ID: strconv.FormatInt(inc.ID, 10), Snapshot: inc.Snapshot, Cause: inc.TrueCause, Review: review, At: inc.OpenedAt,
			RulesCause: e.RulesCause(inc.Snapshot)})
	}
	if err := e.Learn(cases); err != nil {
		t.Fatal(err)
	}
	return e
}

// loadFresh is a fresh console's engine after LoadCases on archive.
func loadFresh(t *testing.T, archive caseArchive, want int) *diagnose.Engine {
	t.Helper()
	e := diagnose.New(diagnose.Options{})
	svc := incident.New(incident.Options{Archive: archive, Capture: sharedTel(), Diagnoser: e, Learner: e})
	n, err := svc.LoadCases(context.Background())
	if err != nil || n != want || e.Cases().Len() != want {
		t.Fatalf("LoadCases: %d cases, err %v, engine holds %d; want %d", n, err, e.Cases().Len(), want)
	}
	return e
}

// sameMatches checks that two engines give every test query the same
// nearest cases with the same similarities, and the same diagnosis.
func sameMatches(t *testing.T, got, want *diagnose.Engine) {
	t.Helper()
	for q := 100; q < 106; q++ {
		s := caseSnapshot(q)
		g, w := got.Cases().Nearest(diagnose.NewSignature(s), 5), want.Cases().Nearest(diagnose.NewSignature(s), 5)
		if len(w) == 0 || !reflect.DeepEqual(g, w) {
			t.Errorf("query %d: nearest cases\n got %+v\nwant %+v", q, g, w)
		}
		if g, w := got.Diagnose(s), want.Diagnose(s); !reflect.DeepEqual(g, w) {
			t.Errorf("query %d: diagnosis from stored signatures differs:\n got %+v\nwant %+v", q, g, w)
		}
	}
}

// label posts a review from the incident page's form.
func (c *caseConsole) label(t *testing.T, id int64, v store.Verdict, cause string) {
	t.Helper()
	body, hdr := form("verdict", string(v), "true_cause", cause, "by", "ana")
	if r := c.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", id), body, hdr); r.status != http.StatusSeeOther {
		t.Fatalf("label incident %d: %d %.300s", id, r.status, r.body)
	}
}

// TestLabelStoresCaseSignature: labelling an incident stores its
// signature, which decodes to the signature of its snapshot; a console
// loading the archive matches exactly as one that signs every snapshot;
// a relabel rewrites the row.
func TestLabelStoresCaseSignature(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := newCaseConsole(t, st)
	incs := openCases(t, st, 12)
	for i, inc := range incs {
		v, cause := trueCause(i)
		c.label(t, inc.ID, v, cause)
	}
	if n := c.engine.Cases().Len(); n != len(incs) {
		t.Errorf("the console learned %d cases from %d labels", n, len(incs))
	}
	sigs, reviewed := storedSignatures(t, st)
	if len(reviewed) != len(incs) || len(sigs) != len(incs) {
		t.Fatalf("%d reviewed incidents, %d stored signatures; want %d of each", len(reviewed), len(sigs), len(incs))
	}
	for _, inc := range incs {
		if sigs[inc.ID] != diagnose.NewSignature(inc.Snapshot) {
			t.Errorf("incident %d: the stored signature is not its snapshot's", inc.ID)
		}
	}
	rules := diagnose.New(diagnose.Options{})
	for i, rc := range reviewed {
		inc, err := st.Incident(context.Background(), rc.IncidentID)
		if err != nil {
			t.Fatal(err)
		}
		if want := rules.RulesCause(inc.Snapshot); rc.RulesCause != want || want == "" {
			t.Errorf("reviewed case %d (incident %d): stored rules' cause %q, want %q", i, rc.IncidentID, rc.RulesCause, want)
		}
	}
	sameMatches(t, loadFresh(t, st, len(incs)), fromSnapshots(t, st))

	// Relabel the first case: its row now carries the new label.
	c.label(t, incs[0].ID, store.VerdictWrong, metrics.CauseNone)
	sigs, reviewed = storedSignatures(t, st)
	if _, ok := sigs[incs[0].ID]; !ok || reviewed[0].IncidentID != incs[0].ID || reviewed[0].Cause != metrics.CauseNone {
		t.Fatalf("after relabel: stored %v, first reviewed case %+v; want a signature for cause none", ok, reviewed[0])
	}
	fresh := loadFresh(t, st, len(incs))
	if nb := fresh.Cases().Nearest(diagnose.NewSignature(incs[0].Snapshot), 1); len(nb) != 1 || nb[0].RootCause != metrics.CauseNone {
		t.Errorf("after relabel the case loads as %+v, want cause none", nb)
	}
	sameMatches(t, fresh, fromSnapshots(t, st))
}

// countingArchive counts the snapshots read for signing and can refuse to
// store signatures.
type countingArchive struct {
	*store.Store
	snapshots int
	failPut   bool
}

func (a *countingArchive) CaseSnapshots(ctx context.Context, ids []int64) (map[int64]metrics.Snapshot, []int64, error) {
	a.snapshots += len(ids)
	return a.Store.CaseSnapshots(ctx, ids)
}

func (a *countingArchive) PutCaseSignatures(ctx context.Context, sigs []store.CaseSignature) (int, error) {
	if a.failPut {
		return 0, errors.New("disk full")
	}
	return a.Store.PutCaseSignatures(ctx, sigs)
}

// TestLoadCasesBackfills: an archive whose reviewed incidents have no
// usable stored signature (labelled before signatures were stored, stored
// under another format version, or unreadable) is signed from the
// snapshots at the first load, and the signatures are stored so the next
// load reads no snapshot.
func TestLoadCasesBackfills(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	incs := openCases(t, st, 300) // more than one backfill batch
	for i, inc := range incs {
		v, cause := trueCause(i)
		if _, err := st.AddLabel(ctx, store.NewLabel{IncidentID: inc.ID, Verdict: v, TrueCause: cause, By: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	// Two rows a start cannot use: another format version, and bytes
	// that do not decode.
	v0, c0 := trueCause(0)
	v1, c1 := trueCause(1)
	if n, err := st.PutCaseSignatures(ctx, []store.CaseSignature{
		{IncidentID: incs[0].ID, Version: diagnose.SignatureVersion + 1, Verdict: v0, Cause: c0, Signature: make([]byte, diagnose.SignatureBytes)},
		{IncidentID: incs[1].ID, Version: diagnose.SignatureVersion, Verdict: v1, Cause: c1, Signature: []byte("not a signature")},
	}); err != nil || n != 2 {
		t.Fatalf("seed rows: %d, %v", n, err)
	}

	a := &countingArchive{Store: st}
	first := loadFresh(t, a, len(incs))
	if a.snapshots != len(incs) {
		t.Errorf("the first load signed %d snapshots, want all %d", a.snapshots, len(incs))
	}
	sigs, _ := storedSignatures(t, st)
	if len(sigs) != len(incs) {
		t.Fatalf("%d signatures stored by the backfill, want %d", len(sigs), len(incs))
	}
	_, reviewed := storedSignatures(t, st)
	rules := diagnose.New(diagnose.Options{})
	byID := map[int64]string{}
	for _, rc := range reviewed {
		byID[rc.IncidentID] = rc.RulesCause
	}
	for _, inc := range incs {
		if sigs[inc.ID] != diagnose.NewSignature(inc.Snapshot) {
			t.Errorf("incident %d: backfilled signature is not its snapshot's", inc.ID)
		}
		if got, want := byID[inc.ID], rules.RulesCause(inc.Snapshot); got != want {
			t.Errorf("incident %d: backfilled rules' cause %q, want %q", inc.ID, got, want)
		}
	}
	want := fromSnapshots(t, st)
	sameMatches(t, first, want)

	a.snapshots = 0
	sameMatches(t, loadFresh(t, a, len(incs)), want)
	if a.snapshots != 0 {
		t.Errorf("the second load read %d snapshots, want none", a.snapshots)
	}
}

// TestLabelSurvivesSignatureFailure: when the signature cannot be stored
// the label is kept and learned, and the next start signs it.
func TestLabelSurvivesSignatureFailure(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := &countingArchive{Store: st, failPut: true}
	c := newCaseConsole(t, a)
	inc := openCases(t, st, 1)[0]
	c.label(t, inc.ID, store.VerdictWrong, metrics.CauseGPUThrottling)
	if got, err := st.Incident(ctx, inc.ID); err != nil || got.Verdict != store.VerdictWrong || got.TrueCause != metrics.CauseGPUThrottling {
		t.Fatalf("label lost: %+v, %v", got.Summary, err)
	}
	if n := c.engine.Cases().Len(); n != 1 {
		t.Errorf("the console learned %d cases, want 1", n)
	}
	if sigs, _ := storedSignatures(t, st); len(sigs) != 0 {
		t.Fatalf("a signature was stored through a failing archive")
	}
	a.failPut, a.snapshots = false, 0
	loadFresh(t, a, 1)
	if sigs, _ := storedSignatures(t, st); a.snapshots != 1 || sigs[inc.ID] != diagnose.NewSignature(inc.Snapshot) {
		t.Errorf("the next start read %d snapshots and stored %v", a.snapshots, sigs)
	}
}

// caseArchive is an archive both the pages and the incident service use.
type caseArchive interface {
	handlers.Archive
	incident.Archive
}
