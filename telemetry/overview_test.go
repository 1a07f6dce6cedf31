package telemetry

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry/sim"
)

// countingQuerier counts the queries it passes on.
type countingQuerier struct {
	Querier
	n atomic.Int64
}

func (q *countingQuerier) Instant(ctx context.Context, query string, at time.Time) ([]Result, error) {
	q.n.Add(1)
	return q.Querier.Instant(ctx, query, at)
}

func (q *countingQuerier) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Result, error) {
	q.n.Add(1)
	return q.Querier.Range(ctx, query, start, end, step)
}

func openFleetDemo(t *testing.T, opts sim.Options) (*Telemetry, *countingQuerier) {
	t.Helper()
	tel, err := open(context.Background(), Options{DataDir: t.TempDir(), Demo: &simDemo{c: sim.New(opts)}}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Close() })
	cq := &countingQuerier{Querier: tel.querier}
	tel.querier = cq
	return tel, cq
}

// TestFleetMatchesSnapshots checks that the batched reading gives every
// scope the snapshot Snapshot captures for it alone, and that its number
// of queries does not grow with the fleet.
func TestFleetMatchesSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills two demo clusters")
	}
	ctx := context.Background()
	queries := map[int]int64{}
	for _, opts := range []sim.Options{{Models: 2, InstancesPerModel: 2}, {Models: 3, InstancesPerModel: 3}} {
		tel, cq := openFleetDemo(t, opts)
		at := tel.backfilledTo.Add(-2 * time.Minute) // settled data: no scrape adds to it
		before := cq.n.Load()
		f, err := tel.Fleet(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		engines := opts.Models * opts.InstancesPerModel
		queries[engines] = cq.n.Load() - before
		if want := opts.Models + engines; len(f.Snapshots) != want {
			t.Fatalf("%d engines: %d snapshots, want %d", engines, len(f.Snapshots), want)
		}
		gpus := 0
		for _, n := range f.GPUs {
			gpus += n
		}
		if gpus != 2*engines {
			t.Errorf("%d engines: %d GPUs joined, want %d", engines, gpus, 2*engines)
		}
		for _, got := range f.Snapshots {
			want, err := tel.Snapshot(ctx, got.Scope, at)
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine != want.Engine {
				t.Errorf("%s: engine %q, Snapshot has %q", got.Scope, got.Engine, want.Engine)
			}
			if len(got.Current) == 0 || len(got.Current) != len(want.Current) {
				t.Errorf("%s: %d current values, Snapshot has %d", got.Scope, len(got.Current), len(want.Current))
			}
			for id, w := range want.Current {
				if g, ok := got.Current[id]; !ok || !sameValue(g, w) {
					t.Errorf("%s %s: fleet %v (present %v), snapshot %v", got.Scope, id, g, ok, w)
				}
			}
			if len(got.History) != len(want.History) {
				t.Errorf("%s: %d history points, Snapshot has %d", got.Scope, len(got.History), len(want.History))
				continue
			}
			for i, p := range want.History {
				for id, w := range p.Values {
					if g, ok := got.History[i].Values[id]; !ok || !sameValue(g, w) {
						t.Errorf("%s %s at %s: fleet %v, snapshot %v", got.Scope, id, p.At.Format(time.TimeOnly), g, w)
					}
				}
			}
		}
	}
	if queries[4] == 0 || queries[4] != queries[9] {
		t.Errorf("queries per reading: %d for 4 engines, %d for 9; want the same, not one per scope", queries[4], queries[9])
	}
}

func sameValue(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestFleetCache checks that readers within FleetCacheFor share one
// reading and that a later instant reads again.
func TestFleetCache(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills a demo cluster")
	}
	ctx := context.Background()
	tel, cq := openFleetDemo(t, sim.Options{})
	at := tel.backfilledTo.Add(-2 * time.Minute)
	first, err := tel.Fleet(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	n := cq.n.Load()
	again, err := tel.Fleet(ctx, at.Add(FleetCacheFor/2))
	if err != nil {
		t.Fatal(err)
	}
	if cq.n.Load() != n || !again.At.Equal(first.At) {
		t.Errorf("a reader %s later queried again (%d queries) or got another reading (%s)", FleetCacheFor/2, cq.n.Load()-n, again.At)
	}
	// Past FleetStaleFor and the time the reading took, a reader waits
	// for a reading of its own instant.
	late := 2 * FleetStaleFor
	later, err := tel.Fleet(ctx, at.Add(late))
	if err != nil {
		t.Fatal(err)
	}
	if cq.n.Load() == n || !later.At.Equal(at.Add(late)) {
		t.Errorf("a reader %s later got the cached reading of %s", late, later.At)
	}
}

func TestGPUFold(t *testing.T) {
	vs := []float64{3, 1, 2}
	for _, tc := range []struct {
		id   string
		want float64
	}{
		{metrics.SMClock, 1}, {metrics.Power, 3}, {metrics.XIDErrors, 6}, {metrics.SMUtil, 2}, {metrics.GPUMemUsedFrac, 2},
	} {
		m, _ := metrics.Lookup(tc.id)
		if got := gpuFold(m)(vs); got != tc.want {
			t.Errorf("%s folds %v to %v, want %v", tc.id, vs, got, tc.want)
		}
	}
}

// TestFleetRemote checks the remote mode: the fleet is read with grouped
// queries that name no scope, and their series land on their scopes.
func TestFleetRemote(t *testing.T) {
	canned := &cannedPrometheus{t: t, rules: []cannedRule{
		{path: "/api/v1/query_range", match: "group by (model_name, pod, casebook_engine)", file: "api_group_matrix.json"},
		{path: "/api/v1/query", match: "sum by (model_name, pod) (vllm:num_requests_waiting{", file: "api_vector.json"},
	}}
	var requests, scoped atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if err := r.ParseForm(); err == nil && strings.Contains(r.Form.Get("query"), "model_name=") {
			scoped.Add(1)
		}
		canned.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tel, err := Open(context.Background(), Options{PrometheusURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	f, err := tel.Fleet(context.Background(), time.Unix(1764480000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Snapshots) != 5 {
		t.Fatalf("%d snapshots, want 5 (2 models, 3 instances)", len(f.Snapshots))
	}
	for _, s := range f.Snapshots {
		v, ok := s.Current[metrics.QueueDepth]
		if s.Scope.Instance != "" && (!ok || v != 1) {
			t.Errorf("%s: queue depth %v (present %v), want 1", s.Scope, v, ok)
		}
		if s.Scope.Instance == "" && ok {
			t.Errorf("model %s has an instance's queue depth %v", s.Scope, v)
		}
	}
	if scoped.Load() != 0 {
		t.Errorf("%d of %d queries select one scope", scoped.Load(), requests.Load())
	}
	if max := int64(4*len(metrics.Catalog) + 4); requests.Load() > max {
		t.Errorf("%d queries, want at most %d (two per metric and level)", requests.Load(), max)
	}
}

// slowQuerier delays every query.
type slowQuerier struct {
	Querier
	delay time.Duration
}

func (q slowQuerier) Instant(ctx context.Context, query string, at time.Time) ([]Result, error) {
	time.Sleep(q.delay)
	return q.Querier.Instant(ctx, query, at)
}

// TestFleetWaitersShareASlowReading checks that a reader arriving while a
// reading is in flight takes it, even when the reading outlasts
// FleetCacheFor.
func TestFleetWaitersShareASlowReading(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills a demo cluster")
	}
	ctx := context.Background()
	tel, cq := openFleetDemo(t, sim.Options{})
	tel.querier = slowQuerier{Querier: cq, delay: 200 * time.Millisecond}
	at := tel.backfilledTo.Add(-3 * time.Minute)
	first := make(chan metrics.Fleet, 1)
	go func() {
		f, err := tel.Fleet(ctx, at)
		if err != nil {
			t.Error(err)
		}
		first <- f
	}()
	for {
		tel.fleet.mu.Lock()
		running := tel.fleet.running != nil
		tel.fleet.mu.Unlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// The reading takes several seconds (200 ms per instant query, four
	// at a time); this reader comes 1.5 s into it and asks for an instant
	// past FleetCacheFor, as a viewer whose clock is that much ahead
	// would.
	time.Sleep(1500 * time.Millisecond)
	n := cq.n.Load()
	got, err := tel.Fleet(ctx, at.Add(FleetCacheFor+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	f := <-first
	if !got.At.Equal(f.At) {
		t.Errorf("the waiting reader got a reading of %s, want the one in flight (%s)", got.At, f.At)
	}
	if extra := cq.n.Load() - n; extra > int64(4*len(metrics.Catalog)+4) {
		t.Errorf("the waiting reader read the fleet again (%d queries after it arrived)", extra)
	}
}

// TestFleetRefreshRests checks that a reader served the latest reading
// while it is refreshed starts the background reading only once the last
// reading has rested fleetRest times its duration.
func TestFleetRefreshRests(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills a demo cluster")
	}
	ctx := context.Background()
	tel, cq := openFleetDemo(t, sim.Options{})
	tel.querier = slowQuerier{Querier: cq, delay: 20 * time.Millisecond}
	at := tel.backfilledTo.Add(-3 * time.Minute)
	if _, err := tel.Fleet(ctx, at); err != nil {
		t.Fatal(err)
	}
	c := &tel.fleet
	c.mu.Lock()
	took, ended := c.took, c.ended
	c.mu.Unlock()
	running := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running != nil
	}
	later := at.Add(FleetCacheFor + time.Second)
	f, err := tel.Fleet(ctx, later)
	resting := time.Since(ended) < fleetRest*took
	if err != nil || !f.At.Equal(at) {
		t.Fatalf("a reader %s later got the reading of %s (%v), want the latest (%s)", later.Sub(at), f.At, err, at)
	}
	if !resting {
		t.Fatalf("the reading of %s took so long that the test could not ask while it rested", took)
	}
	if running() {
		t.Errorf("a reading started %s after the last one, which took %s", time.Since(ended), took)
	}

	time.Sleep(time.Until(ended.Add(fleetRest * took)))
	if f, err := tel.Fleet(ctx, later); err != nil || !f.At.Equal(at) {
		t.Fatalf("a reader after the rest got the reading of %s (%v), want the latest (%s) while it refreshes", f.At, err, at)
	}
	for deadline := time.Now().Add(30 * time.Second); running() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if f, ok := tel.CachedFleet(later); !ok || !f.At.Equal(later) {
		t.Errorf("after the rest the reading was not refreshed: the latest is of %s, want %s", f.At, later)
	}
}

// TestScopesListedInTheBackground checks that a listing of the scopes
// older than scopesCacheFor still answers while a new one is read in the
// background, and that one older than scopesStaleFor is read anew first.
func TestScopesListedInTheBackground(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills a demo cluster")
	}
	ctx := context.Background()
	tel, _ := openFleetDemo(t, sim.Options{})
	want, err := tel.Scopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &tel.scopes
	backdate := func(d time.Duration) time.Time {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.at = time.Now().Add(-d)
		return c.at
	}
	listedAt := func() (time.Time, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.at, c.refreshing
	}

	old := backdate(scopesCacheFor + time.Second)
	got, err := tel.Scopes(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("a listing %s old: %v, %v; want %v", scopesCacheFor+time.Second, got, err, want)
	}
	if at, refreshing := listedAt(); !refreshing && !at.After(old) {
		t.Fatal("a listing older than scopesCacheFor was neither refreshed nor being refreshed")
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, refreshing := listedAt(); !refreshing {
			break
		}
	}
	if at, _ := listedAt(); !at.After(old) {
		t.Errorf("the background listing was not kept: the listing is of %s", at)
	}

	old = backdate(scopesStaleFor + time.Second)
	if _, err := tel.Scopes(ctx); err != nil {
		t.Fatal(err)
	}
	if at, _ := listedAt(); !at.After(old) {
		t.Errorf("a listing %s old answered without being read anew", scopesStaleFor+time.Second)
	}
}
