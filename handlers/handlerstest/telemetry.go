package handlerstest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/casebook/casebook/metrics"
)

// ErrUnknownScope is returned for a scope the fake has no data for.
var ErrUnknownScope = errors.New("handlerstest: unknown scope")

// Options shapes the fake cluster.
type Options struct {
	End    time.Time     // last sample; zero means 2026-11-30T05:00:00Z
	Span   time.Duration // history length; zero means 7 days
	Models []Model       // zero means DefaultModels
	// Incident, when set, puts a KV-cache eviction storm on this scope
	// during the last 8 minutes (and half of it on its model).
	Incident metrics.Scope
	Status   []metrics.SourceStatus
}

// Model is one model and its instances.
type Model struct {
	Name      string
	Instances []string
	Gateway   bool // whether gateway series exist
	SpecDec   bool // whether speculative decoding series exist
}

// DefaultModels is a small cluster: two models with two instances each.
var DefaultModels = []Model{
	{Name: "llama-70b", Instances: []string{"llama-70b-0", "llama-70b-1"}, Gateway: true, SpecDec: true},
	{Name: "qwen-7b", Instances: []string{"qwen-7b-0", "qwen-7b-1"}},
}

// DefaultEnd is the end of the fake's data unless Options.End is set.
var DefaultEnd = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// stormLen is how many minutes the incident has been going on at End.
const stormLen = 8

// Telemetry is an in-memory handlers.Telemetry with one-minute data.
type Telemetry struct {
	Start, End time.Time
	Step       time.Duration
	scopes     []metrics.Scope
	data       map[metrics.Scope]map[string][]float64
	status     []metrics.SourceStatus
	// Err, when set, is returned by every call.
	Err error
	// FleetCached makes CachedFleet answer with a reading of the fleet,
	// as after a viewer of the overview.
	FleetCached bool
	// FleetErr, when set, is returned by Fleet: pages capture their
	// scopes one by one.
	FleetErr error
}

type base struct {
	v     float64
	load  float64 // how much the daily load cycle moves it (0..1)
	noise float64 // relative noise
}

var bases = map[string]base{
	metrics.GatewayE2E: {2950, .15, .03}, metrics.E2E: {2800, .15, .03}, metrics.E2EP99: {6400, .2, .05},
	metrics.TTFT: {185, .25, .05}, metrics.TTFTP99: {620, .3, .08}, metrics.TPOT: {13.5, .1, .02},
	metrics.TPOTP99: {29, .12, .04}, metrics.QueueTime: {38, .5, .1}, metrics.PrefillTime: {142, .2, .05},
	metrics.DecodeTime: {2580, .12, .03}, metrics.ThroughputRPS: {18, .6, .04}, metrics.ArrivalRPS: {18.1, .6, .04},
	metrics.PromptTPS: {16500, .6, .05}, metrics.GenerationTPS: {3400, .6, .04}, metrics.RunningSeqs: {44, .5, .05},
	metrics.QueueDepth: {3, .8, .25}, metrics.MeanPromptTokens: {910, .05, .04}, metrics.SMUtil: {.71, .3, .03},
	metrics.TensorActive: {.46, .3, .04}, metrics.DRAMActive: {.56, .3, .03}, metrics.GPUMemUsedFrac: {.91, 0, .002},
	metrics.KVCacheUsage: {.62, .4, .04}, metrics.SMClock: {1755, 0, .004}, metrics.MemClock: {2619, 0, .001},
	metrics.Power: {520, .25, .03}, metrics.GPUTemp: {64, .12, .015}, metrics.KVCacheHitRate: {.82, 0, .015},
	metrics.RejectionRate: {.27, 0, .04}, metrics.ErrorRate: {.002, .2, .3}, metrics.PreemptionRate: {.05, .5, .3},
}

// NewTelemetry generates the fake cluster's series deterministically.
func NewTelemetry(opts Options) *Telemetry {
	if opts.End.IsZero() {
		opts.End = DefaultEnd
	}
	if opts.Span == 0 {
		opts.Span = 7 * 24 * time.Hour
	}
	if opts.Models == nil {
		opts.Models = DefaultModels
	}
	t := &Telemetry{
		End: opts.End.Truncate(time.Minute), Step: time.Minute,
		data: map[metrics.Scope]map[string][]float64{}, status: opts.Status,
	}
	t.Start = t.End.Add(-opts.Span)
	n := int(opts.Span/time.Minute) + 1
	seed := uint64(1)
	for _, m := range opts.Models {
		scopes := []metrics.Scope{{Model: m.Name}}
		for _, in := range m.Instances {
			scopes = append(scopes, metrics.Scope{Model: m.Name, Instance: in})
		}
		for si, s := range scopes {
			series := map[string][]float64{}
			for _, id := range metrics.IDs() {
				if !m.Gateway && (id == metrics.GatewayE2E || id == metrics.ArrivalRPS) {
					continue
				}
				if !m.SpecDec && id == metrics.RejectionRate {
					continue
				}
				seed++
				series[id] = t.generate(id, n, seed, m.Name == "qwen-7b", si)
			}
			incident := 0.0
			switch {
			case s == opts.Incident:
				incident = 1
			case opts.Incident.Instance != "" && s == metrics.Scope{Model: opts.Incident.Model}:
				incident = .5
			}
			if incident > 0 {
				storm(series, n, incident)
			}
			// A scrape outage an hour long two days ago on one instance.
			if s.Instance != "" && si == 2 {
				gapEnd := n - 2*24*60
				for _, vs := range series {
					for i := gapEnd - 60; i < gapEnd && i >= 0; i++ {
						vs[i] = math.NaN()
					}
				}
			}
			t.data[s] = series
			t.scopes = append(t.scopes, s)
		}
	}
	sort.Slice(t.scopes, func(i, j int) bool { return t.scopes[i].String() < t.scopes[j].String() })
	return t
}

func (t *Telemetry) generate(id string, n int, seed uint64, small bool, inst int) []float64 {
	b := bases[id]
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	scale := 1.0
	if small {
		switch id {
		case metrics.ThroughputRPS, metrics.ArrivalRPS, metrics.PromptTPS, metrics.GenerationTPS:
			scale = 2.4
		case metrics.E2E, metrics.E2EP99, metrics.TTFT, metrics.TTFTP99, metrics.TPOT, metrics.TPOTP99, metrics.PrefillTime, metrics.DecodeTime, metrics.GatewayE2E:
			scale = .38
		}
	}
	scale *= 1 + .03*float64(inst)
	m, _ := metrics.Lookup(id)
	ar := 0.0
	for i := range out {
		at := t.Start.Add(time.Duration(i) * time.Minute)
		hour := float64(at.Hour()) + float64(at.Minute())/60
		cycle := math.Sin(2 * math.Pi * (hour - 9) / 24)
		if at.Weekday() == time.Saturday || at.Weekday() == time.Sunday {
			cycle -= .35
		}
		ar = .8*ar + r.NormFloat64()*b.noise
		v := b.v * scale * (1 + b.load*.45*cycle) * (1 + ar)
		if m.Max > 0 {
			v = math.Min(v, m.Max)
		}
		out[i] = math.Max(v, 0)
	}
	return out
}

// storm overlays a KV-cache eviction storm on the last 8 minutes, so that
// the snapshot baseline (which ends 6 minutes before now) stays clean.
func storm(series map[string][]float64, n int, k float64) {
	ramp := func(i int) float64 { return k * math.Min(1, float64(i-(n-stormLen)+1)/3) }
	set := func(id string, f func(v, a float64) float64) {
		vs, ok := series[id]
		if !ok {
			return
		}
		for i := n - stormLen; i < n; i++ {
			vs[i] = f(vs[i], ramp(i))
		}
	}
	set(metrics.KVCacheHitRate, func(v, a float64) float64 { return v - a*.47 })
	set(metrics.KVCacheUsage, func(v, a float64) float64 { return v + a*(.985-v) })
	set(metrics.PreemptionRate, func(v, a float64) float64 { return v + a*3.4 })
	set(metrics.TTFT, func(v, a float64) float64 { return v * (1 + a*6.5) })
	set(metrics.TTFTP99, func(v, a float64) float64 { return v * (1 + a*5) })
	set(metrics.QueueTime, func(v, a float64) float64 { return v * (1 + a*14) })
	set(metrics.PrefillTime, func(v, a float64) float64 { return v * (1 + a*4) })
	set(metrics.E2E, func(v, a float64) float64 { return v + a*1450 })
	set(metrics.GatewayE2E, func(v, a float64) float64 { return v + a*1460 })
	set(metrics.E2EP99, func(v, a float64) float64 { return v * (1 + a*.9) })
	set(metrics.QueueDepth, func(v, a float64) float64 { return v + a*38 })
	set(metrics.PromptTPS, func(v, a float64) float64 { return v * (1 + a*.5) })
	set(metrics.ThroughputRPS, func(v, a float64) float64 { return v * (1 - a*.18) })
	set(metrics.GenerationTPS, func(v, a float64) float64 { return v * (1 - a*.18) })
}

// Scopes implements handlers.Telemetry.
func (t *Telemetry) Scopes(ctx context.Context) ([]metrics.Scope, error) {
	if t.Err != nil {
		return nil, t.Err
	}
	return append([]metrics.Scope(nil), t.scopes...), nil
}

func (t *Telemetry) index(at time.Time) int {
	return int(at.Sub(t.Start) / t.Step)
}

// value returns the one-minute value at or before at, NaN when unknown.
func (t *Telemetry) value(vs []float64, at time.Time) float64 {
	i := t.index(at)
	if at.Before(t.Start) || i >= len(vs) || vs == nil {
		return math.NaN()
	}
	return vs[i]
}

// Range implements handlers.Telemetry: each point is the mean of the
// one-minute values in the step ending at it.
func (t *Telemetry) Range(ctx context.Context, s metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error) {
	if t.Err != nil {
		return nil, t.Err
	}
	data, ok := t.data[s]
	if !ok {
		return nil, fmt.Errorf("%w %s", ErrUnknownScope, s)
	}
	step := r.Step
	if step <= 0 {
		step = time.Minute
	}
	out := make([]metrics.Series, len(ids))
	for k, id := range ids {
		out[k] = metrics.Series{Metric: id, Scope: s}
		vs, ok := data[id]
		if !ok {
			continue
		}
		start := r.Start.Truncate(step)
		if start.Before(r.Start) {
			start = start.Add(step)
		}
		samples := make([]metrics.Sample, 0, int(r.End.Sub(start)/step)+1)
		for at := start; !at.After(r.End); at = at.Add(step) {
			v := t.windowMean(vs, at.Add(-step), at)
			if !math.IsNaN(v) {
				samples = append(samples, metrics.Sample{T: at, V: v})
			}
		}
		out[k].Samples = samples
	}
	return out, nil
}

func (t *Telemetry) windowMean(vs []float64, from, to time.Time) float64 {
	hi := t.index(to)
	lo := t.index(from) + 1
	if lo > hi {
		lo = hi
	}
	lo, hi = max(lo, 0), min(hi, len(vs)-1)
	sum, n := 0.0, 0
	for i := lo; i <= hi; i++ {
		if !math.IsNaN(vs[i]) {
			sum += vs[i]
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// Snapshot implements handlers.Telemetry with the baseline hour of the
// history convention: 60 one-minute points over [at-65m, at-6m], without
// the recent minutes.
func (t *Telemetry) Snapshot(ctx context.Context, s metrics.Scope, at time.Time) (metrics.Snapshot, error) {
	if t.Err != nil {
		return metrics.Snapshot{}, t.Err
	}
	data, ok := t.data[s]
	if !ok {
		return metrics.Snapshot{}, fmt.Errorf("%w %s", ErrUnknownScope, s)
	}
	at = at.UTC()
	snap := metrics.Snapshot{At: at, Scope: s, Current: metrics.Values{}}
	for id, vs := range data {
		if v := t.value(vs, at); !math.IsNaN(v) {
			snap.Current[id] = v
		}
	}
	for i := 0; i < 60; i++ {
		pt := at.Add(-65*time.Minute + time.Duration(i)*time.Minute)
		p := metrics.Point{At: pt, Values: metrics.Values{}}
		for id, vs := range data {
			if v := t.value(vs, pt); !math.IsNaN(v) {
				p.Values[id] = v
			}
		}
		snap.History = append(snap.History, p)
	}
	return snap, nil
}

// Status implements handlers.Telemetry.
func (t *Telemetry) Status() []metrics.SourceStatus {
	return append([]metrics.SourceStatus(nil), t.status...)
}

// Fleet implements handlers.Telemetry: every scope's Snapshot, and two
// GPUs per instance.
func (t *Telemetry) Fleet(ctx context.Context, at time.Time) (metrics.Fleet, error) {
	if t.FleetErr != nil {
		return metrics.Fleet{}, t.FleetErr
	}
	scopes, err := t.Scopes(ctx)
	if err != nil {
		return metrics.Fleet{}, err
	}
	f := metrics.Fleet{At: at, GPUs: map[metrics.Scope]int{}}
	for _, s := range scopes {
		snap, err := t.Snapshot(ctx, s, at)
		if err != nil {
			return metrics.Fleet{}, err
		}
		f.Snapshots = append(f.Snapshots, snap)
		if s.Instance != "" {
			f.GPUs[s] = 2
		}
	}
	return f, nil
}

// CachedFleet implements handlers.Telemetry: Fleet's reading when
// FleetCached is set.
func (t *Telemetry) CachedFleet(at time.Time) (metrics.Fleet, bool) {
	if !t.FleetCached {
		return metrics.Fleet{}, false
	}
	f, err := t.Fleet(context.Background(), at)
	return f, err == nil
}
