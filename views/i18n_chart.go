package views

import (
	"context"
	"strings"
)

// chartTitleKeys are the catalog keys of the live view's and the incident
// page's chart titles, by chart id (without the "incident-" prefix).
var chartTitleKeys = map[string]string{
	"latency-request":     "chart.latency_request",
	"latency-token":       "chart.latency_token",
	"throughput-requests": "chart.throughput_requests",
	"throughput-tokens":   "chart.throughput_tokens",
	"throughput-batch":    "chart.throughput_batch",
	"util-activity":       "chart.util_activity",
	"util-clocks":         "chart.util_clocks",
	"quality-rates":       "chart.quality_rates",
	"quality-preemptions": "chart.quality_preemptions",
}

// TitleIn is the chart's title in the request's language: the known
// panel charts are translated, a single metric's chart is named by its
// metric, other titles are kept.
func (c Chart) TitleIn(ctx context.Context) string {
	if k, ok := chartTitleKeys[strings.TrimPrefix(c.ID, "incident-")]; ok {
		return T(ctx, k)
	}
	if len(c.Lines) == 1 && !c.Lines[0].Named && c.Title == MetricLabel(c.Lines[0].Metric) {
		return MetricLabelIn(ctx, c.Lines[0].Metric)
	}
	return c.Title
}

// NameIn is the legend name in the request's language.
func (l ChartLine) NameIn(ctx context.Context) string {
	if l.Named || l.Metric == "" {
		return l.Name
	}
	return MetricLabelIn(ctx, l.Metric)
}

// BandNameIn names the shaded band: the baseline's ±3σ band and a
// forecast's expected band are translated.
func (c Chart) BandNameIn(ctx context.Context) string {
	if c.Band == nil {
		return ""
	}
	name := c.Band.Name
	switch {
	case name == "baseline ±3σ":
		return T(ctx, "chart.band_baseline")
	case strings.HasPrefix(name, "Expected band of ") && len(c.Lines) > 0:
		return T(ctx, "chart.band_expected", MetricLabelIn(ctx, c.Lines[0].Metric))
	}
	return name
}

// MarkerLabelIn is the marker's label ("trigger") in the request's language.
func (c Chart) MarkerLabelIn(ctx context.Context) string {
	if c.MarkerLabel == "trigger" {
		return T(ctx, "chart.trigger")
	}
	return c.MarkerLabel
}

// LastIn is the legend's last value, or "no data" in the request's
// language for a line with none in the window.
func (l ChartLine) LastIn(ctx context.Context) string {
	if l.Empty {
		return T(ctx, "chart.line_no_data")
	}
	return l.Last
}
