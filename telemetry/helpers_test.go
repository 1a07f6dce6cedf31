package telemetry

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/casebook/casebook/telemetry/sim"
)

// logCounter is a slog handler that counts records, to check that a state
// change is logged once and not on every attempt.
type logCounter struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	return nil
}
func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

// count returns how many records at level have a message containing msg.
func (h *logCounter) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level && (msg == "" || strings.Contains(r.Message, msg)) {
			n++
		}
	}
	return n
}

// openTestDB opens a TSDB in a temporary directory, closed at cleanup.
func openTestDB(tb testing.TB) *tsdb.DB {
	tb.Helper()
	db, err := openTSDB(tb.TempDir(), false, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// instant evaluates q at `at` and returns the single value, or NaN when the
// answer is empty.
func instant(tb testing.TB, q Querier, expr string, at time.Time) float64 {
	tb.Helper()
	rs, err := q.Instant(context.Background(), expr, at)
	if err != nil {
		tb.Fatalf("query %s: %v", expr, err)
	}
	if len(rs) == 0 || len(rs[0].Samples) == 0 {
		return math.NaN()
	}
	return rs[0].Samples[0].V
}

func near(got, want, relTol float64) bool {
	if want == 0 {
		return math.Abs(got) <= relTol
	}
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

// simDemo offers the simulator as a DemoSource in this package's tests
// (the console's own adapter, package demo, imports telemetry).
type simDemo struct {
	c   *sim.Cluster
	buf []Label
}

func newSimDemo() *simDemo { return &simDemo{c: sim.New(sim.Options{})} }

func (d *simDemo) Handler() http.Handler                       { return d.c.Handler() }
func (d *simDemo) Run(ctx context.Context, tick time.Duration) { d.c.Run(ctx, tick) }

func (d *simDemo) Targets() []Target {
	var out []Target
	for _, st := range d.c.Targets() {
		out = append(out,
			Target{URL: st.EnginePath, Labels: map[string]string{"job": JobEngine, GPUInstanceLabel: st.Instance}},
			Target{URL: st.GPUPath, Labels: map[string]string{"job": JobGPU, GPUInstanceLabel: st.Instance}})
	}
	return append(out, Target{URL: sim.GatewayPath, Labels: map[string]string{"job": JobGateway}})
}

func (d *simDemo) Backfill(from, to time.Time, step time.Duration, emit func(DemoSample) error) error {
	return d.c.Backfill(from, to, step, func(s sim.Sample) error {
		d.buf = d.buf[:0]
		for _, l := range s.Labels {
			d.buf = append(d.buf, Label(l))
		}
		return emit(DemoSample{Key: s.Key, Labels: d.buf, T: s.T, V: s.V})
	})
}

// simulator is the demo cluster of a telemetry opened over a simDemo.
func simulator(t *Telemetry) *sim.Cluster {
	if d, ok := t.opts.Demo.(*simDemo); ok {
		return d.c
	}
	return nil
}
