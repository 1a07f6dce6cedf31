package forecast

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// ScopeSeries is one scope's catalog metrics and the labelled windows in
// which the scope was faulty (a fault moves several of its metrics at
// once).
type ScopeSeries struct {
	Scope  string
	Series []metrics.Series
	// Windows are the labelled faults, warm-up included; only Start and
	// End are read.
	Windows []Window
	// EvalFrom is the first evaluated instant: what comes before is
	// warm-up history.
	EvalFrom time.Time
}

// IncidentBacktestOptions configures BacktestIncidents. The zero value
// means the defaults documented on each field.
type IncidentBacktestOptions struct {
	// Detector configures the dynamic detector of every metric; a zero
	// Refit means 6 h, the refit interval of casebook serve.
	Detector DetectorOptions
	// MergeGap is how far apart two alerts of one scope may be and still
	// be one incident (default 5 minutes).
	MergeGap time.Duration
	// Sustain, when positive, makes an incident wait for corroboration:
	// a metric of a second dimension of the scope alerting, or one alert
	// lasting Sustain (zero: every alert opens an incident), as
	// watch.Options.Corroborate does.
	Sustain time.Duration
}

func (o IncidentBacktestOptions) withDefaults() IncidentBacktestOptions {
	if o.Detector.Refit <= 0 {
		o.Detector.Refit = 6 * time.Hour
	}
	o.Detector = o.Detector.withDefaults()
	if o.MergeGap <= 0 {
		o.MergeGap = 5 * time.Minute
	}
	return o
}

// IncidentRow is the incident-level result of one scope.
type IncidentRow struct {
	Scope          string
	Dynamic, Fixed Score
	// DynamicCover and FixedCover are the shares of the evaluated time
	// during which an incident alert was open: a few long incidents that
	// chain many alerts together score well per day but cover much time.
	DynamicCover, FixedCover float64
}

// IncidentResult holds every scope and the totals. Score.Alerts counts
// incident alerts: the merged alerts of one scope.
type IncidentResult struct {
	Rows           []IncidentRow
	Dynamic, Fixed Score
	// DynamicCover and FixedCover are the shares of all scopes' evaluated
	// time with an incident alert open.
	DynamicCover, FixedCover float64
	// Quantile is the fixed thresholds' sensitivity: each metric's
	// threshold is this quantile of its warm-up history on its bad side
	// (1 - Quantile on the low side).
	Quantile float64
	// Metrics is the number of series evaluated over all scopes.
	Metrics int
}

// BacktestIncidents compares the dynamic detector with fixed thresholds
// the way an on-call engineer sees alerts: per incident. For each scope it
// replays every metric through its own Detector (only past data at every
// step), takes the alerts that fired after EvalFrom, and merges the alerts
// of all metrics of the scope that overlap or are at most MergeGap apart
// into one incident alert, as the serve-side grouping of one scope's
// simultaneous anomalies and Alertmanager's group_by do. An incident is a
// true positive when its span overlaps a labelled window; a window is
// detected when an incident overlaps it, with a delay from the window's
// start to the incident's first firing.
//
// The fixed thresholds have one sensitivity for all metrics: each metric's
// threshold is the q-quantile of its warm-up history on its bad side (both
// sides, at q and 1-q, for a metric bad either way), with the detector's
// Consecutive and Clear rules. q is tuned by bisection with the labels at
// hand to the least sensitive value whose incident-level recall reaches
// the dynamic detector's (an oracle tuning that favours the fixed
// thresholds).
func BacktestIncidents(scopes []ScopeSeries, opts IncidentBacktestOptions) IncidentResult {
	opts = opts.withDefaults()
	type job struct{ scope, series int }
	var jobs []job
	alerts := make([][][]interval, len(scopes))
	for i, sc := range scopes {
		alerts[i] = make([][]interval, len(sc.Series))
		for j := range sc.Series {
			jobs = append(jobs, job{i, j})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, jb := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			alerts[jb.scope][jb.series] = detectorAlerts(scopes[jb.scope].Series[jb.series], opts.Detector)
		}()
	}
	wg.Wait()

	res := IncidentResult{Metrics: len(jobs)}
	evals := make([]scopeEval, len(scopes))
	for i, sc := range scopes {
		evals[i] = newScopeEval(sc)
		var all []interval
		for j, as := range alerts[i] {
			for _, a := range evals[i].evaluated(as) {
				a.src = evals[i].metrics[j].family
				all = append(all, a)
			}
		}
		inc := mergeIncidents(all, opts.MergeGap, opts.Sustain)
		res.Rows = append(res.Rows, IncidentRow{Scope: sc.Scope,
			Dynamic: score(inc, evals[i].windows, evals[i].days, overlaps), DynamicCover: evals[i].cover(inc)})
	}
	for _, r := range res.Rows {
		res.Dynamic.add(r.Dynamic)
	}

	k, clear := opts.Detector.Consecutive, opts.Detector.Clear
	fixedAt := func(p float64) []Score {
		out := make([]Score, len(evals))
		for i := range evals {
			out[i] = score(evals[i].fixed(p, k, clear, opts.MergeGap, opts.Sustain), evals[i].windows, evals[i].days, overlaps)
		}
		return out
	}
	total := func(s []Score) int {
		n := 0
		for _, x := range s {
			n += x.Detected
		}
		return n
	}
	// p is the tail probability 1 - q: smaller is less sensitive. Detected
	// windows fall as p falls; find the smallest p that still reaches the
	// dynamic detector's count (or the most sensitive, 0.5, if none does).
	target := res.Dynamic.Detected
	best, bestP := fixedAt(0.5), 0.5
	if total(best) >= target {
		if s := fixedAt(0); total(s) >= target {
			best, bestP = s, 0
		} else {
			lo, hi := math.Log(1e-7), math.Log(0.5) // total(exp(lo)) < target <= total(exp(hi))
			for range 40 {
				mid := (lo + hi) / 2
				if s := fixedAt(math.Exp(mid)); total(s) >= target {
					hi, best, bestP = mid, s, math.Exp(mid)
				} else {
					lo = mid
				}
			}
		}
	}
	res.Quantile = 1 - bestP
	var dynSpan, fixSpan, days float64
	for i := range res.Rows {
		r := &res.Rows[i]
		r.Fixed = best[i]
		r.FixedCover = evals[i].cover(evals[i].fixed(bestP, k, clear, opts.MergeGap, opts.Sustain))
		res.Fixed.add(best[i])
		dynSpan += r.DynamicCover * evals[i].days
		fixSpan += r.FixedCover * evals[i].days
		days += evals[i].days
	}
	res.DynamicCover, res.FixedCover = ratio(dynSpan, days), ratio(fixSpan, days)
	return res
}

// cover is the share of the evaluated span that incidents cover.
func (e scopeEval) cover(incidents []interval) float64 {
	end := e.evalFrom + int64(e.days*24*3600)
	var s int64
	for _, a := range incidents {
		from, to := max(a.start, e.evalFrom), min(a.end, end)
		if to > from {
			s += to - from
		}
	}
	return ratio(float64(s), float64(end-e.evalFrom))
}

// detectorAlerts replays one series through its own Detector and returns
// its alerts; an alert still open at the end ends at the last sample.
func detectorAlerts(s metrics.Series, dopts DetectorOptions) []interval {
	dopts.Scope = s.Scope
	det := NewDetector(dopts)
	var out []interval
	open := -1
	for _, p := range s.Samples {
		a, ok := det.Observe(s.Metric, p.T, p.V)
		if !ok {
			continue
		}
		switch a.State {
		case Firing:
			out = append(out, interval{start: a.Start.Unix(), fired: a.At.Unix(), end: math.MaxInt64})
			open = len(out) - 1
		case Resolved:
			if open >= 0 {
				out[open].end = a.At.Unix()
				open = -1
			}
		}
	}
	if open >= 0 && len(s.Samples) > 0 {
		out[open].end = s.Samples[len(s.Samples)-1].T.Unix()
	}
	return out
}

// mergeIncidents merges alerts that overlap or are at most gap apart into
// one incident each: from the first start to the last end, fired at the
// first firing. With sustain > 0 an incident is corroborated first: it
// fires when an alert of a second source (the metric's dimension, see
// fixedSeries.family) has fired, or when one alert has stayed open for
// sustain, and is dropped if neither happens. The
// result is sorted by start.
func mergeIncidents(alerts []interval, gap, sustain time.Duration) []interval {
	if len(alerts) == 0 {
		return nil
	}
	a := append([]interval(nil), alerts...)
	sort.Slice(a, func(i, j int) bool { return a[i].start < a[j].start })
	g := int64(gap / time.Second)
	var groups [][]interval
	end := int64(math.MinInt64)
	for _, x := range a {
		if len(groups) == 0 || x.start-g > end {
			groups = append(groups, nil)
			end = x.end
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], x)
		end = max(end, x.end)
	}
	var out []interval
	for _, grp := range groups {
		inc := grp[0]
		for _, x := range grp[1:] {
			inc.end = max(inc.end, x.end)
			inc.fired = min(inc.fired, x.fired)
		}
		if sustain > 0 {
			fired, ok := corroborated(grp, int64(sustain/time.Second))
			if !ok {
				continue
			}
			inc.fired = fired
		}
		out = append(out, inc)
	}
	return out
}

// corroborated returns when a group of alerts is corroborated: the
// earliest of a second source's firing and an alert's staying open for
// sustain seconds.
func corroborated(grp []interval, sustain int64) (int64, bool) {
	best := int64(math.MaxInt64)
	byFire := append([]interval(nil), grp...)
	sort.Slice(byFire, func(i, j int) bool { return byFire[i].fired < byFire[j].fired })
	for _, x := range byFire[1:] {
		if x.src != byFire[0].src {
			best = x.fired
			break
		}
	}
	for _, x := range grp {
		if x.end-x.fired >= sustain {
			best = min(best, x.fired+sustain)
		}
	}
	return best, best != math.MaxInt64
}

// scopeEval is one scope prepared for scoring: its evaluated windows and
// days, and per metric the evaluated samples and sorted warm-up values.
type scopeEval struct {
	evalFrom int64
	windows  [][2]int64
	days     float64
	metrics  []fixedSeries
}

type fixedSeries struct {
	bad    metrics.Direction
	family int // the metric's dimension: alerts corroborate across them
	ts     []int64
	vals   []float64
	warmup []float64 // sorted
}

func newScopeEval(sc ScopeSeries) scopeEval {
	e := scopeEval{evalFrom: sc.EvalFrom.Unix()}
	for _, w := range sc.Windows {
		if w.Start.Unix() >= e.evalFrom {
			e.windows = append(e.windows, [2]int64{w.Start.Unix(), w.End.Unix()})
		}
	}
	var last time.Time
	for _, s := range sc.Series {
		m, ok := metrics.Lookup(s.Metric)
		if !ok {
			m.Bad = metrics.Both
		}
		f := fixedSeries{bad: m.Bad, family: slices.Index(metrics.Dimensions, m.Dimension)}
		for _, p := range s.Samples {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if p.T.Before(sc.EvalFrom) {
				f.warmup = append(f.warmup, p.V)
			} else {
				f.ts = append(f.ts, p.T.Unix())
				f.vals = append(f.vals, p.V)
			}
		}
		sort.Float64s(f.warmup)
		e.metrics = append(e.metrics, f)
		if n := len(s.Samples); n > 0 && s.Samples[n-1].T.After(last) {
			last = s.Samples[n-1].T
		}
	}
	if last.After(sc.EvalFrom) {
		e.days = last.Sub(sc.EvalFrom).Hours() / 24
	}
	return e
}

// evaluated keeps the alerts that fired in the evaluated span.
func (e scopeEval) evaluated(alerts []interval) []interval {
	var out []interval
	for _, a := range alerts {
		if a.fired >= e.evalFrom {
			out = append(out, a)
		}
	}
	return out
}

// fixed returns the scope's incident alerts with every metric's threshold
// at tail probability p of its warm-up values on its bad side.
func (e scopeEval) fixed(p float64, k, clear int, gap, sustain time.Duration) []interval {
	var all []interval
	for _, f := range e.metrics {
		if len(f.warmup) == 0 || len(f.vals) == 0 {
			continue
		}
		lo, hi := math.Inf(-1), math.Inf(1)
		if f.bad == metrics.Up || f.bad == metrics.Both {
			hi = quantileSorted(f.warmup, 1-p)
		}
		if f.bad == metrics.Down || f.bad == metrics.Both {
			lo = quantileSorted(f.warmup, p)
		}
		for _, a := range bandAlerts(f.ts, f.vals, lo, hi, k, clear) {
			a.src = f.family
			all = append(all, a)
		}
	}
	return mergeIncidents(all, gap, sustain)
}

// quantileSorted is the q-quantile of sorted values, interpolated
// linearly between order statistics.
func quantileSorted(s []float64, q float64) float64 {
	x := q * float64(len(s)-1)
	i := int(math.Floor(x))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	if i < 0 {
		return s[0]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// bandAlerts runs a static band with the detector's rules: an alert fires
// after k samples in a row outside (lo, hi) and ends after clear samples
// in a row back inside; one still open at the end ends at the last sample.
func bandAlerts(ts []int64, vals []float64, lo, hi float64, k, clear int) []interval {
	var out []interval
	run, in := 0, 0
	var runStart int64
	firing := false
	for i, v := range vals {
		beyond := v > hi || v < lo
		if !firing {
			if !beyond {
				run = 0
				continue
			}
			if run == 0 {
				runStart = ts[i]
			}
			run++
			if run >= k {
				firing, in = true, 0
				out = append(out, interval{start: runStart, fired: ts[i], end: math.MaxInt64})
			}
			continue
		}
		if beyond {
			in = 0
			continue
		}
		in++
		if in >= clear {
			firing, run = false, 0
			out[len(out)-1].end = ts[i]
		}
	}
	if firing {
		out[len(out)-1].end = ts[len(ts)-1]
	}
	return out
}
