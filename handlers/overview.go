package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
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

// overviewInstances is how many instances a model's fold lists.
const overviewInstances = 5

// Show renders the overview: the fleet summary, then the models matching
// the filter, worst first, one page of them. The whole fleet is read at
// once (telemetry's Fleet: one query per metric, not per scope) and
// classified; only the shown models get key numbers and sparklines.
func (h *Overview) Show(c echo.Context) error {
	ctx := c.Request().Context()
	now := h.d.Now()
	filter, page, err := parseOverviewParams(c)
	if err != nil {
		return err
	}
	vm := views.OverviewView{
		Layout:    h.d.layout(i18n.T(ctx, "nav.overview"), views.NavOverview),
		Generated: now,
		Filter:    filter,
		Counts:    map[views.Status]int{},
		Summary:   views.FleetSummary{GPUs: -1},
	}
	vm.Layout.Refresh = true
	sf, err := h.d.scored(ctx, now)
	if err != nil {
		// The overview is where an engineer lands when things are broken:
		// say what is wrong instead of failing the page.
		h.d.Logger.ErrorContext(ctx, "overview: read the fleet", "err", err)
		vm.Layout.Banners = append(vm.Layout.Banners, views.Banner{
			Status: views.StatusCritical, Msg: "overview.fleet_failed", Args: []any{err.Error()}, Now: now,
		})
		return render(c, http.StatusOK, views.OverviewPage(vm))
	}
	// The reading may be a few seconds older than the request (see
	// Telemetry.Fleet): say when its figures are from.
	vm.Generated = sf.at
	vm.Summary = sf.summary
	vm.Counts = sf.counts
	var matched []*fleetGroup
	for _, g := range sf.groups {
		if g.match(filter) {
			matched = append(matched, g)
		}
	}
	vm.Matched = len(matched)
	vm.Pages = max(1, (len(matched)+views.OverviewPageSize-1)/views.OverviewPageSize)
	vm.Page = min(page, vm.Pages)
	first := (vm.Page - 1) * views.OverviewPageSize
	for _, g := range matched[first:min(first+views.OverviewPageSize, len(matched))] {
		vm.Groups = append(vm.Groups, h.d.groupView(g, filter))
	}
	if vm.Page > 1 {
		vm.PrevHref = overviewHref(filter, vm.Page-1)
	}
	if vm.Page < vm.Pages {
		vm.NextHref = overviewHref(filter, vm.Page+1)
	}
	return render(c, http.StatusOK, views.OverviewPage(vm))
}

// parseOverviewParams reads q, status and page.
func parseOverviewParams(c echo.Context) (views.OverviewFilter, int, error) {
	f := views.OverviewFilter{Q: strings.TrimSpace(c.QueryParam("q")), Status: c.QueryParam("status")}
	if len(f.Q) > metrics.MaxNameLength {
		return f, 0, paramError("q", "param.too_long", strconv.Itoa(metrics.MaxNameLength))
	}
	if f.Status != "" && statusFilter(f.Status) < 0 {
		var vals []string
		for _, s := range views.StatusFilters {
			vals = append(vals, s.Value)
		}
		return f, 0, paramError("status", "param.one_of", strings.Join(vals, ", "))
	}
	page := 1
	if raw := c.QueryParam("page"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return f, 0, paramError("page", "param.page")
		}
		page = n
	}
	return f, page, nil
}

// statusFilter maps a status filter value to its status; -1 when unknown.
func statusFilter(v string) views.Status {
	switch v {
	case "critical":
		return views.StatusCritical
	case "warning":
		return views.StatusWarning
	case "ok":
		return views.StatusOK
	case "nodata":
		return views.StatusNoData
	}
	return -1
}

// overviewHref is the overview URL of one page under a filter.
func overviewHref(f views.OverviewFilter, page int) string {
	q := url.Values{}
	if f.Q != "" {
		q.Set("q", f.Q)
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	return route.URLQuery(route.Overview, q)
}

// classified is one scope's snapshot, deviations and classification.
type classified struct {
	snap  metrics.Snapshot
	dev   map[string]diagnose.Deviation
	row   views.ScopeRow // without key numbers
	worst float64        // the largest anomalous |z|
}

// fleetGroup is one model and its instances, classified.
type fleetGroup struct {
	model     classified
	instances []classified // worst first
	status    views.Status // the worst of the model and its instances
	worst     float64
}

// classifyFleet classifies every scope of the fleet and groups them by
// model, worst first: by status, then by the largest anomalous |z|, then
// by name.
func (d *Deps) classifyFleet(f metrics.Fleet) []*fleetGroup {
	byModel := map[string]*fleetGroup{}
	var groups []*fleetGroup
	for _, snap := range f.Snapshots {
		g := byModel[snap.Scope.Model]
		if g == nil {
			// A model without its own snapshot shows as no data.
			g = &fleetGroup{model: d.classify(metrics.Snapshot{Scope: metrics.Scope{Model: snap.Scope.Model}})}
			byModel[snap.Scope.Model] = g
			groups = append(groups, g)
		}
		c := d.classify(snap)
		if snap.Scope.Instance == "" {
			g.model = c
		} else {
			g.instances = append(g.instances, c)
		}
	}
	for _, g := range groups {
		g.status, g.worst = g.model.row.Status, g.model.worst
		for _, in := range g.instances {
			g.status = views.Worse(g.status, in.row.Status)
			g.worst = math.Max(g.worst, in.worst)
		}
		sort.SliceStable(g.instances, func(i, j int) bool { return worseFirst(g.instances[i], g.instances[j]) })
	}
	sort.SliceStable(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.status != b.status {
			return a.status > b.status
		}
		if a.worst != b.worst {
			return a.worst > b.worst
		}
		return a.model.row.Scope.Model < b.model.row.Scope.Model
	})
	return groups
}

func worseFirst(a, b classified) bool {
	if a.row.Status != b.row.Status {
		return a.row.Status > b.row.Status
	}
	if a.worst != b.worst {
		return a.worst > b.worst
	}
	return a.row.Scope.Instance < b.row.Scope.Instance
}

// match reports whether the group shows under f: its status is the one
// asked for, and the search names the model or one of its instances.
func (g *fleetGroup) match(f views.OverviewFilter) bool {
	if f.Status != "" && g.status != statusFilter(f.Status) {
		return false
	}
	return f.Q == "" || containsFold(g.model.row.Scope.Model, f.Q) || len(g.matchingInstances(f.Q)) > 0
}

// matchingInstances are the instances whose name contains q, worst first.
func (g *fleetGroup) matchingInstances(q string) []classified {
	var out []classified
	for _, in := range g.instances {
		if containsFold(in.row.Scope.Instance, q) {
			out = append(out, in)
		}
	}
	return out
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// groupView lays out a shown group: the model's key numbers with their
// sparklines, and its worst instances (the matching ones when the search
// names instances but not the model).
func (d *Deps) groupView(g *fleetGroup, f views.OverviewFilter) views.ModelGroup {
	row := g.model.row
	row.Dims = nil
	for i, dim := range metrics.Dimensions {
		cell := g.model.row.Dims[i]
		cell.Metrics = nil
		for _, id := range overviewKeys[dim] {
			cell.Metrics = append(cell.Metrics, metricCell(g.model.snap, g.model.dev, id))
		}
		row.Dims = append(row.Dims, cell)
	}
	v := views.ModelGroup{Row: row, Status: g.status, InstanceCount: len(g.instances)}
	for _, in := range g.instances {
		if in.row.Status != views.StatusOK {
			v.Off++
		}
	}
	list := g.instances
	if f.Q != "" && !containsFold(row.Scope.Model, f.Q) {
		list = g.matchingInstances(f.Q)
		v.Open = true
	}
	for i, in := range list {
		if i == overviewInstances {
			break
		}
		v.Instances = append(v.Instances, in.row)
	}
	v.More = len(g.instances) - len(v.Instances)
	return v
}

// fleetSummary counts the models, engines and GPUs, and the engines off
// baseline per dimension.
func fleetSummary(f metrics.Fleet, groups []*fleetGroup) views.FleetSummary {
	s := views.FleetSummary{Models: len(groups), GPUs: -1}
	if f.GPUs != nil {
		s.GPUs = 0
		for _, n := range f.GPUs {
			s.GPUs += n
		}
	}
	s.Off = make([]views.DimCount, len(metrics.Dimensions))
	for i, dim := range metrics.Dimensions {
		s.Off[i] = views.DimCount{Title: views.DimensionTitle(dim), Status: views.StatusOK}
	}
	for _, g := range groups {
		s.Engines += len(g.instances)
		for _, in := range g.instances {
			for i, cell := range in.row.Dims {
				if cell.Status == views.StatusWarning || cell.Status == views.StatusCritical {
					s.Off[i].Engines++
					s.Off[i].Status = views.Worse(s.Off[i].Status, cell.Status)
				}
			}
		}
	}
	return s
}

// scopeRows captures each scope in parallel and returns the rows worst
// first: by status, then by the largest anomalous |z|, then by name. The
// scopes sf (nil: none) has scored are taken from it, not read again.
func (d *Deps) scopeRows(ctx context.Context, scopes []metrics.Scope, now time.Time, sf *scoredFleet) []views.ScopeRow {
	rows := make([]views.ScopeRow, len(scopes))
	worst := make([]float64, len(scopes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelSnapshots)
	for i, s := range scopes {
		if sf != nil {
			if c, ok := sf.byScope[s]; ok {
				rows[i], worst[i] = keyedRow(c), c.worst
				continue
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// A panic here would bypass the recover middleware and take
			// the process down; turn it into a row that says so.
			defer func() {
				if p := recover(); p != nil {
					d.Logger.ErrorContext(ctx, "overview: snapshot panicked", "scope", s.String(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					rows[i] = views.ScopeRow{Scope: s, Href: views.ScopePath(s, nil), Err: "internal error"}
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

// row captures one scope and classifies it, with key numbers and
// sparklines. The second result is the largest anomalous |z|, for
// ordering.
func (d *Deps) row(ctx context.Context, s metrics.Scope, now time.Time) (views.ScopeRow, float64) {
	snap, err := d.snapshot(ctx, s, now)
	if err != nil {
		d.Logger.WarnContext(ctx, "overview: snapshot failed", "scope", s.String(), "err", err)
		r := views.ScopeRow{Scope: s, Href: views.ScopePath(s, nil), Err: err.Error()}
		for _, dim := range metrics.Dimensions {
			r.Dims = append(r.Dims, views.DimCell{Title: views.DimensionTitle(dim)})
		}
		return r, 0
	}
	c := d.classify(snap)
	return keyedRow(&c), c.worst
}

// keyedRow is c's row with its key numbers and sparklines. c is left as
// it is: it may be shared.
func keyedRow(c *classified) views.ScopeRow {
	r := c.row
	r.Dims = make([]views.DimCell, len(c.row.Dims))
	for i, dim := range metrics.Dimensions {
		r.Dims[i] = c.row.Dims[i]
		r.Dims[i].Metrics = nil
		for _, id := range overviewKeys[dim] {
			r.Dims[i].Metrics = append(r.Dims[i].Metrics, metricCell(c.snap, c.dev, id))
		}
	}
	return r
}

// snapshot is the scope's snapshot at `at`: from the fleet's latest
// reading when it can stand for one at `at` (a viewer of the overview or
// the detector has just read the whole fleet), else captured alone.
func (d *Deps) snapshot(ctx context.Context, s metrics.Scope, at time.Time) (metrics.Snapshot, error) {
	if f, ok := d.Telemetry.CachedFleet(at); ok {
		for _, snap := range f.Snapshots {
			if snap.Scope == s {
				return snap, nil
			}
		}
	}
	return d.Telemetry.Snapshot(ctx, s, at)
}

// classify sets a scope's status per dimension and overall and names its
// worst deviations; key numbers are left for the rows that are shown.
func (d *Deps) classify(snap metrics.Snapshot) classified {
	s := snap.Scope
	c := classified{snap: snap, dev: d.deviations(snap), row: views.ScopeRow{Scope: s, Href: views.ScopePath(s, nil)}}
	r := &c.row
	if snap.Engine != "" {
		r.Engine = metrics.EngineName(snap.Engine)
	}
	type anomaly struct {
		id string
		z  float64
	}
	var anomalies []anomaly
	for _, dim := range metrics.Dimensions {
		cell := views.DimCell{Title: views.DimensionTitle(dim)}
		for _, m := range metrics.InDimension(dim) {
			_, present := snap.Current.Get(m.ID)
			d, ok := c.dev[m.ID]
			st := views.StatusOf(m.ID, d, ok && present)
			if !present {
				st = views.StatusNoData
			}
			cell.Status = views.Worse(cell.Status, st)
			if d.Anomalous && present && st != views.StatusOK { // clear and material
				anomalies = append(anomalies, anomaly{m.ID, d.Z})
			}
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
	for i, a := range anomalies {
		if i == 3 {
			r.More = len(anomalies) - 3
			break
		}
		r.Worst = append(r.Worst, views.Deviation{Metric: a.id, Z: a.z})
	}
	if len(anomalies) > 0 {
		c.worst = math.Abs(anomalies[0].z)
	}
	return c
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
