package views

import (
	"net/url"
	"strconv"
	"time"

	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
)

// RangePreset is one window the time-range picker offers.
type RangePreset struct {
	Name   string // as in ?range=
	Window time.Duration
}

// RangePresets are the time-range picker's windows, shortest first: the
// one table the picker and the range parser read.
var RangePresets = []RangePreset{
	{"15m", 15 * time.Minute}, {"1h", time.Hour}, {"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour},
}

// RangePresetWindow is the window of a preset's name.
func RangePresetWindow(name string) (time.Duration, bool) {
	for _, p := range RangePresets {
		if p.Name == name {
			return p.Window, true
		}
	}
	return 0, false
}

// RangePresetNames lists the presets' names, shortest first.
func RangePresetNames() []string {
	out := make([]string, len(RangePresets))
	for i, p := range RangePresets {
		out[i] = p.Name
	}
	return out
}

// ScopeView is the view model of the live view of one model or instance.
type ScopeView struct {
	Layout    LayoutView
	Scope     metrics.Scope
	Status    Status
	Instances []ScopeLink // a model's instances; empty on an instance page
	// InstanceRows are a model's instances with their state, worst first.
	InstanceRows []ScopeRow
	Parent       *ScopeLink // the model of an instance page
	Range        RangeView
	Panels       []DimensionPanel
	// Anomalies are the metrics off their baseline at the end of the
	// window, largest deviation first.
	Anomalies []AnomalyRow
	Waterfall WaterfallView
	// DiagnoseAction is the URL the "Diagnose now" form posts to.
	DiagnoseAction string
	// Coverage says what the scope's telemetry lacks; nil when unknown.
	Coverage *CoverageView
}

// AnomalyRow is one metric off its baseline.
type AnomalyRow struct {
	Metric, Label, Value, Baseline, Z string
	AbsZ                              float64
	Status                            Status
}

// MaxAnomalies is how many off-baseline metrics the live view lists.
const MaxAnomalies = 8

// TopAnomalies returns the largest deviations, at most MaxAnomalies.
func (v ScopeView) TopAnomalies() []AnomalyRow {
	if len(v.Anomalies) > MaxAnomalies {
		return v.Anomalies[:MaxAnomalies]
	}
	return v.Anomalies
}

// ScopeLink links to another scope's live view, keeping the time range.
type ScopeLink struct {
	Label string
	Href  string
}

// RangeView is the state of the time-range picker.
type RangeView struct {
	Preset    string // "" for an absolute from/to window
	From, To  time.Time
	Step      time.Duration
	Presets   []ScopeLink
	FromInput string // RFC 3339, pre-filled in the custom range form
	ToInput   string
}

// Describe says what window is shown.
func (r RangeView) Describe() string {
	s := "last " + r.Preset
	if r.Preset == "" {
		s = FormatDuration(r.To.Sub(r.From).Round(time.Minute)) + " window"
	}
	return s + ", " + FormatDuration(r.Step) + " resolution"
}

// DimensionPanel is one of the four dimensions on the live view.
type DimensionPanel struct {
	ID     string
	Title  string
	Status Status
	Charts []Chart
}

// ScopePath is the URL of the live view of a scope with the query q (nil
// for none).
func ScopePath(s metrics.Scope, q url.Values) string {
	if s.Instance == "" {
		return route.URLQuery(route.ScopeModel, q, s.Model)
	}
	return route.URLQuery(route.ScopeInstance, q, s.Model, s.Instance)
}

// DiagnosePath is the URL the "Diagnose now" form of a scope posts to.
func DiagnosePath(s metrics.Scope) string {
	if s.Instance == "" {
		return route.URL(route.ScopeModelDiagnose, s.Model)
	}
	return route.URL(route.ScopeInstanceDiagnose, s.Model, s.Instance)
}

// RangeQuery is the query of a preset or an absolute window.
func RangeQuery(preset string, from, to time.Time) url.Values {
	v := url.Values{}
	if preset != "" {
		v.Set("range", preset)
	} else {
		v.Set("from", from.UTC().Format(time.RFC3339))
		v.Set("to", to.UTC().Format(time.RFC3339))
	}
	return v
}

// WaterfallView is the latency decomposition of the shown window.
type WaterfallView struct {
	Levels []WaterfallLevel
	Scale  string // what the full bar width stands for
}

// WaterfallLevel is one level of the decomposition.
type WaterfallLevel struct {
	Title string
	Note  string // how to read it, or what is missing
	Bars  []WaterfallBar
}

// WaterfallBar is one segment, placed on a 0-1000 axis.
type WaterfallBar struct {
	Label string
	Value string
	X, W  float64
	Class string
}

// BarY is the y position of bar i in a level's SVG.
func BarY(i int) string { return strconv.Itoa(i*26 + 2) }

// BarsHeight is the SVG height of a level with n bars.
func BarsHeight(n int) string { return strconv.Itoa(n*26 + 2) }
