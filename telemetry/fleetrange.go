package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/casebook/casebook/metrics"
)

// FleetRange returns, for every scope Scopes lists, one series per id (in
// order) over r, like Range for each scope but read with one range query
// per metric and aggregation level for the whole fleet (see Fleet), never
// one per scope: the detector reads every scope's new minute this way. A
// model's GPU series are folded from its instances' (see gpuFold). Short
// ranges are its use: it does not go through the chart cache or the
// recorded tiers.
func (t *Telemetry) FleetRange(ctx context.Context, ids []string, r metrics.Range) (map[metrics.Scope][]metrics.Series, error) {
	if r.Step <= 0 {
		return nil, errors.New("telemetry: fleet range step must be positive")
	}
	if !r.End.After(r.Start) {
		return nil, errors.New("telemetry: fleet range end must be after its start")
	}
	ms := make([]metrics.Metric, len(ids))
	for i, id := range ids {
		m, ok := metrics.Lookup(id)
		if !ok {
			return nil, fmt.Errorf("telemetry: fleet range: unknown metric %q", id)
		}
		ms[i] = m
	}
	scopes, err := t.Scopes(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: fleet range: %w", err)
	}
	join, engines, err := t.gpuJoin(ctx)
	if err != nil {
		t.log.Warn("gpu join unavailable; GPU metrics left out of the fleet", "err", err)
	}
	gpuOK := err == nil && join.InstanceLabel != ""
	gpuScope := gpuScopes(join, engines)
	qs := t.fleetQueries(ms, join, gpuOK)

	// The range is half-open, as Range's.
	start := r.Start.UTC()
	end := start.Add((r.End.Sub(start) - time.Nanosecond) / r.Step * r.Step)
	win := t.res.rangeWindow(start, r.Step)
	answers := make([][]Result, len(qs))
	errs := make([]error, len(qs))
	g := queryGroup()
	for i, q := range qs {
		g.Go(func() error {
			answers[i], errs[i] = t.querier.Range(ctx, q.expr(win), start, end, r.Step)
			return nil
		})
	}
	g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: fleet range: %w", err)
	}

	col := make(map[string]int, len(ids)) // a metric's place in a scope's series
	for i, id := range ids {
		col[id] = i
	}
	out := make(map[metrics.Scope][]metrics.Series, len(scopes))
	for _, s := range scopes {
		ss := make([]metrics.Series, len(ids))
		for i, id := range ids {
			ss[i] = metrics.Series{Metric: id, Scope: s, Samples: []metrics.Sample{}}
		}
		out[s] = ss
	}
	for i, q := range qs {
		for _, res := range answers[i] {
			s, ok := seriesScope(q.level, res.Labels, t.opts.InstanceLabel, join, gpuScope)
			if !ok || out[s] == nil {
				continue
			}
			if samples := cleanSamples(q.m, res.Samples); len(samples) > 0 {
				out[s][col[q.m.ID]].Samples = samples
			}
		}
	}
	for _, m := range ms {
		if m.Source == metrics.SourceGPU && gpuOK {
			foldSeries(out, scopes, col[m.ID], gpuFold(m))
		}
	}
	return out, nil
}

// foldSeries sets the series in column c of every model scope from its
// instances', instant by instant.
func foldSeries(out map[metrics.Scope][]metrics.Series, scopes []metrics.Scope, c int, fold func([]float64) float64) {
	byModel := map[string]map[time.Time][]float64{}
	for _, s := range scopes {
		if s.Instance == "" {
			continue
		}
		at := byModel[s.Model]
		if at == nil {
			at = map[time.Time][]float64{}
			byModel[s.Model] = at
		}
		for _, x := range out[s][c].Samples {
			at[x.T] = append(at[x.T], x.V)
		}
	}
	for model, at := range byModel {
		series := out[metrics.Scope{Model: model}]
		if series == nil {
			continue
		}
		samples := make([]metrics.Sample, 0, len(at))
		for t, vs := range at {
			samples = append(samples, metrics.Sample{T: t, V: fold(vs)})
		}
		slices.SortFunc(samples, func(a, b metrics.Sample) int { return a.T.Compare(b.T) })
		series[c].Samples = samples
	}
}
