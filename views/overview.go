package views

import (
	"time"

	"github.com/casebook/casebook/metrics"
)

// OverviewView is the view model of the overview page.
type OverviewView struct {
	Layout    LayoutView
	Generated time.Time
	Rows      []ScopeRow // worst first
	Counts    map[Status]int
}

// ScopeRow is one model or instance on the overview.
type ScopeRow struct {
	Scope   metrics.Scope
	Href    string
	Status  Status
	Summary string // the worst deviation in words, e.g. "TTFT +7.2σ"
	Err     string // why the scope could not be read, if it could not
	Dims    []DimCell
	// Engine names the scope's engine ("SGLang"); empty when unknown.
	Engine string
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

// StatusCount returns how many rows have status s.
func (v OverviewView) StatusCount(s Status) string { return itoa(v.Counts[s]) }
