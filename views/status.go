package views

import (
	"math"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// Status is the health of a metric, a dimension or a scope as the console
// shows it. Every status has a colour, an icon and a word, so colour is
// never the only carrier.
type Status int

// Statuses, ordered from best to worst so that the larger one wins.
const (
	StatusNoData Status = iota
	StatusOK
	// StatusInfo marks something notable that needs no action yet, such as
	// an anomaly of low severity.
	StatusInfo
	StatusWarning
	StatusCritical
)

// CriticalZ is the deviation, in standard deviations in the bad direction,
// from which an anomalous metric counts as critical rather than a warning.
const CriticalZ = 6

// StatusOf classifies metric id's deviation from its baseline. A
// deviation that is statistically clear but too small to matter
// (metrics.Material) is OK.
func StatusOf(id string, d diagnose.Deviation, ok bool) Status {
	switch {
	case !ok:
		return StatusNoData
	case d.Anomalous && !metrics.Material(id, d.Mean, d.Mean+d.Z*d.Std):
		return StatusOK
	case d.Anomalous && math.Abs(d.Z) >= CriticalZ:
		return StatusCritical
	case d.Anomalous:
		return StatusWarning
	}
	return StatusOK
}

// StatusOfSeverity maps a diagnosis severity to a status.
func StatusOfSeverity(s diagnose.Severity) Status {
	switch s {
	case diagnose.SeverityCritical:
		return StatusCritical
	case diagnose.SeverityWarning:
		return StatusWarning
	case diagnose.SeverityInfo:
		return StatusInfo
	}
	return StatusOK
}

// Worse returns the worse of two statuses; a known status beats no data.
func Worse(a, b Status) Status {
	if b > a {
		return b
	}
	return a
}

// Word is the status in one word.
func (s Status) Word() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusInfo:
		return "Info"
	case StatusWarning:
		return "Warning"
	case StatusCritical:
		return "Critical"
	}
	return "No data"
}

// Icon is a shape that differs per status (for readers who cannot tell
// the colours apart).
func (s Status) Icon() string {
	switch s {
	case StatusOK:
		return "●"
	case StatusInfo:
		return "◆"
	case StatusWarning:
		return "▲"
	case StatusCritical:
		return "■"
	}
	return "○"
}

// Class is the CSS class carrying the status colour.
func (s Status) Class() string {
	switch s {
	case StatusOK:
		return "st-ok"
	case StatusInfo:
		return "st-info"
	case StatusWarning:
		return "st-warn"
	case StatusCritical:
		return "st-crit"
	}
	return "st-none"
}
