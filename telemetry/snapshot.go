package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/casebook/casebook/metrics"
)

// Snapshot history convention: 65 points at a 1-minute step, on whole
// minutes, the last one the whole minute at or before at-1m (see
// historyGrid). The diagnosis takes the hour up to at-6m as the
// baseline and the last five minutes as the recent points that show which
// metric moved first (diagnose.RecentWindow).
const (
	historyPoints = 65
	historyStep   = time.Minute
	historyGap    = time.Minute
)

// historyGrid returns the first and last history instant of a reading at
// `at`. The instants lie on whole minutes, so that readings a few seconds
// apart share them and a reading of the fleet can reuse the settled
// points of the one before (fleetHistory).
func historyGrid(at time.Time) (start, end time.Time) {
	end = at.Add(-historyGap).Truncate(historyStep)
	return end.Add(-(historyPoints - 1) * historyStep), end
}

// queryParallelism bounds the catalog queries in flight for one request.
const queryParallelism = 4

// queryGroup runs one request's queries, at most queryParallelism at a
// time. Its functions keep their own errors (one failed metric must not
// cancel the others) and return nil.
func queryGroup() *errgroup.Group {
	var g errgroup.Group
	g.SetLimit(queryParallelism)
	return &g
}

// Snapshot captures the state of scope at `at`: every catalog metric's
// current value (over the last minute where live data is dense) and 65
// minutes of 1-minute history before it: an hour of baseline and the five
// minutes before the current one.
// Values that are not finite (a ratio over an idle minute) are left out,
// so the field is missing rather than wrong. It fails only when no metric
// could be queried at all.
func (t *Telemetry) Snapshot(ctx context.Context, scope metrics.Scope, at time.Time) (metrics.Snapshot, error) {
	if at.IsZero() {
		at = t.now()
	}
	at = at.UTC().Truncate(time.Millisecond)
	sel, gpuOK, es, err := t.scopeSelectors(ctx, scope)
	if err != nil {
		return metrics.Snapshot{}, fmt.Errorf("telemetry: snapshot %s: %w", scope, err)
	}
	absent := map[string]string{}
	hStart, hEnd := historyGrid(at)
	curWin := t.res.currentWindow(at)
	histWin := t.res.rangeWindow(hStart, historyStep)
	now := t.now()

	type answer struct {
		id      string
		cur     float64
		curOK   bool
		hist    []metrics.Sample
		curErr  error
		histErr error
	}
	answers := make([]answer, len(metrics.Catalog))
	g := queryGroup()
	for i, m := range metrics.Catalog {
		if m.Source == metrics.SourceGPU && !gpuOK {
			continue // no id: not queried, and not counted as answered
		}
		m = engineOf(m, es)
		if m.PromQL == "" {
			absent[m.ID] = m.Absent // the scope's engine has no equivalent
			continue
		}
		answers[i].id = m.ID
		g.Go(func() error {
			a := &answers[i]
			rs, err := t.querier.Instant(ctx, m.Query(sel, curWin), at)
			if err != nil {
				a.curErr = err
			} else if v, ok := firstValue(m, rs); ok {
				a.cur, a.curOK = v, true
			}
			// The history's minutes are settled but for the last few:
			// the range cache evaluates only those on the next reading.
			hq := m.Query(sel, histWin)
			a.hist, a.histErr = t.ranges.get(ctx, hq, hStart, hEnd, historyStep, now,
				func(ctx context.Context, from, to time.Time) ([]metrics.Sample, error) {
					rs, err := t.querier.Range(ctx, hq, from, to, historyStep)
					if err != nil {
						return nil, err
					}
					return cleanSamples(m, firstSeries(rs)), nil
				})
			return nil
		})
	}
	g.Wait()

	snap := metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{}, Engine: es.Engine}
	if len(absent) > 0 {
		snap.Absent = absent
	}
	points := make([]metrics.Point, historyPoints)
	for i := range points {
		points[i] = metrics.Point{At: hStart.Add(time.Duration(i) * historyStep), Values: metrics.Values{}}
	}
	var errs []error
	queried := 0
	for _, a := range answers {
		if a.curErr != nil {
			errs = append(errs, a.curErr)
		}
		if a.histErr != nil {
			errs = append(errs, a.histErr)
		}
		if a.curErr != nil || a.histErr != nil || a.id == "" {
			continue
		}
		queried++
		if a.curOK {
			snap.Current[a.id] = a.cur
		}
		for _, s := range a.hist {
			// Prometheus answers at hStart + k*step exactly; VictoriaMetrics
			// aligns a range's start to a multiple of the step, so its
			// samples land up to a step away: take the nearest grid point.
			off := s.T.Sub(hStart)
			k := int((off + historyStep/2) / historyStep)
			if off > -historyStep/2 && k < historyPoints {
				points[k].Values[a.id] = s.V
			}
		}
	}
	if len(errs) > 0 && queried == 0 {
		return metrics.Snapshot{}, fmt.Errorf("telemetry: snapshot %s at %s: %w", scope, at.Format(time.RFC3339), errs[0])
	}
	if len(errs) > 0 {
		t.log.Warn("snapshot incomplete", "scope", scope.String(), "failed_queries", len(errs), "first_error", errs[0])
	}
	for _, p := range points {
		if len(p.Values) > 0 {
			snap.History = append(snap.History, p)
		}
	}
	return snap, nil
}

// Range returns one series per id, in order, over r. Missing data gives a
// series with no samples; an unknown id is an error.
func (t *Telemetry) Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error) {
	if r.Step <= 0 {
		return nil, errors.New("telemetry: range step must be positive")
	}
	if !r.End.After(r.Start) {
		return nil, errors.New("telemetry: range end must be after its start")
	}
	ms := make([]metrics.Metric, len(ids))
	for i, id := range ids {
		m, ok := metrics.Lookup(id)
		if !ok {
			return nil, fmt.Errorf("telemetry: range: unknown metric %q", id)
		}
		ms[i] = m
	}
	sel, gpuOK, es, err := t.scopeSelectors(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("telemetry: range %s: %w", scope, err)
	}
	start := alignedStart(r.Start.UTC(), r.Step)
	if !r.End.After(start) {
		start = start.Add(-r.Step)
	}
	// The range is half-open; the last evaluation is the last step before End.
	n := (r.End.Sub(start) - time.Nanosecond) / r.Step
	end := start.Add(n * r.Step)
	win := t.res.rangeWindow(start, r.Step)
	now := t.now()
	tier := ""
	if t.opts.PrometheusURL != "" {
		tier = recordedTier(end.Sub(start), r.Step, t.opts.RawRetention, t.opts.MinuteRetention)
	}

	out := make([]metrics.Series, len(ids))
	errs := make([]error, len(ids))
	g := queryGroup()
	for i, m := range ms {
		out[i] = metrics.Series{Metric: m.ID, Scope: scope, Samples: []metrics.Sample{}}
		if m.Source == metrics.SourceGPU && !gpuOK {
			continue
		}
		m = engineOf(m, es)
		if m.PromQL == "" {
			continue // the scope's engine has no equivalent
		}
		g.Go(func() error {
			q := m.Query(sel, win)
			eval := func(ctx context.Context, from, to time.Time) ([]metrics.Sample, error) {
				if tier != "" {
					if ss, ok := t.rangeRecorded(ctx, m, sel, scope.Instance == "", tier, from, to, r.Step); ok {
						return ss, nil
					}
				}
				rs, err := t.querier.Range(ctx, q, from, to, r.Step)
				if err != nil {
					return nil, err
				}
				return cleanSamples(m, firstSeries(rs)), nil
			}
			ss, err := t.ranges.get(ctx, q, start, end, r.Step, now, eval)
			if err != nil {
				errs[i] = err
				return nil
			}
			if ss != nil {
				out[i].Samples = ss
			}
			return nil
		})
	}
	g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: range %s: %w", scope, err)
	}
	return out, nil
}

// firstValue returns the single value of an aggregated instant answer.
func firstValue(m metrics.Metric, rs []Result) (float64, bool) {
	for _, r := range rs {
		for _, s := range r.Samples {
			if v, ok := clean(m, s.V); ok {
				return v, true
			}
		}
	}
	return 0, false
}

// firstSeries returns the samples of the first series of an answer: every
// catalog expression aggregates to one series.
func firstSeries(rs []Result) []metrics.Sample {
	if len(rs) == 0 {
		return nil
	}
	return rs[0].Samples
}

func cleanSamples(m metrics.Metric, ss []metrics.Sample) []metrics.Sample {
	out := make([]metrics.Sample, 0, len(ss))
	for _, s := range ss {
		if v, ok := clean(m, s.V); ok {
			out = append(out, metrics.Sample{T: s.T, V: v})
		}
	}
	return out
}

// clampTolerance is how far (as a fraction of the valid span, or absolute
// for unbounded metrics) a value may stray outside the catalog bounds and
// still be clamped rather than dropped. Rate extrapolation on the two sides
// of a ratio can overshoot 1 or undershoot 0 slightly.
const clampTolerance = 0.02

// clean drops values that are not finite and clamps small overshoots of a
// metric's bounds; a value far outside them is dropped as wrong.
func clean(m metrics.Metric, v float64) (float64, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	span := 1.0
	if m.Max > m.Min {
		span = m.Max - m.Min
	}
	if v < m.Min {
		if m.Min-v > clampTolerance*span {
			return 0, false
		}
		v = m.Min
	}
	if m.Max > 0 && v > m.Max {
		if v-m.Max > clampTolerance*span {
			return 0, false
		}
		v = m.Max
	}
	return v, true
}
