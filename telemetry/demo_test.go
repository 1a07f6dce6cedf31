package telemetry

import (
	"context"
	"log/slog"
	"math"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/casebook/casebook/metrics"
)

// openDemo opens demo mode with a short back-fill.
func openDemo(t testing.TB, backfill time.Duration) (*Telemetry, *logCounter) {
	t.Helper()
	logs := &logCounter{}
	tel, err := open(context.Background(), Options{DataDir: t.TempDir(), Demo: newSimDemo(), Logger: slog.New(logs)}, backfill)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tel.Close(); err != nil {
			t.Error(err)
		}
	})
	return tel, logs
}

// TestDemoReplay: a replay back-fills up to its end, reads there as if it
// were now, and scrapes nothing live afterwards.
func TestDemoReplay(t *testing.T) {
	end := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	tel, err := Open(context.Background(), Options{DataDir: t.TempDir(), Demo: newSimDemo(), DemoBackfill: time.Hour, DemoUntil: end, ScrapeInterval: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	ctx := context.Background()
	scopes, err := tel.Scopes(ctx)
	if err != nil || len(scopes) == 0 {
		t.Fatalf("scopes at the replay's end: %v, %v", scopes, err)
	}
	snap, err := tel.Snapshot(ctx, scopes[0], time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !snap.At.Equal(end) || len(snap.Current) == 0 {
		t.Errorf("snapshot without a time read at %s with %d values, want the replay's end with values", snap.At, len(snap.Current))
	}
	time.Sleep(2500 * time.Millisecond) // two and a half scrape intervals
	if v := instant(t, tel.querier, `count(count_over_time(vllm:num_requests_running[1m]))`, time.Now()); !math.IsNaN(v) {
		t.Errorf("%g series scraped live after a replay, want none", v)
	}
}

func TestOpenDemo(t *testing.T) {
	tel, logs := openDemo(t, 2*time.Hour)
	ctx := context.Background()
	if n := logs.count(slog.LevelInfo, "Compactions"); n != 0 {
		t.Errorf("%d TSDB info records reached the log, want them filtered", n)
	}
	if n := logs.count(slog.LevelInfo, "demo history back-filled"); n != 1 {
		t.Errorf("%d back-fill records, want 1", n)
	}
	if simulator(tel) == nil {
		t.Fatal("demo mode has no simulator")
	}
	scopes, err := tel.Scopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	targets := simulator(tel).Targets()
	models := map[string]bool{}
	for _, tg := range targets {
		models[tg.Model] = true
	}
	if len(scopes) != len(targets)+len(models) {
		t.Fatalf("scopes = %v, want every model and instance of %d targets", scopes, len(targets))
	}
	// Back-filled and live samples of a series carry the same labels: after
	// the first live scrape there is still one series per instance.
	waitFor(t, func() bool {
		v := instant(t, tel.querier, `count(count_over_time(vllm:num_requests_running[10s]))`, time.Now())
		return v == float64(len(targets))
	})
	n := instant(t, tel.querier, `count(count_over_time(vllm:num_requests_running[3h]))`, time.Now())
	if n != float64(len(targets)) {
		t.Fatalf("%g num_requests_running series over back-fill and live data, want %d (labels differ)", n, len(targets))
	}
	// The same holds for every series of every target: none is split in
	// two by a label the back-fill and the live scrape set differently.
	// Targets are scraped independently, so on a busy machine the engine
	// targets can be live before the GPU and gateway ones: wait until every
	// target has been scraped once before comparing.
	var all, live map[string]bool
	var missing []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		now := time.Now()
		all = seriesIn(t, tel, now.Add(-3*time.Hour), now)
		live = seriesIn(t, tel, now.Add(-20*time.Second), now)
		missing = missing[:0]
		for s := range all {
			if !live[s] {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, s := range missing {
		t.Errorf("back-filled series %s is not continued by the live scrape", s)
	}
	if len(live) < 10*len(targets) {
		t.Fatalf("%d series in the live scrape", len(live))
	}
	for _, s := range tel.Status() {
		if !s.OK {
			t.Errorf("source failing: %+v", s)
		}
	}
	// A chart over the back-filled window has a point at every step.
	end := time.Now()
	series, err := tel.Range(ctx, metrics.Scope{Model: targets[0].Model}, []string{metrics.RunningSeqs}, metrics.Range{Start: end.Add(-90 * time.Minute), End: end, Step: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(series[0].Samples); got != 18 {
		t.Fatalf("running seqs over 90 min at 5 min: %d samples, want 18", got)
	}
}

// TestDemoCatalog checks every catalog metric's PromQL on the simulator's
// back-filled history: each evaluates to a finite value within the
// metric's bounds, for a model and for one instance.
func TestDemoCatalog(t *testing.T) {
	tel, _ := openDemo(t, 2*time.Hour)
	ctx := context.Background()
	tg := simulator(tel).Targets()[0]
	at := time.Now().Add(-10 * time.Minute)
	for _, scope := range []metrics.Scope{{Model: tg.Model}, {Model: tg.Model, Instance: tg.Instance}} {
		t.Run(scope.String(), func(t *testing.T) {
			snap, err := tel.Snapshot(ctx, scope, at)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range metrics.Catalog {
				v, ok := snap.Current.Get(m.ID)
				if !ok {
					t.Errorf("%s missing (query %s)", m.ID, m.Query(metrics.Selectors{}, time.Minute))
					continue
				}
				if msg := m.Check(v); msg != "" {
					t.Errorf("%s %s", m.ID, msg)
				}
				if lo, hi := plausible(m); v < lo || v > hi {
					t.Errorf("%s = %g %s, outside the plausible %g..%g", m.ID, v, m.Unit, lo, hi)
				}
			}
			t.Logf("current: %v", snap.Current)
			if len(snap.History) != historyPoints {
				t.Errorf("history has %d points, want %d", len(snap.History), historyPoints)
			}
			if err := snap.Normalize(); err != nil {
				t.Fatalf("snapshot breaks the contract: %v", err)
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// countSeries counts the stored series with samples in [from, to].
func countSeries(t *testing.T, tel *Telemetry, from, to time.Time) int {
	return len(seriesIn(t, tel, from, to))
}

// seriesIn returns the stored series with samples in [from, to].
func seriesIn(t *testing.T, tel *Telemetry, from, to time.Time) map[string]bool {
	t.Helper()
	q, err := tel.db.Querier(from.UnixMilli(), to.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "job", ".+"))
	out := map[string]bool{}
	for set.Next() {
		it := set.At().Iterator(nil)
		if it.Seek(from.UnixMilli()) != chunkenc.ValNone && it.AtT() <= to.UnixMilli() {
			out[set.At().Labels().String()] = true
		}
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDemoWithTargets scrapes a real target next to the simulator: its live
// samples must not get ahead of the back-fill, which the TSDB would then
// refuse as too old.
func TestDemoWithTargets(t *testing.T) {
	var k atomic.Int64
	k.Store(1)
	srv := httptest.NewServer(loadFixture(t, "vllm.prom", &k))
	defer srv.Close()
	tel, err := open(context.Background(), Options{DataDir: t.TempDir(), Demo: newSimDemo(),
		Targets: []Target{{URL: srv.URL, Labels: map[string]string{"pod": "extra-0"}}}}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	waitFor(t, func() bool {
		return instant(t, tel.querier, `vllm:num_requests_running{pod="extra-0"}`, time.Now()) == 12
	})
	for _, s := range tel.Status() {
		if !s.OK {
			t.Errorf("source failing: %+v", s)
		}
	}
}

// plausible returns the range a healthy demo cluster's value of m lies in,
// by unit: wide enough for load swings, narrow enough to catch a wrong unit
// or a broken expression (seconds as ms, a counter read as a rate).
func plausible(m metrics.Metric) (lo, hi float64) {
	switch m.Unit {
	case "ms":
		return 0.1, 600_000
	case "req/s":
		return 0.01, 100_000
	case "tok/s":
		return 1, 10_000_000
	case "count":
		return 0, 100_000
	case "tokens":
		return 1, 1_000_000
	case "ratio":
		return 0, 1
	case "MHz":
		return 100, 5_000
	case "W":
		return 10, 2_000
	case "C":
		return 10, 110
	case "1/s":
		return 0, 10_000
	}
	return math.Inf(-1), math.Inf(1)
}
