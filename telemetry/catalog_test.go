package telemetry

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// fixtureTarget serves a hand-written exposition from testdata as a live
// target would: the counter-like values in the file are the increments of
// one scrape interval, so scrape k serves k times them.
type fixtureTarget struct {
	lines []string
	k     *atomic.Int64
}

func loadFixture(t testing.TB, name string, k *atomic.Int64) *fixtureTarget {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return &fixtureTarget{lines: strings.Split(strings.TrimSpace(string(b)), "\n"), k: k}
}

func (f *fixtureTarget) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	k := float64(f.k.Load())
	var b strings.Builder
	for _, line := range f.lines {
		if strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		series, val := line[:sp], line[sp+1:]
		name := series
		if i := strings.IndexByte(series, '{'); i >= 0 {
			name = series[:i]
		}
		if strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_sum") ||
			strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_bucket") {
			v, _ := strconv.ParseFloat(val, 64)
			val = strconv.FormatFloat(v*k, 'f', -1, 64)
		}
		b.WriteString(series + " " + val + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// fixtureTelemetry scrapes the three fixture targets 13 times at 5 s
// intervals (one minute) ending at the returned time.
func fixtureTelemetry(t testing.TB) (*Telemetry, time.Time) {
	var k atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("/engine", loadFixture(t, "vllm.prom", &k))
	mux.Handle("/gpu", loadFixture(t, "dcgm.prom", &k))
	mux.Handle("/gateway", loadFixture(t, "gateway.prom", &k))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	db := openTestDB(t)
	status := newStatusBoard(slog.New(slog.DiscardHandler))
	var loops []*scrapeLoop
	for _, tg := range []Target{
		{URL: srv.URL + "/engine", Labels: map[string]string{"job": "vllm", "pod": "llama-8b-0"}},
		{URL: srv.URL + "/gpu", Labels: map[string]string{"job": "dcgm-exporter"}},
		{URL: srv.URL + "/gateway", Labels: map[string]string{"job": "gateway"}},
	} {
		st, err := resolveTarget(tg, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, newScrapeLoop(st, srv.Client(), db, status))
	}
	end := time.Now().Add(-time.Second).Truncate(time.Second)
	start := end.Add(-time.Minute)
	for i := 0; i <= 12; i++ {
		k.Store(int64(i + 1))
		for _, l := range loops {
			if err := l.scrape(context.Background(), start.Add(time.Duration(i)*5*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tel := &Telemetry{
		opts:    Options{InstanceLabel: "pod", ScrapeInterval: 5 * time.Second},
		log:     slog.New(slog.DiscardHandler),
		querier: NewEmbeddedQuerier(db, nil),
		status:  status,
		res:     resolutions{live: 5 * time.Second},
		cancel:  func() {},
	}
	return tel, end
}

// The expected values follow from testdata/*.prom: per 5 s interval the
// engine finishes 50 requests (half a request aborted by its client and
// half failed by the engine, which answered 5xx; 2 of the 3 waiting wait
// for capacity; each speculative step emits 3 tokens), one GPU's last XID
// is 43, the histogram sums are per
// interval, and the two GPUs report the gauges in dcgm.prom.
var fixtureWant = map[string]float64{
	metrics.GatewayE2E:       1000 * 115.0 / 50,
	metrics.E2E:              1000 * 110.0 / 50,
	metrics.TTFT:             1000 * 8.5 / 50,
	metrics.TPOT:             1000 * 250.0 / 9950,
	metrics.QueueTime:        1000 * 6.0 / 50,
	metrics.PrefillTime:      1000 * 5.0 / 50,
	metrics.DecodeTime:       1000 * 100.0 / 50,
	metrics.ThroughputRPS:    50.0 / 5,
	metrics.ArrivalRPS:       50.0 / 5,
	metrics.PromptTPS:        40000.0 / 5,
	metrics.GenerationTPS:    10000.0 / 5,
	metrics.RunningSeqs:      12,
	metrics.QueueDepth:       3,
	metrics.MeanPromptTokens: 40000.0 / 50,
	metrics.SMUtil:           0.7312,
	metrics.TensorActive:     0.412345,
	metrics.DRAMActive:       0.65,
	metrics.GPUMemUsedFrac:   61000.0 / 81000,
	metrics.KVCacheUsage:     0.43,
	metrics.SMClock:          1980,
	metrics.MemClock:         2619,
	metrics.Power:            521.5,
	metrics.GPUTemp:          62,
	metrics.KVCacheHitRate:   0.75,
	metrics.RejectionRate:    0.3,
	metrics.ErrorRate:        0.5 / 50,
	metrics.AbortRate:        0.5 / 50,
	metrics.APIErrorRate:     0.5 / 50,
	metrics.XIDErrors:        1,
	metrics.QueueCapacity:    2,
	metrics.CachedPromptTPS:  30000.0 / 5,
	metrics.SpecAcceptLength: 1 + 3500.0/1750,
	metrics.PreemptionRate:   0.5 / 5,
}

func TestCatalogOnFixtureScrape(t *testing.T) {
	tel, at := fixtureTelemetry(t)
	ctx := context.Background()
	scopes, err := tel.Scopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(scopes) != 2 || scopes[0] != (metrics.Scope{Model: "llama-8b"}) || scopes[1] != (metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"}) {
		t.Fatalf("scopes = %v", scopes)
	}
	for _, scope := range scopes {
		t.Run(scope.String(), func(t *testing.T) {
			snap, err := tel.Snapshot(ctx, scope, at)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range metrics.Catalog {
				got, ok := snap.Current.Get(m.ID)
				if !ok {
					t.Errorf("%s missing from the snapshot", m.ID)
					continue
				}
				if msg := m.Check(got); msg != "" {
					t.Errorf("%s %s", m.ID, msg)
				}
				want, known := fixtureWant[m.ID]
				if !known {
					// p99s: between the mean and the top finite bucket.
					if got <= 0 || got > 10_000 {
						t.Errorf("%s = %g, not a plausible p99 in ms", m.ID, got)
					}
					continue
				}
				if !near(got, want, 0.02) {
					t.Errorf("%s = %g, want %g", m.ID, got, want)
				}
			}
			if err := snap.Normalize(); err != nil {
				t.Fatalf("captured snapshot breaks the contract: %v", err)
			}
		})
	}
}

func TestSnapshotDropsNonFinite(t *testing.T) {
	tel, at := fixtureTelemetry(t)
	// Ten minutes later every target is silent: rates are 0/0 and gauges
	// have gone past the lookback, so the fields must be missing, not NaN.
	snap, err := tel.Snapshot(context.Background(), metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"}, at.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for id, v := range snap.Current {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %g in the snapshot", id, v)
		}
	}
	if _, ok := snap.Current[metrics.TTFT]; ok {
		t.Errorf("ttft present over a silent window: %g", snap.Current[metrics.TTFT])
	}
	// The scraped minute sits in the history window: [at+10m-65m, at+10m-1m].
	if len(snap.History) == 0 {
		t.Fatal("history is empty although the scraped minute is inside it")
	}
	for _, p := range snap.History {
		if p.At.Before(at.Add(10*time.Minute-65*time.Minute)) || p.At.After(at.Add(10*time.Minute-time.Minute)) {
			t.Errorf("history point at %s outside the window", p.At)
		}
	}
}

func TestRangeErrors(t *testing.T) {
	tel, at := fixtureTelemetry(t)
	ctx := context.Background()
	scope := metrics.Scope{Model: "llama-8b"}
	tests := []struct {
		name    string
		ids     []string
		r       metrics.Range
		wantErr string
	}{
		{"unknown id", []string{"nope"}, metrics.Range{Start: at.Add(-time.Hour), End: at, Step: time.Minute}, `unknown metric "nope"`},
		{"zero step", []string{metrics.TTFT}, metrics.Range{Start: at.Add(-time.Hour), End: at}, "step must be positive"},
		{"end before start", []string{metrics.TTFT}, metrics.Range{Start: at, End: at.Add(-time.Hour), Step: time.Minute}, "end must be after"},
		{"too many points", []string{metrics.TTFT}, metrics.Range{Start: at.Add(-100 * time.Hour), End: at, Step: time.Second}, "11000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tel.Range(ctx, scope, tc.ids, tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	// A valid range: one series per id, in order, on the step grid: the
	// multiples of the step in the half-open range (so that a refresh
	// evaluates at the same instants and the range cache can serve it).
	step := 10 * time.Second
	r := metrics.Range{Start: at.Add(-30 * time.Second), End: at.Add(time.Second), Step: step}
	series, err := tel.Range(ctx, scope, []string{metrics.ThroughputRPS, metrics.GPUTemp}, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Metric != metrics.ThroughputRPS || series[1].Metric != metrics.GPUTemp {
		t.Fatalf("series = %+v", series)
	}
	var grid []time.Time
	for g := alignedStart(r.Start, step); g.Before(r.End); g = g.Add(step) {
		grid = append(grid, g)
	}
	for _, s := range series {
		if len(s.Samples) != len(grid) {
			t.Errorf("%s has %d samples, want %d (the %s multiples in [%s, %s))", s.Metric, len(s.Samples), len(grid), step, r.Start, r.End)
			continue
		}
		for i, p := range s.Samples {
			if !p.T.Equal(grid[i]) {
				t.Errorf("%s sample %d at %s, want %s", s.Metric, i, p.T, grid[i])
			}
		}
	}
}
