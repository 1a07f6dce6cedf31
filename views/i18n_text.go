package views

import (
	"context"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

// This file holds the view models' words in the request's language: the
// templates call these instead of the English-only helpers they replace.

// lang is the request's language code, as package diagnose takes it.
func lang(ctx context.Context) string { return i18n.From(ctx).Code() }

// CauseTitleIn is the title of a root-cause id in the request's
// language; the id itself for a cause the taxonomy does not know.
func CauseTitleIn(ctx context.Context, id string) string {
	return diagnose.CauseTitleIn(lang(ctx), id)
}

// CauseWhatIn is the taxonomy's explanation of a root cause in the
// request's language.
func CauseWhatIn(ctx context.Context, id string) string {
	return diagnose.CauseWhatIn(lang(ctx), id)
}

// MetricLabelIn is a metric's short label in the request's language.
func MetricLabelIn(ctx context.Context, id string) string {
	return diagnose.MetricLabelIn(lang(ctx), id)
}

// titleIn translates a cause title given in English (a taxonomy title);
// an engineer's own cause name is shown as written.
func titleIn(ctx context.Context, title string) string {
	for _, c := range metrics.Causes {
		if c.Title == title {
			return CauseTitleIn(ctx, c.ID)
		}
	}
	return title
}

// CauseOptionTitle is a picker or filter cause's title: translated for a
// taxonomy cause, as written for one an engineer created.
func CauseOptionTitle(ctx context.Context, c CauseOption) string {
	if c.Custom {
		return c.Title
	}
	if _, ok := metrics.LookupCause(c.ID); ok {
		return CauseTitleIn(ctx, c.ID)
	}
	return c.Title
}

// VerdictOptionTitle names a review-state filter value.
func VerdictOptionTitle(ctx context.Context, id string) string {
	switch id {
	case "unreviewed":
		return T(ctx, "verdict.unreviewed")
	case "correct":
		return T(ctx, "verdict.correct")
	case "wrong":
		return T(ctx, "verdict.wrong")
	}
	return id
}

// SeverityLabel names a stored severity word ("critical").
func SeverityLabel(ctx context.Context, s string) string {
	switch s {
	case "critical":
		return T(ctx, "severity.critical")
	case "warning":
		return T(ctx, "severity.warning")
	case "info":
		return T(ctx, "severity.info")
	case "":
		return T(ctx, "severity.unknown")
	}
	return s
}

// VerdictStateIn describes a review state in the request's language;
// trueCauseTitle names the true cause of a wrong verdict.
func VerdictStateIn(ctx context.Context, verdict, trueCauseTitle string) string {
	switch verdict {
	case "correct":
		return T(ctx, "verdict.state_correct")
	case "wrong":
		return T(ctx, "verdict.state_wrong", titleIn(ctx, trueCauseTitle))
	}
	return T(ctx, "verdict.state_none")
}

// StateLabel is the review state in words.
func (r ReviewControls) StateLabel(ctx context.Context) string {
	return VerdictStateIn(ctx, r.Verdict, r.TrueCauseTitle)
}

// ReviewLabel is the list's review column.
func (r IncidentRow) ReviewLabel(ctx context.Context) string {
	switch r.Verdict {
	case "correct":
		return T(ctx, "verdict.short_correct")
	case "wrong":
		return T(ctx, "verdict.short_wrong", CauseTitleIn(ctx, r.TrueCause))
	}
	return T(ctx, "verdict.short_unreviewed")
}

// CauseLabel names the queue item's diagnosed cause.
func (q QueueItem) CauseLabel(ctx context.Context) string { return CauseTitleIn(ctx, q.Cause) }

// LeftLabel says what is left to review.
func (v ReviewQueueView) LeftLabel(ctx context.Context) string {
	if v.Left == 0 {
		return T(ctx, "queue.left_none")
	}
	return T(ctx, "queue.left", v.Left)
}

// EmptyText says that no incident waits, under the active filters.
func (v ReviewQueueView) EmptyText(ctx context.Context) string {
	switch {
	case v.Model != "" && v.Cause != "":
		return T(ctx, "queue.empty_model_cause", v.Model, CauseTitleIn(ctx, v.Cause))
	case v.Model != "":
		return T(ctx, "queue.empty_model", v.Model)
	case v.Cause != "":
		return T(ctx, "queue.empty_cause", CauseTitleIn(ctx, v.Cause))
	}
	return T(ctx, "queue.empty")
}

// DimTitleIn translates a dimension title given in English (Latency,
// Throughput, Utilization, Quality).
func DimTitleIn(ctx context.Context, title string) string {
	for _, d := range []metrics.Dimension{metrics.Latency, metrics.Throughput, metrics.Utilization, metrics.Quality} {
		if DimensionTitle(d) == title {
			return PanelTitle(ctx, string(d), title)
		}
	}
	return title
}

// StatusFilterTitle names a value of the overview's status filter.
func StatusFilterTitle(ctx context.Context, v string) string {
	switch v {
	case "critical":
		return T(ctx, "severity.critical")
	case "warning":
		return T(ctx, "severity.warning")
	case "ok":
		return T(ctx, "status.ok")
	case "nodata":
		return T(ctx, "overview.no_data")
	}
	return v
}

// OffLabel says how many of the model's instances are off baseline.
func (g ModelGroup) OffLabel(ctx context.Context) string {
	if g.Off == 0 {
		return T(ctx, "overview.all_on", g.InstanceCount)
	}
	return T(ctx, "overview.some_off", g.Off, g.InstanceCount)
}

// PageLabel says which page this is, e.g. "models 21–40 of 57".
func (v OverviewView) PageLabel(ctx context.Context) string {
	if v.Matched == 0 {
		return ""
	}
	first := (v.Page-1)*OverviewPageSize + 1
	last := min(first+len(v.Groups)-1, v.Matched)
	return T(ctx, "overview.page", first, last, v.Matched)
}

// DescribeIn says which window the charts show in the request's language
// ("last 1h, 15s resolution").
func (r RangeView) DescribeIn(ctx context.Context) string {
	if r.Preset == "" {
		return T(ctx, "scope.range_window", FormatDuration(r.To.Sub(r.From).Round(time.Minute)), FormatDuration(r.Step))
	}
	return T(ctx, "scope.range_last", r.Preset, FormatDuration(r.Step))
}
