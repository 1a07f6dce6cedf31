package telemetry

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// FleetCacheFor is how long one reading of the fleet serves every reader
// that asks for about the same instant: the default scrape interval, so
// that a cached reading is never more than one scrape behind.
const FleetCacheFor = DefaultScrapeInterval

// FleetStaleFor is how much older than asked for a reading Fleet may
// answer with while it reads the fleet anew in the background. It is
// shorter than the pages' live refresh interval plus a reading's
// duration, so a viewer sees figures of the previous refresh at worst.
const FleetStaleFor = time.Minute

// fleetRest is how many times its own duration a background reading
// waits after the last reading before it starts: at a large fleet a
// reading takes seconds of CPU, and refreshing it back to back for a
// viewer would take most of a small machine from the pages themselves.
// Readings thus take at most a third of the time while the fleet is
// watched, unless the latest is half FleetStaleFor old: a reader should
// not have to wait for one.
const fleetRest = 2

// fleetCache holds the latest reading of the fleet and the one in flight.
type fleetCache struct {
	mu   sync.Mutex
	last metrics.Fleet
	ok   bool
	// took is how long the last reading took, and ended when it ended.
	took    time.Duration
	ended   time.Time
	running chan struct{} // closed when the reading in flight ends; nil when none
	// runningAt is the instant the reading in flight reads, and
	// runningSince when it began.
	runningAt, runningSince time.Time
}

// Fleet returns the snapshot of every scope Scopes lists at `at`: each
// catalog metric's current value and 65 minutes of history, like
// Snapshot, but read with one query per metric and aggregation level for
// the whole fleet (grouped by model_name and the instance label, or by
// the GPU join labels), never one per scope. A model's GPU figures are
// folded from its instances' (see gpuFold).
//
// One reading serves every caller whose `at` is within FleetCacheFor of
// it. A caller whose `at` is later by less than FleetStaleFor (plus the
// time the reading took: on a busy machine a large fleet's reading can
// take longer than that, and each viewer would then wait for one) gets it too,
// while a reading of its `at` runs in the background (the Fleet's At says
// which instant it shows) unless the last reading ended less than
// fleetRest times its duration ago and is less than half FleetStaleFor
// old. Callers that arrive while a reading is in
// flight take it when it ends (a slow reading of a large fleet is not
// repeated for each viewer who waited for it). The returned snapshots are
// shared: callers must not modify them.
func (t *Telemetry) Fleet(ctx context.Context, at time.Time) (metrics.Fleet, error) {
	if at.IsZero() {
		at = t.now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	c := &t.fleet
	for {
		c.mu.Lock()
		if c.ok && absDuration(at.Sub(c.last.At)) < FleetCacheFor {
			f := c.last
			c.mu.Unlock()
			return f, nil
		}
		if c.ok && at.After(c.last.At) && at.Sub(c.last.At) < FleetStaleFor+c.took && t.bg.Err() == nil {
			// Serve the latest reading and refresh it in the background:
			// at a large fleet a reading takes seconds, and a viewer
			// should not wait for it on every refresh.
			f := c.last
			rested := time.Since(c.ended) >= fleetRest*c.took || at.Sub(c.last.At) >= FleetStaleFor/2
			if c.running == nil && rested {
				ch := make(chan struct{})
				c.running, c.runningAt, c.runningSince = ch, at, time.Now()
				t.wg.Add(1)
				go func() {
					defer t.wg.Done()
					ctx, cancel := context.WithTimeout(t.bg, 2*embeddedQueryTimeout)
					defer cancel()
					if _, err := t.readFleetInto(ctx, c, ch, at); err != nil {
						t.log.Warn("refreshing the fleet's reading failed", "err", err)
					}
				}()
			}
			c.mu.Unlock()
			return f, nil
		}
		if ch := c.running; ch != nil {
			awaited, since := c.runningAt, time.Since(c.runningSince)
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return metrics.Fleet{}, fmt.Errorf("telemetry: fleet: %w", ctx.Err())
			}
			// A reading that began before this call is as fresh as
			// one begun now could be: take it, however long it took.
			c.mu.Lock()
			if c.ok && c.last.At.Equal(awaited) && absDuration(at.Sub(awaited)) < FleetCacheFor+since {
				f := c.last
				c.mu.Unlock()
				return f, nil
			}
			c.mu.Unlock()
			continue
		}
		ch := make(chan struct{})
		c.running, c.runningAt, c.runningSince = ch, at, time.Now()
		c.mu.Unlock()

		return t.readFleetInto(ctx, c, ch, at)
	}
}

// CachedFleet returns the latest reading of the fleet when it can stand
// for one at `at` (as Fleet would answer with it), without reading: pages
// that show a few scopes take their snapshots from it when a viewer of the
// overview or the detector has just read the fleet.
func (t *Telemetry) CachedFleet(at time.Time) (metrics.Fleet, bool) {
	c := &t.fleet
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok {
		return metrics.Fleet{}, false
	}
	d := at.Sub(c.last.At)
	return c.last, d > -FleetCacheFor && d < FleetStaleFor+c.took
}

// readFleetInto reads the fleet at `at` as the reading in flight (ch),
// keeps it in c unless a later one is there, and ends the flight.
func (t *Telemetry) readFleetInto(ctx context.Context, c *fleetCache, ch chan struct{}, at time.Time) (metrics.Fleet, error) {
	began := time.Now()
	f, err := t.readFleet(ctx, at)
	c.mu.Lock()
	c.running = nil
	c.took, c.ended = time.Since(began), time.Now()
	if err == nil && (!c.ok || !f.At.Before(c.last.At)) {
		c.last, c.ok = f, true
	}
	c.mu.Unlock()
	close(ch)
	return f, err
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// fleetQuery is one catalog metric at one aggregation level.
type fleetQuery struct {
	m     metrics.Metric
	level fleetLevel
	expr  func(window time.Duration) string
}

type fleetLevel int

const (
	levelInstance fleetLevel = iota // engine series by model_name and instance
	levelModel                      // engine series by model_name
	levelGPU                        // GPU series by the join labels
)

// fleetAnswer is what one fleetQuery returned.
type fleetAnswer struct {
	cur, hist []Result
	err       error
}

// readFleet reads every scope at `at` with one instant and one range
// query per fleetQuery.
func (t *Telemetry) readFleet(ctx context.Context, at time.Time) (metrics.Fleet, error) {
	scopes, seen, err := t.listScopes(ctx)
	if err != nil {
		return metrics.Fleet{}, fmt.Errorf("telemetry: fleet: %w", err)
	}
	join, engines, err := t.gpuJoin(ctx)
	if err != nil {
		t.log.Warn("gpu join unavailable; GPU metrics left out of the fleet", "err", err)
	}
	gpuOK := err == nil && join.InstanceLabel != ""
	inst := t.opts.InstanceLabel
	qs := t.fleetQueries(metrics.Catalog, join, gpuOK)

	hStart, hEnd := historyGrid(at)
	// Points this far behind the wall clock no longer change (late
	// scrapes, a remote's ingestion): the next reading reuses them.
	settled := t.now().Add(-t.ranges.settleFor(historyStep))
	curWin := t.res.currentWindow(at)
	histWin := t.res.rangeWindow(hStart, historyStep)
	answers := make([]fleetAnswer, len(qs))
	g := queryGroup()
	for i, q := range qs {
		g.Go(func() error {
			a := &answers[i]
			if a.cur, a.err = t.querier.Instant(ctx, q.expr(curWin), at); a.err != nil {
				return nil
			}
			a.hist, a.err = t.fleetHist.get(ctx, q.expr(histWin), hStart, hEnd, settled, historyStep,
				func(ctx context.Context, from, to time.Time) ([]Result, error) {
					return t.querier.Range(ctx, q.expr(histWin), from, to, historyStep)
				})
			return nil
		})
	}
	g.Wait()

	b := newFleetBuilder(scopes, at, hStart, inst)
	for _, s := range scopes {
		// The engine a scope is read with, as Snapshot says it.
		b.snaps[s].Engine = t.engineStatus(s, seen[s], instancesOf(s, scopes)).Engine
	}
	gpuScope := gpuScopes(join, engines)
	var errs []error
	for i, q := range qs {
		a := answers[i]
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		for _, r := range a.cur {
			if s, ok := b.scopeOf(q.level, r.Labels, join, gpuScope); ok {
				b.setCurrent(s, q.m, r.Samples)
			}
		}
		for _, r := range a.hist {
			if s, ok := b.scopeOf(q.level, r.Labels, join, gpuScope); ok {
				b.setHistory(s, q.m, r.Samples)
			}
		}
	}
	if len(errs) > 0 && len(errs) == len(qs) {
		return metrics.Fleet{}, fmt.Errorf("telemetry: fleet at %s: %w", at.Format(time.RFC3339), errs[0])
	}
	if len(errs) > 0 {
		t.log.Warn("fleet reading incomplete", "failed_queries", len(errs), "first_error", errs[0])
	}
	if gpuOK {
		for _, m := range metrics.Catalog {
			if m.Source == metrics.SourceGPU {
				b.foldModels(m)
			}
		}
	}
	f := b.fleet()
	if gpuOK {
		f.GPUs = map[metrics.Scope]int{}
		for _, e := range engines {
			if n := join.Joined[e.key()]; n > 0 {
				f.GPUs[metrics.Scope{Model: e.Model, Instance: e.Instance}] = n
			}
		}
	}
	return f, nil
}

// fleetQueries are the queries that read ms for the whole fleet: engine
// metrics by instance and by model, GPU metrics by the join labels (when
// the GPUs join).
func (t *Telemetry) fleetQueries(ms []metrics.Metric, join GPUJoin, gpuOK bool) []fleetQuery {
	inst := t.opts.InstanceLabel
	sel := metrics.Selectors{InstanceLabel: inst}
	var qs []fleetQuery
	for _, m := range ms {
		switch {
		case m.Source != metrics.SourceGPU:
			qs = append(qs,
				fleetQuery{m, levelInstance, func(w time.Duration) string { return m.QueryBy(sel, w, []string{"model_name", inst}) }},
				fleetQuery{m, levelModel, func(w time.Duration) string { return m.QueryBy(sel, w, []string{"model_name"}) }})
		case gpuOK:
			by := []string{join.InstanceLabel}
			if join.NamespaceLabel != "" {
				by = append(by, join.NamespaceLabel)
			}
			qs = append(qs, fleetQuery{m, levelGPU, func(w time.Duration) string { return m.QueryBy(sel, w, by) }})
		}
	}
	return qs
}

// gpuScopes maps the GPU join's values ("pod", or "pod\x00namespace" for
// engines with a namespace) to the engine instance they belong to.
func gpuScopes(join GPUJoin, engines []EngineRef) map[string]metrics.Scope {
	out := make(map[string]metrics.Scope, len(engines))
	for _, e := range engines {
		s := metrics.Scope{Model: e.Model, Instance: e.Instance}
		if join.NamespaceLabel != "" && e.Namespace != "" {
			out[e.Instance+"\x00"+e.Namespace] = s
			continue
		}
		out[e.Instance] = s
	}
	return out
}

// fleetBuilder collects the answers into one snapshot per scope.
type fleetBuilder struct {
	at, hStart time.Time
	inst       string
	order      []metrics.Scope
	snaps      map[metrics.Scope]*metrics.Snapshot
	points     map[metrics.Scope][]metrics.Point
}

func newFleetBuilder(scopes []metrics.Scope, at, hStart time.Time, inst string) *fleetBuilder {
	b := &fleetBuilder{at: at, hStart: hStart, inst: inst, order: scopes,
		snaps: make(map[metrics.Scope]*metrics.Snapshot, len(scopes)), points: make(map[metrics.Scope][]metrics.Point, len(scopes))}
	for _, s := range scopes {
		b.snaps[s] = &metrics.Snapshot{At: at, Scope: s, Current: metrics.Values{}}
		ps := make([]metrics.Point, historyPoints)
		for i := range ps {
			ps[i] = metrics.Point{At: hStart.Add(time.Duration(i) * historyStep), Values: metrics.Values{}}
		}
		b.points[s] = ps
	}
	return b
}

// scopeOf names the listed scope a series of an answer belongs to.
func (b *fleetBuilder) scopeOf(level fleetLevel, ls map[string]string, join GPUJoin, gpuScope map[string]metrics.Scope) (metrics.Scope, bool) {
	s, ok := seriesScope(level, ls, b.inst, join, gpuScope)
	_, listed := b.snaps[s]
	return s, ok && listed
}

// seriesScope names the scope a series of a fleetQuery's answer belongs
// to: inst is the engines' instance label, and gpuScope maps the GPU join
// (see gpuScopes).
func seriesScope(level fleetLevel, ls map[string]string, inst string, join GPUJoin, gpuScope map[string]metrics.Scope) (metrics.Scope, bool) {
	var s metrics.Scope
	switch level {
	case levelInstance:
		s = metrics.Scope{Model: ls["model_name"], Instance: ls[inst]}
		if s.Instance == "" {
			return s, false
		}
	case levelModel:
		s = metrics.Scope{Model: ls["model_name"]}
	case levelGPU:
		pod := ls[join.InstanceLabel]
		var ok bool
		if join.NamespaceLabel != "" {
			s, ok = gpuScope[pod+"\x00"+ls[join.NamespaceLabel]]
		}
		if !ok {
			s, ok = gpuScope[pod]
		}
		if !ok {
			return s, false
		}
	}
	return s, s.Model != ""
}

func (b *fleetBuilder) setCurrent(s metrics.Scope, m metrics.Metric, ss []metrics.Sample) {
	for _, x := range ss {
		if v, ok := clean(m, x.V); ok {
			b.snaps[s].Current[m.ID] = v
			return
		}
	}
}

func (b *fleetBuilder) setHistory(s metrics.Scope, m metrics.Metric, ss []metrics.Sample) {
	ps := b.points[s]
	for _, x := range cleanSamples(m, ss) {
		k := int(x.T.Sub(b.hStart) / historyStep)
		if k >= 0 && k < historyPoints && x.T.Equal(ps[k].At) {
			ps[k].Values[m.ID] = x.V
		}
	}
}

// foldModels sets a GPU metric of every model scope from its instances'.
func (b *fleetBuilder) foldModels(m metrics.Metric) {
	fold := gpuFold(m)
	cur := map[string][]float64{}
	hist := map[string][][]float64{}
	for _, s := range b.order {
		if s.Instance == "" {
			continue
		}
		if v, ok := b.snaps[s].Current[m.ID]; ok {
			cur[s.Model] = append(cur[s.Model], v)
		}
		h := hist[s.Model]
		if h == nil {
			h = make([][]float64, historyPoints)
			hist[s.Model] = h
		}
		for k, p := range b.points[s] {
			if v, ok := p.Values[m.ID]; ok {
				h[k] = append(h[k], v)
			}
		}
	}
	for model, vs := range cur {
		if s, ok := b.snaps[metrics.Scope{Model: model}]; ok {
			s.Current[m.ID] = fold(vs)
		}
	}
	for model, h := range hist {
		ps, ok := b.points[metrics.Scope{Model: model}]
		if !ok {
			continue
		}
		for k, vs := range h {
			if len(vs) > 0 {
				ps[k].Values[m.ID] = fold(vs)
			}
		}
	}
}

func (b *fleetBuilder) fleet() metrics.Fleet {
	f := metrics.Fleet{At: b.at, Snapshots: make([]metrics.Snapshot, 0, len(b.order))}
	for _, s := range b.order {
		snap := b.snaps[s]
		for _, p := range b.points[s] {
			if len(p.Values) > 0 {
				snap.History = append(snap.History, p)
			}
		}
		f.Snapshots = append(f.Snapshots, *snap)
	}
	return f
}

// gpuFold says how a model's GPU figure follows from its instances': the
// minimum of minima (clocks), the maximum of maxima (power, temperature)
// and the sum of sums (GPUs with XID errors) are exact; means and ratios
// (activity, memory used) are the mean of the instances', exact when the
// instances have the same number of GPUs, as replicas of one model do.
func gpuFold(m metrics.Metric) func([]float64) float64 {
	q := m.PromQL
	switch {
	case strings.HasPrefix(q, "min "):
		return func(vs []float64) float64 {
			out := math.Inf(1)
			for _, v := range vs {
				out = math.Min(out, v)
			}
			return out
		}
	case strings.HasPrefix(q, "max "):
		return func(vs []float64) float64 {
			out := math.Inf(-1)
			for _, v := range vs {
				out = math.Max(out, v)
			}
			return out
		}
	case strings.HasPrefix(q, "sum ") && !strings.Contains(q, " / "):
		return sum
	default:
		return func(vs []float64) float64 { return sum(vs) / float64(len(vs)) }
	}
}

func sum(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}
