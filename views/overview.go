package views

import (
	"context"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// OverviewView is the view model of the overview page: the fleet summary,
// then one group per model, worst first, filtered and paged.
type OverviewView struct {
	Layout    LayoutView
	Generated time.Time
	Summary   FleetSummary
	Filter    OverviewFilter
	// Counts are the models (groups) by status, over the whole fleet.
	Counts map[Status]int
	// Groups are this page's model groups, worst first.
	Groups []ModelGroup
	// Matched is how many groups match the filter; Page and Pages
	// number this page (from 1) among theirs.
	Matched, Page, Pages int
	// PrevHref and NextHref are the neighbouring pages; "" at the ends.
	PrevHref, NextHref string
}

// OverviewFilter is what the overview's GET form asks for.
type OverviewFilter struct {
	Q      string // part of a model or instance name, any case
	Status string // "" (any) or a StatusFilters value
}

// StatusFilters are the values of the overview's status filter, worst
// first, with their titles.
var StatusFilters = []struct{ Value, Title string }{
	{"critical", "critical"}, {"warning", "warning"}, {"ok", "OK"}, {"nodata", "no data"},
}

// Active reports whether the filter narrows the fleet.
func (f OverviewFilter) Active() bool { return f.Q != "" || f.Status != "" }

// FleetSummary counts the whole fleet, whatever the filter shows.
type FleetSummary struct {
	Models, Engines int
	// GPUs joined to the engines; -1 when GPU series join no engine.
	GPUs int
	// Off are the engines off their baseline in each dimension, in
	// display order.
	Off []DimCount
}

// GPUText renders the GPU count, "–" when unknown.
func (s FleetSummary) GPUText() string {
	if s.GPUs < 0 {
		return "–"
	}
	return itoa(s.GPUs)
}

// DimCount is how many engines are off baseline in one dimension.
type DimCount struct {
	Title   string
	Engines int
	Status  Status // the worst status among them; StatusOK when none
}

// ModelGroup is one model with its instances folded under it.
type ModelGroup struct {
	Row    ScopeRow // the model as a whole, with key numbers and sparklines
	Status Status   // the worst of the model and its instances
	// Instances are the worst instances (the matching ones when the
	// search named instances), without key numbers; at most a handful.
	Instances []ScopeRow
	// InstanceCount is the model's engines; Off those not OK; More the
	// instances not listed.
	InstanceCount, Off, More int
	// Open unfolds the instances (the search matched some by name).
	Open bool
}

// OffText says how many instances are off baseline, e.g. "3 of 12
// instances off baseline".
func (g ModelGroup) OffText() string {
	if g.Off == 0 {
		return itoa(g.InstanceCount) + " instances, all on baseline"
	}
	return itoa(g.Off) + " of " + itoa(g.InstanceCount) + " instances off baseline"
}

// ScopeRow is one model or instance on the overview.
type ScopeRow struct {
	Scope  metrics.Scope
	Href   string
	Status Status
	Worst  []Deviation // the worst deviations, largest |z| first (at most three)
	More   int         // how many more deviations there are
	Err    string      // why the scope could not be read, in the source's words
	Dims   []DimCell
	// Engine names the scope's engine ("SGLang"); empty when unknown.
	Engine string
}

// Deviation is one metric off its baseline by Z standard deviations.
type Deviation struct {
	Metric string
	Z      float64
}

// SummaryIn says the worst deviations in the request's language, e.g.
// "TTFT +7.2σ · KV Cache 使用率 +5.1σ · 另有 2 项".
func (r ScopeRow) SummaryIn(ctx context.Context) string {
	parts := make([]string, 0, len(r.Worst)+1)
	for _, d := range r.Worst {
		parts = append(parts, MetricLabelIn(ctx, d.Metric)+" "+FormatZ(d.Z))
	}
	if r.More > 0 {
		parts = append(parts, T(ctx, "overview.more_deviations", r.More))
	}
	return strings.Join(parts, " · ")
}

// Kind says whether the row is a whole model or one instance.
func (r ScopeRow) Kind() string {
	if r.Scope.Instance == "" {
		return "model"
	}
	return "instance"
}

// DimCell is one dimension of a scope row.
type DimCell struct {
	Title   string
	Status  Status
	Metrics []MetricCell
}

// MetricCell is one key number with its sparkline.
type MetricCell struct {
	ID     string
	Label  string
	Value  string
	Z      string // deviation from baseline, "" when unknown
	Status Status
	Spark  string // path from Sparkline
}

// StatusCount returns how many models have status s.
func (v OverviewView) StatusCount(s Status) string { return itoa(v.Counts[s]) }

// PageText says which page this is, e.g. "models 21–40 of 57".
func (v OverviewView) PageText() string {
	if v.Matched == 0 {
		return ""
	}
	first := (v.Page-1)*OverviewPageSize + 1
	last := min(first+len(v.Groups)-1, v.Matched)
	return "models " + itoa(first) + "–" + itoa(last) + " of " + itoa(v.Matched)
}

// OverviewPageSize is how many model groups one overview page shows.
const OverviewPageSize = 20
