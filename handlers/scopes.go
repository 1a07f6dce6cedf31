package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// Scopes serves the live view of one model or instance.
type Scopes struct {
	d  *Deps
	fc Forecaster
}

// Forecaster gives the forecast band of one scope's metric over a window,
// sampled every step; ok is false when it has no model of the metric yet.
// The serve-side detector (*watch.Watcher) implements it.
type Forecaster interface {
	Band(scope metrics.Scope, metric string, start, end time.Time, step time.Duration) (lower, upper []metrics.Sample, ok bool)
}

// chartDef is one chart of a dimension panel: its metrics share a unit.
type chartDef struct {
	id, title, unit string
	ids             []string
}

// panelDefs lays out the live view: the four dimensions, each with charts
// of the metrics that matter most for it.
var panelDefs = []struct {
	dim    metrics.Dimension
	charts []chartDef
}{
	{metrics.Latency, []chartDef{
		{"latency-request", "Request latency", "ms", []string{metrics.GatewayE2E, metrics.E2E, metrics.TTFT, metrics.QueueTime}},
		{"latency-token", "Per-token latency", "ms", []string{metrics.TPOT, metrics.TPOTP99}},
	}},
	{metrics.Throughput, []chartDef{
		{"throughput-requests", "Requests", "req/s", []string{metrics.ArrivalRPS, metrics.ThroughputRPS}},
		{"throughput-tokens", "Tokens", "tok/s", []string{metrics.PromptTPS, metrics.GenerationTPS}},
		{"throughput-batch", "Batch and queue", "count", []string{metrics.RunningSeqs, metrics.QueueDepth}},
	}},
	{metrics.Utilization, []chartDef{
		{"util-activity", "GPU and KV-cache activity", "ratio", []string{metrics.SMUtil, metrics.TensorActive, metrics.DRAMActive, metrics.KVCacheUsage, metrics.GPUMemUsedFrac}},
		{"util-clocks", "Clocks", "MHz", []string{metrics.SMClock, metrics.MemClock}},
	}},
	{metrics.Quality, []chartDef{
		{"quality-rates", "Cache, drafts and errors", "ratio", []string{metrics.KVCacheHitRate, metrics.RejectionRate, metrics.ErrorRate}},
		{"quality-preemptions", "Preemptions", "1/s", []string{metrics.PreemptionRate}},
	}},
}

// waterfallIDs are the metrics the latency decomposition reads.
var waterfallIDs = []string{
	metrics.GatewayE2E, metrics.E2E, metrics.TTFT, metrics.TPOT, metrics.ThroughputRPS,
	metrics.GenerationTPS, metrics.QueueTime, metrics.PrefillTime, metrics.DecodeTime,
}

// scopeRangeIDs are the metrics a live view reads over its window: the
// charts' and the waterfall's, each once.
var scopeRangeIDs = func() []string {
	var ids []string
	for _, p := range panelDefs {
		for _, cd := range p.charts {
			ids = append(ids, cd.ids...)
		}
	}
	ids = append(ids, waterfallIDs...)
	slices.Sort(ids)
	return slices.Compact(ids)
}()

// resolveScope reads :model and :instance and checks that the scope has
// data. Unknown names are a 400 that names the parameter.
func resolveScope(ctx context.Context, t Telemetry, c echo.Context) (metrics.Scope, []metrics.Scope, error) {
	model, err := url.PathUnescape(c.Param("model"))
	if err != nil {
		return metrics.Scope{}, nil, paramError("model", "param.segment")
	}
	s := metrics.Scope{Model: model}
	if err := checkName("model", s.Model); err != nil {
		return s, nil, err
	}
	if raw := c.Param("instance"); raw != "" {
		inst, err := url.PathUnescape(raw)
		if err != nil {
			return s, nil, paramError("instance", "param.segment")
		}
		s.Instance = inst
		if err := checkName("instance", s.Instance); err != nil {
			return s, nil, err
		}
	}
	all, err := t.Scopes(ctx)
	if err != nil {
		return s, nil, fmt.Errorf("scopes: list: %w", err)
	}
	var modelKnown, scopeKnown bool
	for _, a := range all {
		if a.Model == s.Model {
			modelKnown = true
			if a.Instance == s.Instance {
				scopeKnown = true
			}
		}
	}
	switch {
	case !modelKnown:
		return s, nil, paramError("model", "param.no_model", strconv.Quote(s.Model))
	case !scopeKnown:
		return s, nil, paramError("instance", "param.no_instance", strconv.Quote(s.Model), strconv.Quote(s.Instance))
	}
	return s, all, nil
}

// Show renders the live view.
func (h *Scopes) Show(c echo.Context) error {
	ctx := c.Request().Context()
	scope, all, err := resolveScope(ctx, h.d.Telemetry, c)
	if err != nil {
		return err
	}
	w, err := ParseWindow(c.QueryParams(), h.d.Now())
	if err != nil {
		return err
	}
	vm, err := h.view(ctx, scope, all, w)
	if err != nil {
		return err
	}
	if isFragment(c) {
		return render(c, http.StatusOK, views.ScopeCharts(vm))
	}
	return render(c, http.StatusOK, views.ScopePage(vm))
}

func (h *Scopes) view(ctx context.Context, scope metrics.Scope, all []metrics.Scope, w TimeWindow) (views.ScopeView, error) {
	query := views.RangeQuery(w.Preset, w.From, w.To)
	vm := views.ScopeView{
		Layout:         h.d.layout(scope.String(), views.NavOverview),
		Scope:          scope,
		DiagnoseAction: views.DiagnosePath(scope),
		Range: views.RangeView{
			Preset: w.Preset, From: w.From, To: w.To, Step: w.Step,
			FromInput: w.From.UTC().Format(time.RFC3339),
			ToInput:   w.To.UTC().Format(time.RFC3339),
		},
	}
	vm.Layout.Refresh = w.Preset != ""
	// The charts' series are read while the status is: the two are the
	// page's main queries and independent of each other.
	var series []metrics.Series
	var rangeErr error
	ranged := make(chan struct{})
	go func() {
		defer close(ranged)
		series, rangeErr = h.d.Telemetry.Range(ctx, scope, scopeRangeIDs, w.Range())
	}()
	defer func() { <-ranged }() // an early return leaves no reader behind
	vm.Coverage = h.d.coverageView(ctx, scope)
	for _, p := range views.RangePresets {
		vm.Range.Presets = append(vm.Range.Presets, views.ScopeLink{Label: p.Name, Href: views.ScopePath(scope, url.Values{"range": {p.Name}})})
	}
	// The fleet's reading, classified, gives the scope's status and its
	// instances' rows: a model's live view takes the latest (shared with
	// the overview and every other view), other views one that is recent
	// enough if there is one.
	sf, err := h.d.fleetAt(ctx, scope, w)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "scopes: read the fleet", "err", err)
	}
	if scope.Instance == "" {
		var insts []metrics.Scope
		for _, a := range all {
			if a.Model == scope.Model && a.Instance != "" {
				insts = append(insts, a)
				vm.Instances = append(vm.Instances, views.ScopeLink{Label: a.Instance, Href: views.ScopePath(a, query)})
			}
		}
		// One slow replica hides in a model's means: show each instance's
		// state at the end of the window, worst first.
		vm.InstanceRows = h.d.scopeRows(ctx, insts, w.To, sf)
		for i := range vm.InstanceRows {
			vm.InstanceRows[i].Href = views.ScopePath(vm.InstanceRows[i].Scope, query)
		}
	} else {
		parent := metrics.Scope{Model: scope.Model}
		vm.Parent = &views.ScopeLink{Label: scope.Model, Href: views.ScopePath(parent, query)}
	}

	// Status colours come from the deviations at the end of the window.
	status := map[string]views.Status{}
	if snap, dev, err := h.d.scoped(ctx, scope, w.To, sf); err != nil {
		h.d.Logger.WarnContext(ctx, "scopes: snapshot for status failed", "scope", scope.String(), "err", err)
	} else {
		for id, v := range snap.Current {
			d, ok := dev[id]
			status[id] = views.StatusOf(id, d, ok)
			if ok && d.Anomalous && status[id] != views.StatusOK { // clear and material
				vm.Anomalies = append(vm.Anomalies, views.AnomalyRow{
					Metric: id, Label: views.MetricLabel(id), Value: views.FormatValue(id, v),
					Baseline: views.FormatValue(id, d.Mean), Z: views.FormatZ(d.Z), AbsZ: math.Abs(d.Z), Status: status[id],
				})
			}
		}
		sort.Slice(vm.Anomalies, func(i, j int) bool { return vm.Anomalies[i].AbsZ > vm.Anomalies[j].AbsZ })
	}
	<-ranged
	if rangeErr != nil {
		return vm, fmt.Errorf("scopes: range of %s: %w", scope, rangeErr)
	}
	byID := make(map[string][]metrics.Sample, len(series))
	for _, s := range series { // scopeRangeIDs names each metric once
		byID[s.Metric] = s.Samples
	}
	for _, p := range panelDefs {
		panel := views.DimensionPanel{ID: string(p.dim), Title: views.DimensionTitle(p.dim)}
		for _, m := range metrics.InDimension(p.dim) {
			panel.Status = views.Worse(panel.Status, status[m.ID])
		}
		for _, cd := range p.charts {
			spec := views.ChartSpec{ID: cd.id, Title: cd.title, Unit: cd.unit, Start: w.From, End: w.To, Step: w.Step}
			for _, id := range cd.ids {
				spec.Series = append(spec.Series, views.ChartSeries{Metric: id, Samples: byID[id]})
			}
			spec.Band = h.band(scope, cd.ids, byID, w)
			panel.Charts = append(panel.Charts, views.NewChart(spec))
		}
		vm.Status = views.Worse(vm.Status, panel.Status)
		vm.Panels = append(vm.Panels, panel)
	}
	means := map[string]float64{}
	for _, id := range waterfallIDs {
		means[id] = mean(byID[id])
	}
	vm.Waterfall = BuildWaterfall(ctx, means)
	return vm, nil
}

// fleetAt is the fleet's reading, classified, that the page of scope
// and window w takes its snapshots from: for a model's live window the
// latest reading (see Telemetry.Fleet; it shows every instance), else a
// recent one that can stand for the window's end; nil when there is
// none. An instance's page reads no fleet: alone it is read faster.
func (d *Deps) fleetAt(ctx context.Context, scope metrics.Scope, w TimeWindow) (*scoredFleet, error) {
	if w.Preset != "" && scope.Instance == "" {
		return d.scored(ctx, w.To)
	}
	sf, _ := d.cachedScored(w.To)
	return sf, nil
}

// scoped is the scope's snapshot at `at` and its status deviations: from
// sf when it has the scope, else captured alone.
func (d *Deps) scoped(ctx context.Context, s metrics.Scope, at time.Time, sf *scoredFleet) (metrics.Snapshot, map[string]diagnose.Deviation, error) {
	if sf != nil {
		if c, ok := sf.byScope[s]; ok {
			return c.snap, c.dev, nil
		}
	}
	snap, err := d.snapshot(ctx, s, at)
	if err != nil {
		return snap, nil, err
	}
	return snap, d.deviations(snap), nil
}

// band is the forecast band of the first of ids with data and a model.
func (h *Scopes) band(scope metrics.Scope, ids []string, byID map[string][]metrics.Sample, w TimeWindow) *views.ChartBand {
	if h.fc == nil {
		return nil
	}
	for _, id := range ids {
		if len(byID[id]) == 0 {
			continue
		}
		if lo, hi, ok := h.fc.Band(scope, id, w.From, w.To, w.Step); ok && len(lo) > 0 {
			return &views.ChartBand{Name: "Expected band of " + views.MetricLabel(id), Lower: lo, Upper: hi}
		}
	}
	return nil
}

// mean of the finite sample values; NaN when there are none.
func mean(s []metrics.Sample) float64 {
	sum, n := 0.0, 0
	for _, p := range s {
		if !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
			sum += p.V
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
