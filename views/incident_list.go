package views

import (
	"net/url"
	"time"

	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
)

// IncidentRow is one incident in the list.
type IncidentRow struct {
	ID         int64
	Title      string
	Scope      metrics.Scope
	OpenedAt   time.Time
	Severity   string
	Trigger    string
	AlertState string
	RootCause  string
	Confidence float64
	Verdict    string
	TrueCause  string
}

// Href is the incident's page.
func (r IncidentRow) Href() string { return route.URL(route.IncidentShow, r.ID) }

// Status is the row's colour from its severity.
func (r IncidentRow) Status() Status { return StatusOfSeverityWord(r.Severity) }

// ReviewText is the review column.
func (r IncidentRow) ReviewText() string {
	switch r.Verdict {
	case "correct":
		return "correct"
	case "wrong":
		return "wrong → " + CauseTitle(r.TrueCause)
	}
	return "unreviewed"
}

// IncidentFilters are the list's filter values, echoed into the form.
type IncidentFilters struct {
	Q, Model, Instance, Cause, Verdict, Severity, From, To string
}

// Query encodes the filters as URL parameters (without the cursor).
func (f IncidentFilters) Query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.Q, "model": f.Model, "instance": f.Instance, "cause": f.Cause,
		"verdict": f.Verdict, "severity": f.Severity, "from": f.From, "to": f.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// IncidentListView is the view model of the incident list.
type IncidentListView struct {
	Layout  LayoutView
	Filters IncidentFilters
	Causes  []CauseOption
	Rows    []IncidentRow
	// NextHref is the next page's URL; "" on the last page.
	NextHref string
	// FirstHref is set when this is not the first page.
	FirstHref string
}

// VerdictOptions are the review-state filter values.
var VerdictOptions = []CauseOption{{ID: "unreviewed", Title: "Unreviewed"}, {ID: "correct", Title: "Correct"}, {ID: "wrong", Title: "Wrong"}}

// SeverityOptions are the severity filter values.
var SeverityOptions = []string{"critical", "warning", "info"}
