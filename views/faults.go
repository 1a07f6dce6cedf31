package views

import "time"

// FaultsView is the view model of the demo fault-injection panel.
type FaultsView struct {
	Layout LayoutView
	Causes []FaultCauseOption
	Scopes []string // "model" or "model/instance"
	Active []FaultRow
	Flash  string // the outcome of the last form post
	Now    time.Time
}

// FaultCauseOption is one injectable root cause.
type FaultCauseOption struct {
	ID, Title string
}

// FaultRow is one active fault.
type FaultRow struct {
	Cause    string
	Scope    string
	Severity string
	Start    time.Time
	Until    string // "until cleared" or an end time
}
