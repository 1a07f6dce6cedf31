package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// openTest opens a fresh archive in a per-test directory.
func openTest(tb testing.TB) *store.Store {
	tb.Helper()
	s, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "casebook.db"))
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return s
}

var t0 = time.Date(2026, 9, 1, 10, 0, 0, 123456789, time.UTC)

// newIncident builds a plausible incident opened at t0+offset.
func newIncident(title string, offset time.Duration, alert *store.Alert) store.NewIncident {
	at := t0.Add(offset)
	trigger := store.TriggerManual
	if alert != nil {
		trigger = store.TriggerAlertmanager
	}
	return store.NewIncident{
		Title:         title,
		Scope:         metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"},
		Trigger:       trigger,
		TriggerDetail: json.RawMessage(`{"alertname":"VLLMHighTTFT"}`),
		Alert:         alert,
		OpenedAt:      at,
		WindowStart:   at.Add(-time.Hour),
		WindowEnd:     at.Add(15 * time.Minute),
		Severity:      "critical",
		Snapshot: metrics.Snapshot{
			At:      at,
			Scope:   metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"},
			Current: metrics.Values{metrics.TTFT: 950, metrics.KVCacheHitRate: 0.41},
			History: []metrics.Point{{At: at.Add(-65 * time.Minute), Values: metrics.Values{metrics.TTFT: 210}}},
		},
		Windows: []metrics.Series{{
			Metric:  metrics.TTFT,
			Scope:   metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"},
			Samples: []metrics.Sample{{T: at.Add(-time.Minute), V: 300}, {T: at, V: 950}},
		}},
	}
}

func newDiagnosis(cause string, version string) store.DiagnosisRecord {
	body := fmt.Sprintf(`{"root_cause":%q,"title":"KV-cache eviction storm","confidence":0.82,"severity":"critical",`+
		`"evidence":[{"metric":"kv_cache_hit_rate","value":0.41,"baseline_mean":0.9,"z":-7.5,"text":"prefix hit rate fell from 0.90 to 0.41"}],"engine_version":%q}`, cause, version)
	return store.DiagnosisRecord{
		EngineVersion: version,
		CreatedAt:     t0,
		RootCause:     cause,
		Confidence:    0.82,
		Severity:      "critical",
		Body:          json.RawMessage(body),
	}
}

func mustOpen(tb testing.TB, s *store.Store, in store.NewIncident, d store.DiagnosisRecord) store.Incident {
	tb.Helper()
	inc, _, err := s.OpenIncident(context.Background(), in, d)
	if err != nil {
		tb.Fatalf("open incident %q: %v", in.Title, err)
	}
	return inc
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "empty.db")
	migs, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i := 0; i < 2; i++ { // the second open must find nothing to do
		s, err := store.Open(ctx, path)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v != migs[len(migs)-1].Version {
			t.Errorf("open %d: schema version %d, want %d", i, v, migs[len(migs)-1].Version)
		}
		causes, err := s.Causes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(causes) != len(metrics.Causes) {
			t.Errorf("open %d: %d causes, want the %d built-in", i, len(causes), len(metrics.Causes))
		}
		if err := s.Ping(ctx); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIncidentRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	in := newIncident("TTFT p99 above 2 s on llama-8b", 0, &store.Alert{Fingerprint: "a1b2c3d4e5f60718", StartsAt: t0, State: store.AlertFiring})
	inc, created, err := s.OpenIncident(ctx, in, newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	if err != nil || !created {
		t.Fatalf("open: created=%v err=%v", created, err)
	}
	got, err := s.Incident(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != in.Title || got.Scope != in.Scope || !got.OpenedAt.Equal(in.OpenedAt) || !got.WindowStart.Equal(in.WindowStart) {
		t.Errorf("incident = %+v, want the fields of %+v", got.Summary, in)
	}
	if got.Alert == nil || got.Alert.Fingerprint != "a1b2c3d4e5f60718" || !got.Alert.StartsAt.Equal(t0) || got.Alert.State != store.AlertFiring {
		t.Errorf("alert = %+v", got.Alert)
	}
	if got.RootCause != metrics.CauseKVCacheEviction || got.Verdict != store.VerdictNone || got.DiagnosisID == 0 {
		t.Errorf("current state = %+v", got.Summary)
	}
	if got.Snapshot.Current[metrics.TTFT] != 950 || len(got.Snapshot.History) != 1 {
		t.Errorf("snapshot = %+v", got.Snapshot)
	}
	if len(got.Windows) != 1 || len(got.Windows[0].Samples) != 2 || got.Windows[0].Samples[1].V != 950 {
		t.Errorf("windows = %+v", got.Windows)
	}

	longer := append([]metrics.Series(nil), in.Windows...)
	longer[0].Samples = append(longer[0].Samples, metrics.Sample{T: t0.Add(time.Minute), V: 990})
	if err := s.ReplaceWindows(ctx, inc.ID, longer); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Incident(ctx, inc.ID); len(got.Windows[0].Samples) != 3 || got.Snapshot.Current[metrics.TTFT] != 950 {
		t.Errorf("after ReplaceWindows: %d samples, snapshot %v", len(got.Windows[0].Samples), got.Snapshot.Current)
	}
	if err := s.ReplaceWindows(ctx, 4242, longer); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("replace windows of missing incident: %v, want ErrNotFound", err)
	}

	id, err := s.ResolveAlert(ctx, "a1b2c3d4e5f60718", t0, t0.Add(20*time.Minute))
	if err != nil || id != inc.ID {
		t.Fatalf("resolve: id=%d err=%v", id, err)
	}
	got, err = s.Incident(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Alert.State != store.AlertResolved || !got.Alert.ResolvedAt.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("after resolve alert = %+v", got.Alert)
	}
	if _, err := s.ResolveAlert(ctx, "ffffffffffffffff", t0, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resolve unknown alert: %v, want ErrNotFound", err)
	}
	if _, err := s.Incident(ctx, 999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing incident: %v, want ErrNotFound", err)
	}
}

func TestOpenIncidentRejects(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	good := newIncident("fine", 0, nil)
	tests := []struct {
		name   string
		mutate func(*store.NewIncident, *store.DiagnosisRecord)
	}{
		{"empty title", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.Title = " " }},
		{"no model", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.Scope.Model = "" }},
		{"instance not UTF-8", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.Scope.Instance = "pod-\xff" }},
		{"bad trigger", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.Trigger = "pager" }},
		{"alertmanager without alert", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.Trigger = store.TriggerAlertmanager }},
		{"window backwards", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.WindowEnd = in.WindowStart.Add(-time.Second) }},
		{"detail not JSON", func(in *store.NewIncident, _ *store.DiagnosisRecord) { in.TriggerDetail = json.RawMessage(`{`) }},
		{"confidence above 1", func(_ *store.NewIncident, d *store.DiagnosisRecord) { d.Confidence = 1.5 }},
		{"diagnosis body not JSON", func(_ *store.NewIncident, d *store.DiagnosisRecord) { d.Body = json.RawMessage(`nope`) }},
		{"no engine version", func(_ *store.NewIncident, d *store.DiagnosisRecord) { d.EngineVersion = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, d := good, newDiagnosis(metrics.CauseQueueBacklog, "v1")
			tc.mutate(&in, &d)
			if _, _, err := s.OpenIncident(ctx, in, d); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
	page, err := s.List(ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Errorf("rejected incidents were stored: %d rows", len(page.Items))
	}
}

func TestOpenIncidentIdempotentConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	alert := &store.Alert{Fingerprint: "0123456789abcdef", StartsAt: t0, State: store.AlertFiring}
	const n = 16
	type result struct {
		id      int64
		created bool
		err     error
	}
	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			inc, created, err := s.OpenIncident(ctx, newIncident("queue backlog", 0, alert), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
			results <- result{inc.ID, created, err}
		}()
	}
	ids := map[int64]bool{}
	createdCount := 0
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("open: %v", r.err)
		}
		ids[r.id] = true
		if r.created {
			createdCount++
		}
	}
	if len(ids) != 1 || createdCount != 1 {
		t.Errorf("%d goroutines made %d distinct incidents, %d reported created; want 1 and 1", n, len(ids), createdCount)
	}
	for id := range ids {
		ds, err := s.Diagnoses(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 {
			t.Errorf("incident has %d diagnoses, want 1", len(ds))
		}
	}
	// The same fingerprint with another startsAt is a new firing.
	inc, created, err := s.OpenIncident(ctx, newIncident("queue backlog again", time.Hour,
		&store.Alert{Fingerprint: "0123456789abcdef", StartsAt: t0.Add(time.Hour), State: store.AlertFiring}), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	if err != nil || !created || ids[inc.ID] {
		t.Errorf("second firing: id=%d created=%v err=%v, want a new incident", inc.ID, created, err)
	}
}

func TestRediagnosisKeepsHistory(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("slow", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	d2, err := s.AddDiagnosis(ctx, inc.ID, newDiagnosis(metrics.CausePrefixCacheMiss, "v2"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Page(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Diagnoses) != 2 || p.Diagnoses[0].ID != d2.ID || p.Diagnoses[1].RootCause != metrics.CauseKVCacheEviction {
		t.Errorf("diagnoses = %+v, want v2 then v1", p.Diagnoses)
	}
	if p.Incident.RootCause != metrics.CausePrefixCacheMiss || p.Incident.DiagnosisID != d2.ID {
		t.Errorf("current diagnosis = %s/%d, want %s/%d", p.Incident.RootCause, p.Incident.DiagnosisID, metrics.CausePrefixCacheMiss, d2.ID)
	}
	if _, err := s.AddDiagnosis(ctx, 12345, newDiagnosis(metrics.CauseNone, "v2")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("diagnosis of missing incident: %v, want ErrNotFound", err)
	}
}

func TestLabelHistoryAppends(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("slow", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	steps := []struct {
		name      string
		label     store.NewLabel
		wantCause string
		wantErr   error
	}{
		{"correct defaults to diagnosed", store.NewLabel{Verdict: store.VerdictCorrect, By: "ana"}, metrics.CauseKVCacheEviction, nil},
		{"wrong with taxonomy cause", store.NewLabel{Verdict: store.VerdictWrong, TrueCause: metrics.CausePrefixCacheMiss, By: "ben", Note: "hit rate fell, KV not full"}, metrics.CausePrefixCacheMiss, nil},
		{"wrong with new cause", store.NewLabel{Verdict: store.VerdictWrong, NewCause: "NCCL all-reduce stall", By: "cy"}, "custom_nccl_all_reduce_stall", nil},
		{"wrong without cause", store.NewLabel{Verdict: store.VerdictWrong, By: "cy"}, "", store.ErrInvalid},
		{"unknown cause", store.NewLabel{Verdict: store.VerdictWrong, TrueCause: "made_up", By: "cy"}, "", store.ErrInvalid},
		{"bad verdict", store.NewLabel{Verdict: "maybe", By: "cy"}, "", store.ErrInvalid},
		{"no reviewer", store.NewLabel{Verdict: store.VerdictCorrect}, "", store.ErrInvalid},
		{"correct with other cause", store.NewLabel{Verdict: store.VerdictCorrect, TrueCause: metrics.CauseNone, By: "cy"}, "", store.ErrInvalid},
	}
	var want []string
	for i, st := range steps {
		st.label.IncidentID = inc.ID
		st.label.At = t0.Add(time.Duration(i) * time.Minute)
		l, err := s.AddLabel(ctx, st.label)
		if st.wantErr != nil {
			if !errors.Is(err, st.wantErr) {
				t.Errorf("%s: err = %v, want %v", st.name, err, st.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if l.TrueCause != st.wantCause {
			t.Errorf("%s: true cause %q, want %q", st.name, l.TrueCause, st.wantCause)
		}
		want = append([]string{st.wantCause}, want...)
	}
	labels, err := s.Labels(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range labels {
		got = append(got, l.TrueCause)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("label history %v, want %v (newest first)", got, want)
	}
	cur, err := s.Incident(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Verdict != store.VerdictWrong || cur.TrueCause != "custom_nccl_all_reduce_stall" {
		t.Errorf("current label %s/%s", cur.Verdict, cur.TrueCause)
	}
	c, err := s.Cause(ctx, "custom_nccl_all_reduce_stall")
	if err != nil || c.Title != "NCCL all-reduce stall" || c.Builtin || c.CreatedBy != "cy" {
		t.Errorf("created cause = %+v, %v", c, err)
	}
	if _, err := s.CreateCause(ctx, "NCCL  all-reduce stall!", "", "dee"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate cause: %v, want ErrConflict", err)
	}
	if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: 4242, Verdict: store.VerdictCorrect, By: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("label of missing incident: %v, want ErrNotFound", err)
	}
}

func TestSearchFindsNote(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	a := mustOpen(t, s, newIncident("TTFT spike on llama-8b", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	b := mustOpen(t, s, newIncident("Throughput drop", time.Minute, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	if _, err := s.AddNote(ctx, store.NewNote{IncidentID: b.ID, Author: "ana", Body: "Tokenizer thread pool saturated after the deploy"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []int64
	}{
		{"tokenizer", []int64{b.ID}},
		{"tokeni", []int64{b.ID}},                // prefix
		{"TTFT spike", []int64{a.ID}},            // title, all words
		{"prefix hit rate", []int64{b.ID, a.ID}}, // evidence text of both diagnoses
		{"tokenizer spike", nil},                 // all words must occur in one text
		{`"); DROP TABLE incidents;--`, nil},     // inert
		{`NEAR(ttft spike) OR body:x*`, nil},     // operators are plain words
		{"!!!", nil},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			page, err := s.List(ctx, store.ListFilter{Query: tc.query})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, it := range page.Items {
				got = append(got, it.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("search %q = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

func TestHostileStringsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	hostile := []string{
		`<script>alert("x")</script>`,
		`'); DROP TABLE incidents;--`,
		`" OR 1=1 --`,
		"null byte\x01 and emoji 🔥 and RTL \u202e",
		`%_\' LIKE wildcards`,
	}
	for i, h := range hostile {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			in := newIncident(h, time.Duration(i)*time.Minute, &store.Alert{Fingerprint: h, StartsAt: t0, State: store.AlertFiring})
			in.Scope = metrics.Scope{Model: h, Instance: h}
			inc := mustOpen(t, s, in, newDiagnosis(metrics.CauseUnknown, "v1"))
			if _, err := s.AddNote(ctx, store.NewNote{IncidentID: inc.ID, Author: h, Body: h}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: inc.ID, Verdict: store.VerdictWrong, TrueCause: metrics.CauseNone, By: h, Note: h}); err != nil {
				t.Fatal(err)
			}
			p, err := s.Page(ctx, inc.ID)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{p.Incident.Title, p.Incident.Scope.Model, p.Incident.Scope.Instance, p.Incident.Alert.Fingerprint,
				p.Notes[0].Author, p.Notes[0].Body, p.Labels[0].By, p.Labels[0].Note}
			for j, g := range got {
				if g != h {
					t.Errorf("field %d = %q, want %q", j, g, h)
				}
			}
			byModel, err := s.List(ctx, store.ListFilter{Model: h})
			if err != nil {
				t.Fatal(err)
			}
			if len(byModel.Items) != 1 || byModel.Items[0].ID != inc.ID {
				t.Errorf("filter by hostile model found %d incidents", len(byModel.Items))
			}
		})
	}
	all, err := s.List(ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != len(hostile) {
		t.Errorf("%d incidents after hostile input, want %d (is the table intact?)", len(all.Items), len(hostile))
	}
}

func TestNotesLimits(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("slow", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	tests := []struct {
		name    string
		note    store.NewNote
		wantErr error
	}{
		{"ok", store.NewNote{IncidentID: inc.ID, Author: "ana", Body: "checked the scheduler"}, nil},
		{"at the limit", store.NewNote{IncidentID: inc.ID, Author: "ana", Body: strings.Repeat("x", store.MaxNoteBytes)}, nil},
		{"over the limit", store.NewNote{IncidentID: inc.ID, Author: "ana", Body: strings.Repeat("x", store.MaxNoteBytes+1)}, store.ErrInvalid},
		{"empty", store.NewNote{IncidentID: inc.ID, Author: "ana", Body: "  "}, store.ErrInvalid},
		{"no author", store.NewNote{IncidentID: inc.ID, Body: "x"}, store.ErrInvalid},
		{"bad utf-8", store.NewNote{IncidentID: inc.ID, Author: "ana", Body: "\xff\xfe"}, store.ErrInvalid},
		{"missing incident", store.NewNote{IncidentID: 777, Author: "ana", Body: "x"}, store.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AddNote(ctx, tc.note)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestOpenPaths(t *testing.T) {
	tests := []struct {
		name    string
		sub     string
		wantErr bool
	}{
		{"plain", "casebook.db", false},
		{"URI characters in the path", "a dir #1 ?x=y&z/c.db", false},
		{"missing directory", "no/such/dir/c.db", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.sub)
			if !tc.wantErr {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			s, err := store.Open(context.Background(), p)
			if tc.wantErr {
				if err == nil {
					s.Close()
					t.Fatal("open succeeded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			if _, err := os.Stat(p); err != nil {
				t.Errorf("database not at %q: %v", p, err)
			}
		})
	}
	if _, err := store.Open(context.Background(), ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty path: %v, want ErrInvalid", err)
	}
}

func TestOpenIncidentGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	const alerts, copies = 25, 3
	type result struct {
		fp      string
		id      int64
		created bool
		err     error
	}
	results := make(chan result, alerts*copies)
	for i := 0; i < alerts*copies; i++ {
		go func() {
			fp := fmt.Sprintf("%016x", i%alerts)
			in := newIncident("storm "+fp, time.Duration(i%alerts)*time.Second, &store.Alert{Fingerprint: fp, StartsAt: t0, State: store.AlertFiring})
			inc, created, err := s.OpenIncident(ctx, in, newDiagnosis(metrics.CauseQueueBacklog, "v1"))
			results <- result{fp, inc.ID, created, err}
		}()
	}
	ids := map[string]int64{}
	created := map[string]int{}
	for i := 0; i < alerts*copies; i++ {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if prev, ok := ids[r.fp]; ok && prev != r.id {
			t.Errorf("alert %s got incidents %d and %d", r.fp, prev, r.id)
		}
		ids[r.fp] = r.id
		if r.created {
			created[r.fp]++
		}
	}
	for fp, n := range created {
		if n != 1 {
			t.Errorf("alert %s reported created %d times", fp, n)
		}
	}
	page, err := s.List(ctx, store.ListFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != alerts || len(created) != alerts {
		t.Errorf("%d incidents stored, %d reported created; want %d", len(page.Items), len(created), alerts)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.OpenIncident(cancelled, newIncident("late", 0, nil), newDiagnosis(metrics.CauseNone, "v1")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled open: %v, want context.Canceled", err)
	}
}

func TestBackup(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("backed up", 0, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	if _, err := s.AddNote(ctx, store.NewNote{IncidentID: inc.ID, Author: "ana", Body: "searchable after restore"}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup.db")
	if err := s.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, dst); !errors.Is(err, store.ErrConflict) {
		t.Errorf("backup over an existing file: %v, want ErrConflict", err)
	}
	restored, err := store.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	p, err := restored.Page(ctx, inc.ID)
	if err != nil || p.Incident.Title != "backed up" || len(p.Notes) != 1 || len(p.Incident.Windows) != 1 {
		t.Fatalf("restored page = %+v, %v", p, err)
	}
	found, err := restored.List(ctx, store.ListFilter{Query: "restore"})
	if err != nil || len(found.Items) != 1 {
		t.Errorf("search in the backup: %d results, %v", len(found.Items), err)
	}
}

// TestBackupFile copies an archive that is being written, without opening
// it as a Store, and refuses paths that are not a Casebook archive instead
// of creating one.
func TestBackupFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "casebook.db")
	s, err := store.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 20; i++ {
		mustOpen(t, s, newIncident(fmt.Sprintf("kept %d", i), time.Duration(i)*time.Minute, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	}
	// Writes go on while the copy is taken.
	done := make(chan error, 1)
	go func() {
		for i := 20; i < 60; i++ {
			if _, _, err := s.OpenIncident(ctx, newIncident(fmt.Sprintf("kept %d", i), time.Duration(i)*time.Minute, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	dst := filepath.Join(t.TempDir(), "copy.db")
	if err := store.BackupFile(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	copied, err := store.Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	page, err := copied.List(ctx, store.ListFilter{Limit: 100})
	if err != nil || len(page.Items) < 20 || len(page.Items) > 60 {
		t.Fatalf("copy holds %d incidents (%v), want the 20 written before and any of those written during", len(page.Items), err)
	}

	missing := filepath.Join(dir, "nope", "casebook.db")
	if err := store.BackupFile(ctx, missing, filepath.Join(t.TempDir(), "x.db")); err == nil {
		t.Error("backup of a missing archive succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup created the missing archive: %v", err)
	}
	other := filepath.Join(dir, "other.db")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.BackupFile(ctx, other, filepath.Join(t.TempDir(), "y.db")); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("backup of a file that is no archive: %v, want ErrInvalid", err)
	}
	if err := store.BackupFile(ctx, src, dst); !errors.Is(err, store.ErrConflict) {
		t.Errorf("backup over an existing file: %v, want ErrConflict", err)
	}
}
