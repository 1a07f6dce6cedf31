package views

import (
	"strconv"
	"time"

	"github.com/casebook/casebook/metrics"
)

// IncidentPanel is one dimension of the archived charts.
type IncidentPanel struct {
	ID     string
	Title  string
	Charts []Chart
}

// PastDiagnosis is an earlier diagnosis of an incident, kept beside the
// current one after a re-diagnosis.
type PastDiagnosis struct {
	ID    int64
	At    time.Time
	Panel DiagnosisPanelView
}

// TimelineEntry is one event on an incident's timeline.
type TimelineEntry struct {
	At   time.Time
	Kind string // "opened", "diagnosis", "label", "note", "resolved"
	Who  string
	Text string
}

// CauseOption is one entry of the true-cause select.
type CauseOption struct {
	ID, Title string
	Custom    bool // engineer-created rather than from the taxonomy
}

// ShareRow is one share link of an incident (never its token).
type ShareRow struct {
	ID        int64
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt time.Time
	Active    bool
}

// IncidentView is the view model of the incident page, its read-only shared
// form and its printable form.
type IncidentView struct {
	Layout      LayoutView
	ID          int64
	Title       string
	Scope       metrics.Scope
	Trigger     string // e.g. "Alertmanager: VLLMHighTTFT"
	AlertState  string // "", "firing" or "resolved"
	ResolvedAt  time.Time
	OpenedAt    time.Time
	WindowStart time.Time
	WindowEnd   time.Time
	Severity    string
	Panels      []IncidentPanel
	Current     DiagnosisPanelView
	Past        []PastDiagnosis
	Timeline    []TimelineEntry
	Verdict     string // "", "correct", "wrong"
	TrueCause   string
	// TrueCauseTitle names TrueCause, including engineer-created causes.
	TrueCauseTitle string
	Causes         []CauseOption
	Shares         []ShareRow
	// Traces is the kernel-trace section (level 4 of the latency decomposition).
	Traces TracesView
	// NewShareURL is shown once, right after a share link is created.
	NewShareURL string
	// ReadOnly hides every form and link out of the incident (shared view).
	ReadOnly bool
	Now      time.Time
}

// Path is the incident page's URL.
func (v IncidentView) Path() string { return IncidentPath(v.ID) }

// IncidentPath is the stable URL of incident id.
func IncidentPath(id int64) string { return "/incidents/" + strconv.FormatInt(id, 10) }

// Action is the URL of a form action under the incident.
func (v IncidentView) Action(sub string) string { return v.Path() + "/" + sub }

// Status is the page's status colour from its severity.
func (v IncidentView) Status() Status { return StatusOfSeverityWord(v.Severity) }

// VerdictText describes the current review state.
func (v IncidentView) VerdictText() string {
	switch v.Verdict {
	case "correct":
		return "Reviewed: diagnosis correct"
	case "wrong":
		t := v.TrueCauseTitle
		if t == "" {
			t = CauseTitle(v.TrueCause)
		}
		return "Reviewed: diagnosis wrong, true cause " + t
	default:
		return "Not reviewed yet"
	}
}

// AlertText describes the alert state, if any.
func (v IncidentView) AlertText() string {
	switch v.AlertState {
	case "firing":
		return "firing"
	case "resolved":
		return "resolved " + FormatTime(v.ResolvedAt)
	}
	return ""
}

// StatusOfSeverityWord maps a stored severity word to a status.
func StatusOfSeverityWord(s string) Status {
	switch s {
	case "critical":
		return StatusCritical
	case "warning":
		return StatusWarning
	case "info":
		return StatusInfo
	}
	return StatusNoData
}

// KindLabel is the timeline's word for an entry kind.
func (e TimelineEntry) KindLabel() string {
	switch e.Kind {
	case "opened":
		return "Opened"
	case "diagnosis":
		return "Diagnosed"
	case "label":
		return "Reviewed"
	case "note":
		return "Note"
	case "resolved":
		return "Resolved"
	}
	return e.Kind
}
