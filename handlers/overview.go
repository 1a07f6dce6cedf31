package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// Overview serves the overview of every model and instance.
type Overview struct{ d *Deps }

// overviewKeys are the few key numbers shown per dimension.
var overviewKeys = map[metrics.Dimension][]string{
	metrics.Latency:     {metrics.E2E, metrics.TTFT, metrics.TPOT},
	metrics.Throughput:  {metrics.ThroughputRPS, metrics.GenerationTPS, metrics.QueueDepth},
	metrics.Utilization: {metrics.SMUtil, metrics.KVCacheUsage, metrics.DRAMActive},
	metrics.Quality:     {metrics.KVCacheHitRate, metrics.ErrorRate, metrics.PreemptionRate},
}

// maxParallelSnapshots bounds concurrent snapshot captures per request.
const maxParallelSnapshots = 8

// Show renders the overview, worst scope first.
func (h *Overview) Show(c echo.Context) error {
	ctx := c.Request().Context()
	now := h.d.Now()
	vm := views.OverviewView{
		Layout:    h.d.layout("Overview", views.NavOverview),
		Generated: now,
		Counts:    map[views.Status]int{},
	}
	vm.Layout.Refresh = true
	scopes, err := h.d.Telemetry.Scopes(ctx)
	if err != nil {
		// The overview is where an engineer lands when things are broken:
		// say what is wrong instead of failing the page.
		h.d.Logger.ErrorContext(ctx, "overview: list scopes", "err", err)
		vm.Layout.Banners = append(vm.Layout.Banners, views.Banner{
			Status: views.StatusCritical, Text: "Cannot list models from the metric source: " + err.Error(), Now: now,
		})
		return render(c, http.StatusOK, views.OverviewPage(vm))
	}
	for _, r := range h.d.scopeRows(ctx, scopes, now) {
		vm.Rows = append(vm.Rows, r)
		vm.Counts[r.Status]++
	}
	return render(c, http.StatusOK, views.OverviewPage(vm))
}

// scopeRows captures each scope in parallel and returns the rows worst
// first: by status, then by the largest anomalous |z|, then by name.
func (d *Deps) scopeRows(ctx context.Context, scopes []metrics.Scope, now time.Time) []views.ScopeRow {
	rows := make([]views.ScopeRow, len(scopes))
	worst := make([]float64, len(scopes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelSnapshots)
	for i, s := range scopes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// A panic here would bypass the recover middleware and take
			// the process down; turn it into a row that says so.
			defer func() {
				if p := recover(); p != nil {
					d.Logger.ErrorContext(ctx, "overview: snapshot panicked", "scope", s.String(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					rows[i] = views.ScopeRow{Scope: s, Href: views.ScopePath(s, nil), Err: "could not read metrics (internal error)"}
				}
			}()
			rows[i], worst[i] = d.row(ctx, s, now)
		}()
	}
	wg.Wait()
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ra, rb := rows[idx[a]], rows[idx[b]]
		if ra.Status != rb.Status {
			return ra.Status > rb.Status
		}
		if worst[idx[a]] != worst[idx[b]] {
			return worst[idx[a]] > worst[idx[b]]
		}
		return ra.Scope.String() < rb.Scope.String()
	})
	out := make([]views.ScopeRow, len(rows))
	for k, i := range idx {
		out[k] = rows[i]
	}
	return out
}

// row captures one scope and classifies it. The second result is the
// largest anomalous |z|, for ordering.
func (d *Deps) row(ctx context.Context, s metrics.Scope, now time.Time) (views.ScopeRow, float64) {
	r := views.ScopeRow{Scope: s, Href: views.ScopePath(s, nil)}
	snap, err := d.Telemetry.Snapshot(ctx, s, now)
	if err != nil {
		d.Logger.WarnContext(ctx, "overview: snapshot failed", "scope", s.String(), "err", err)
		r.Err = "could not read metrics: " + err.Error()
		for _, dim := range metrics.Dimensions {
			r.Dims = append(r.Dims, views.DimCell{Title: views.DimensionTitle(dim)})
		}
		return r, 0
	}
	if snap.Engine != "" {
		r.Engine = metrics.EngineName(snap.Engine)
	}
	dev := d.deviations(snap)
	type anomaly struct {
		id string
		z  float64
	}
	var anomalies []anomaly
	for _, dim := range metrics.Dimensions {
		cell := views.DimCell{Title: views.DimensionTitle(dim)}
		for _, m := range metrics.InDimension(dim) {
			_, present := snap.Current.Get(m.ID)
			d, ok := dev[m.ID]
			st := views.StatusOf(m.ID, d, ok && present)
			if !present {
				st = views.StatusNoData
			}
			cell.Status = views.Worse(cell.Status, st)
			if d.Anomalous && present && st != views.StatusOK { // clear and material
				anomalies = append(anomalies, anomaly{m.ID, d.Z})
			}
		}
		for _, id := range overviewKeys[dim] {
			cell.Metrics = append(cell.Metrics, metricCell(snap, dev, id))
		}
		r.Dims = append(r.Dims, cell)
	}
	felt := views.StatusNoData // what users feel: latency and quality
	for i, dim := range metrics.Dimensions {
		if !loadDriven(dim) {
			felt = views.Worse(felt, r.Dims[i].Status)
		}
	}
	for i, dim := range metrics.Dimensions {
		r.Status = views.Worse(r.Status, scopeImpact(dim, r.Dims[i].Status, felt))
	}
	sort.Slice(anomalies, func(i, j int) bool { return math.Abs(anomalies[i].z) > math.Abs(anomalies[j].z) })
	var parts []string
	for i, a := range anomalies {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", len(anomalies)-3))
			break
		}
		parts = append(parts, views.MetricLabel(a.id)+" "+views.FormatZ(a.z))
	}
	r.Summary = strings.Join(parts, " · ")
	top := 0.0
	if len(anomalies) > 0 {
		top = math.Abs(anomalies[0].z)
	}
	return r, top
}

// deviations are the status deviations of snap: Deviations, with the
// p99 latencies of a window too thin to have a tail left unjudged.
func (d *Deps) deviations(snap metrics.Snapshot) map[string]diagnose.Deviation {
	dev := d.Deviations(snap)
	for id, x := range dev {
		if x.Anomalous && !metrics.TailJudgeable(id, snap.Current) {
			x.Anomalous = false
			dev[id] = x
		}
	}
	return dev
}

// scopeImpact is how much a dimension's status counts toward the scope's
// badge, given felt, the worst status of the dimensions users feel
// (latency and quality). Throughput and utilization move with load (a
// morning ramp or a burst of traffic is several sigma off the hour
// before): on their own they make a scope worth a look (info), and beside
// a latency or quality deviation at most a warning, never critical.
func scopeImpact(dim metrics.Dimension, st, felt views.Status) views.Status {
	if !loadDriven(dim) {
		return st
	}
	limit := views.StatusInfo
	if felt >= views.StatusWarning {
		limit = views.StatusWarning
	}
	return min(st, limit)
}

// loadDriven reports the dimensions that follow the offered load.
func loadDriven(dim metrics.Dimension) bool {
	return dim == metrics.Throughput || dim == metrics.Utilization
}

func metricCell(snap metrics.Snapshot, dev map[string]diagnose.Deviation, id string) views.MetricCell {
	mc := views.MetricCell{ID: id, Label: views.MetricLabel(id), Value: "–", Status: views.StatusNoData}
	values := make([]float64, 0, len(snap.History)+1)
	for _, p := range snap.History {
		v, ok := p.Values.Get(id)
		if !ok {
			v = math.NaN()
		}
		values = append(values, v)
	}
	if v, ok := snap.Current.Get(id); ok {
		values = append(values, v)
		mc.Value = views.FormatValue(id, v)
		d, known := dev[id]
		mc.Status = views.StatusOf(id, d, known)
		if known {
			mc.Z = views.FormatZ(d.Z)
		}
	}
	mc.Spark = views.Sparkline(values)
	return mc
}
