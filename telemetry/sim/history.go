package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// HistoryOptions configure History. Zero values mean the defaults
// documented on each field.
type HistoryOptions struct {
	// Models is the number of simulated models, one scope each (default 2).
	Models int
	// Warmup is the history before the evaluated weeks (default 14 days).
	Warmup time.Duration
	// Weeks is the number of evaluated weeks after the warm-up (default 2).
	Weeks int
	// FaultsPerDay is the mean rate of injected faults per scope and day
	// (default 1).
	FaultsPerDay float64
	// Seed makes the history reproducible.
	Seed int64
	// Start is the first minute (default 2026-01-05 00:00 UTC, a Monday).
	Start time.Time
}

func (o HistoryOptions) withDefaults() HistoryOptions {
	if o.Models <= 0 {
		o.Models = 2
	}
	if o.Warmup <= 0 {
		o.Warmup = 14 * 24 * time.Hour
	}
	if o.Weeks <= 0 {
		o.Weeks = 2
	}
	if !(o.FaultsPerDay > 0) {
		o.FaultsPerDay = 1
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	}
	return o
}

// FaultWindow is one injected fault: its scope is faulty in [Start, End).
type FaultWindow struct {
	Start, End time.Time
	Cause      string
	Severity   float64
}

// ScopeHistory is the catalog metrics of one model scope at 1-minute steps
// and the faults injected into it.
type ScopeHistory struct {
	Scope metrics.Scope
	// Series holds one series per catalog metric the scope reported, in
	// catalog order; a minute where a metric had no value (no finished
	// request, say) has no sample.
	Series []metrics.Series
	// Faults are the injected windows in time order, warm-up included.
	Faults []FaultWindow
	// EvalFrom is the end of the warm-up: the first evaluated minute.
	EvalFrom time.Time
}

// Quiet periods of History's fault plan on one scope.
const (
	historyQuiet    = 2 * 24 * time.Hour // no fault in the first two days
	historyFaultGap = 30 * time.Minute   // from a fault's end to the next start
)

// History runs the simulated cluster over Warmup plus Weeks at the corpus's
// physics step, one model per cluster with two instances of two GPUs, and
// records the model scope's catalog values once a minute, computed from
// the exposition as the catalog's PromQL does (the same captures and
// arithmetic as the labelled corpus). Faults arrive on each scope as a
// Poisson process of FaultsPerDay, none in the first two days: the cause
// is drawn uniformly from metrics.FaultCauses(), the severity from 0.3..1
// and the duration from 10..90 minutes (log-uniform), with at least 30
// minutes between one fault's end and the next one's start. The result is
// deterministic for a seed.
func History(opts HistoryOptions) []ScopeHistory {
	opts = opts.withDefaults()
	out := make([]ScopeHistory, opts.Models)
	var wg sync.WaitGroup
	for i := range opts.Models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = scopeHistory(opts, i)
		}()
	}
	wg.Wait()
	return out
}

// planFaults draws the fault windows of one scope over [start, end).
func planFaults(rng *rand.Rand, start, end time.Time, perDay float64) []FaultWindow {
	causes := metrics.FaultCauses()
	var out []FaultWindow
	meanGap := float64(24*time.Hour) / perDay
	t := start.Add(historyQuiet)
	for {
		t = t.Add(time.Duration(rng.ExpFloat64() * meanGap)).Truncate(time.Minute)
		dur := time.Duration(math.Exp(math.Log(10)+rng.Float64()*(math.Log(90)-math.Log(10))) * float64(time.Minute)).Round(time.Minute)
		if !t.Add(dur).Before(end) {
			return out
		}
		out = append(out, FaultWindow{Start: t, End: t.Add(dur), Cause: causes[rng.IntN(len(causes))],
			Severity: 0.3 + 0.7*rng.Float64()})
		t = t.Add(dur + historyFaultGap)
	}
}

func scopeHistory(opts HistoryOptions, i int) ScopeHistory {
	seed := opts.Seed*7919 + int64(i)
	rng := rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed0000+uint64(i)))
	evalFrom := opts.Start.Add(opts.Warmup)
	end := evalFrom.Add(time.Duration(opts.Weeks) * 7 * 24 * time.Hour)

	// The physics starts a few minutes early so the first minute has a
	// previous capture and the engines have traffic in flight.
	c := &Cluster{seed: seed, now: opts.Start.Add(-5 * time.Minute), step: scenarioStep}
	c.addModel(modelSpec(i), 2, 2)
	m := c.models[0]
	scope := metrics.Scope{Model: m.spec.Name}
	h := ScopeHistory{Scope: scope, EvalFrom: evalFrom, Faults: planFaults(rng, opts.Start, end, opts.FaultsPerDay)}
	for k, f := range h.Faults {
		c.faults = append(c.faults, faultEntry{id: "h" + strconv.Itoa(k), Fault: Fault{Cause: f.Cause, Scope: scope,
			Severity: f.Severity, Start: f.Start, Duration: f.End.Sub(f.Start)}})
	}

	ids := metrics.IDs()
	pos := make(map[string]int, len(ids))
	series := make([]metrics.Series, len(ids))
	for j, id := range ids {
		pos[id] = j
		series[j] = metrics.Series{Metric: id, Scope: scope}
	}
	snap := func() []capture {
		row := make([]capture, len(m.instances))
		for j, in := range m.instances {
			row[j] = captureOf(in)
		}
		return row
	}
	c.advance(opts.Start.Add(-time.Minute))
	prev := snap()
	for t := opts.Start; t.Before(end); t = t.Add(time.Minute) {
		// Ended faults no longer act: drop them from the physics loop.
		for len(c.faults) > 0 && c.faults[0].Start.Add(c.faults[0].Duration).Before(c.now) {
			c.faults = c.faults[1:]
		}
		c.advance(t)
		cur := snap()
		for id, v := range catalogValues(prev, cur, true) {
			if j, ok := pos[id]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				series[j].Samples = append(series[j].Samples, metrics.Sample{T: t, V: v})
			}
		}
		prev = cur
	}
	for _, s := range series {
		if len(s.Samples) > 0 {
			h.Series = append(h.Series, s)
		}
	}
	return h
}
