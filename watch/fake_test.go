package watch

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// fakeSource serves a seasonal series per scope and metric: a daily cycle
// of ±30% around a per-metric base with ±2% noise, a step of factor step
// in the metric's bad direction on the stepped metrics from stepAt on,
// NaN inside gap, and errors while failing is set.
type fakeSource struct {
	mu      sync.Mutex
	scopes  []metrics.Scope
	stepAt  time.Time
	step    float64
	stepped map[string]bool
	// onlyIn, when set, limits a stepped metric to the scopes listed
	// for it ("scope|metric").
	onlyIn  map[string]bool
	gapFrom time.Time
	gapTo   time.Time
	failing bool
	ranges  int
	// fleetRanges counts the FleetRange calls; fleetFailing fails them.
	fleetRanges  int
	fleetFailing bool
}

func (f *fakeSource) Scopes(ctx context.Context) ([]metrics.Scope, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return nil, errors.New("fake: connection refused")
	}
	return append([]metrics.Scope(nil), f.scopes...), nil
}

func (f *fakeSource) value(sc metrics.Scope, id string, t time.Time) float64 {
	h := fnv.New64a()
	h.Write([]byte(sc.String() + "|" + id))
	seed := h.Sum64()
	base := 10 + float64(seed%90)
	day := float64(t.Unix()%86400) / 86400
	v := base * (1 + 0.3*math.Sin(2*math.Pi*day))
	h.Write([]byte(t.UTC().Format(time.RFC3339)))
	noise := float64(h.Sum64()%1000)/1000 - 0.5 // uniform in [-0.5, 0.5)
	v *= 1 + 0.04*noise
	m, _ := metrics.Lookup(id)
	if m.Unit == "ratio" {
		v /= 200 // keep ratios inside 0..1
	}
	if f.stepped[id] && (f.onlyIn == nil || f.onlyIn[sc.String()+"|"+id]) && !f.stepAt.IsZero() && !t.Before(f.stepAt) {
		if m.Bad == metrics.Down {
			v /= f.step
		} else {
			v *= f.step
		}
	}
	return v
}

func (f *fakeSource) Range(ctx context.Context, sc metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranges++
	if f.failing {
		return nil, errors.New("fake: query timed out")
	}
	return f.series(sc, ids, r), nil
}

// FleetRange answers Range for every listed scope.
func (f *fakeSource) FleetRange(ctx context.Context, ids []string, r metrics.Range) (map[metrics.Scope][]metrics.Series, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fleetRanges++
	if f.failing || f.fleetFailing {
		return nil, errors.New("fake: query timed out")
	}
	out := make(map[metrics.Scope][]metrics.Series, len(f.scopes))
	for _, sc := range f.scopes {
		out[sc] = f.series(sc, ids, r)
	}
	return out, nil
}

func (f *fakeSource) series(sc metrics.Scope, ids []string, r metrics.Range) []metrics.Series {
	out := make([]metrics.Series, len(ids))
	for i, id := range ids {
		out[i] = metrics.Series{Metric: id, Scope: sc}
		for t := r.Start; t.Before(r.End); t = t.Add(r.Step) {
			v := f.value(sc, id, t)
			if !t.Before(f.gapFrom) && t.Before(f.gapTo) {
				v = math.NaN()
			}
			out[i].Samples = append(out[i].Samples, metrics.Sample{T: t, V: v})
		}
	}
	return out
}

func (f *fakeSource) set(fn func(f *fakeSource)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// fakeOpener records the incidents opened.
type fakeOpener struct {
	mu     sync.Mutex
	opened []opened
	fail   bool
}

type opened struct {
	scope metrics.Scope
	tr    incident.Trigger
}

func (o *fakeOpener) Open(ctx context.Context, tr incident.Trigger) (store.Incident, bool, error) {
	scope := tr.Scope
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail {
		return store.Incident{}, false, errors.New("fake: archive is read-only")
	}
	o.opened = append(o.opened, opened{scope, tr})
	inc := store.Incident{}
	inc.ID = int64(len(o.opened))
	inc.Scope, inc.Title, inc.Trigger = scope, tr.Title, tr.Kind
	return inc, true, nil
}

func (o *fakeOpener) list() []opened {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]opened(nil), o.opened...)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// start is the test clock's origin: a Monday at 00:00 UTC.
var start = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// newTestWatcher returns a watcher over src warmed up with three days of
// history, with the clock at start plus three days.
func newTestWatcher(t *testing.T, src *fakeSource, ids []string, am *Alertmanager, log *syncBuffer) (*Watcher, *fakeOpener, *clock) {
	t.Helper()
	op := &fakeOpener{}
	clk := &clock{t: start.Add(3 * 24 * time.Hour)}
	w, err := New(Options{
		Source: src, Opener: op, Metrics: ids, History: 3 * 24 * time.Hour,
		BaseURL: "http://casebook.test/", Alertmanager: am, Logger: testLogger(log), Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, op, clk
}

// runMinutes runs one round per minute for n minutes.
func runMinutes(w *Watcher, clk *clock, n int) (opened int) {
	for i := 0; i < n; i++ {
		clk.advance(time.Minute)
		opened += w.Round(context.Background()).Opened
	}
	return opened
}
