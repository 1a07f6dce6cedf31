package views

import (
	"context"
	"strconv"
	"time"

	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
)

// ReferenceAccuracy is the reference team's rule-based accuracy (97 of 124
// diagnoses correct), drawn on the accuracy page for comparison.
const ReferenceAccuracy = 97.0 / 124.0

// AccuracyRow is one group of reviewed diagnoses.
type AccuracyRow struct {
	Key      string // cause id, engine version or week
	Label    string
	Reviewed int
	Correct  int
}

// Share renders the share correct as a percentage.
func (r AccuracyRow) Share() string {
	if r.Reviewed == 0 {
		return "–"
	}
	return FormatPercent(float64(r.Correct) / float64(r.Reviewed))
}

// Counts renders "correct of reviewed".
func (r AccuracyRow) Counts() string {
	return strconv.Itoa(r.Correct) + " of " + strconv.Itoa(r.Reviewed)
}

// ConfusionView is the confusion matrix: rows diagnosed, columns true.
type ConfusionView struct {
	Diagnosed []string // row cause ids
	True      []string // column cause ids
	Counts    map[[2]string]int
}

// Cell returns the count for a diagnosed/true pair as text ("" for 0).
func (c ConfusionView) Cell(diagnosed, truth string) string {
	if n := c.Counts[[2]string{diagnosed, truth}]; n > 0 {
		return strconv.Itoa(n)
	}
	return ""
}

// CellClass marks the diagonal.
func (c ConfusionView) CellClass(diagnosed, truth string) string {
	if diagnosed == truth {
		return "num diag"
	}
	return "num"
}

// AccuracyView is the view model of the accuracy page.
type AccuracyView struct {
	Layout    LayoutView
	Overall   AccuracyRow
	ByCause   []AccuracyRow
	ByEngine  []AccuracyRow
	ByWeek    []AccuracyRow
	Confusion ConfusionView
	Trend     Chart
}

// ReferenceText describes the reference line.
func (v AccuracyView) ReferenceText() string { return FormatPercent(ReferenceAccuracy) }

// NewAccuracyTrend draws the weekly share correct with the reference line,
// titled and labelled in ctx's language.
func NewAccuracyTrend(ctx context.Context, weeks []AccuracyRow) Chart {
	var share, ref []metrics.Sample
	var start, end time.Time
	for _, w := range weeks {
		t, err := time.Parse("2006-01-02", w.Key)
		if err != nil || w.Reviewed == 0 {
			continue
		}
		if start.IsZero() {
			start = t
		}
		end = t.Add(7 * 24 * time.Hour)
		share = append(share, metrics.Sample{T: t, V: float64(w.Correct) / float64(w.Reviewed)})
	}
	if len(share) == 1 { // one point draws nothing: hold it over its week
		share = append(share, metrics.Sample{T: end, V: share[0].V})
	}
	if start.IsZero() {
		end = time.Now().UTC()
		start = end.Add(-28 * 24 * time.Hour)
	}
	ref = []metrics.Sample{{T: start, V: ReferenceAccuracy}, {T: end, V: ReferenceAccuracy}}
	return NewChart(ChartSpec{
		ID: "accuracy-trend", Title: T(ctx, "acc.trend_title"), Unit: "ratio",
		Start: start, End: end, Step: 7 * 24 * time.Hour,
		Series: []ChartSeries{
			{Name: "Casebook", Samples: share},
			{Name: T(ctx, "acc.trend_reference", FormatPercent(ReferenceAccuracy)), Samples: ref},
		},
	})
}

// CauseRow is one cause in the knowledge base.
type CauseRow struct {
	ID          string
	Title       string
	Description string
	Signature   string
	Custom      bool
	Diagnosed   int
	Confirmed   int
	Actual      int
}

// Href is the cause's knowledge-base page.
func (r CauseRow) Href() string { return route.URL(route.KBShow, r.ID) }

// Precision renders confirmed / diagnosed.
func (r CauseRow) Precision() string {
	if r.Diagnosed == 0 {
		return "–"
	}
	return FormatPercent(float64(r.Confirmed) / float64(r.Diagnosed))
}

// Recall renders confirmed / actual.
func (r CauseRow) Recall() string {
	if r.Actual == 0 {
		return "–"
	}
	return FormatPercent(float64(r.Confirmed) / float64(r.Actual))
}

// KBView is the view model of the knowledge-base index.
type KBView struct {
	Layout LayoutView
	Causes []CauseRow
}

// KBActionView is one typical action for a cause.
type KBActionView struct {
	ID, Title, Why, Risk string
	// Requested, Applied and Expected count the change requests made for
	// the action, those marked applied, and those whose measured outcome
	// had the expected effect; Measured counts those with any verdict.
	Requested, Applied, Expected, Measured int
}

// OutcomeText summarises what happened when the action was applied.
func (a KBActionView) OutcomeText() string {
	switch {
	case a.Requested == 0:
		return "No change request yet."
	case a.Applied == 0:
		return plural(a.Requested, "change request") + ", none applied yet."
	case a.Measured == 0:
		return "Applied " + times(a.Applied) + "; the outcome is not measured yet."
	}
	return "Applied " + times(a.Applied) + "; had the expected effect " + times(a.Expected) + " of " + strconv.Itoa(a.Measured) + " measured."
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// CauseView is the view model of one cause's knowledge-base page.
type CauseView struct {
	Layout  LayoutView
	Cause   CauseRow
	Actions []KBActionView
	Cases   []IncidentRow
}
