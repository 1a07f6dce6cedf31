package views

import (
	"strconv"
	"strings"
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
	Kind string // "opened", "diagnosis", "label", "note", "resolved", "change", "applied", "rolled_back"
	Who  string
	Text string
	Link string // optional page of the event (a change request)
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

// SimilarIncident is one past case the current diagnosis matched: an
// archived incident (ID > 0, linked) or a case from elsewhere (ID 0).
type SimilarIncident struct {
	Case       string // the case id the engine reported
	ID         int64
	Title      string
	OpenedAt   time.Time
	Verdict    string // "correct" or "wrong": how its label was reached
	Cause      string // its true cause
	CauseTitle string
	Similarity float64
	// Shared lists the catalog ids (or signature ratio names) on which
	// both incidents deviate the same way.
	Shared []string
}

// Number is the incident's number as shown ("#12").
func (s SimilarIncident) Number() string { return "#" + strconv.FormatInt(s.ID, 10) }

// SharedText names the shared deviations for display.
func (s SimilarIncident) SharedText() string {
	names := make([]string, 0, len(s.Shared))
	for _, id := range s.Shared {
		names = append(names, SignatureFeatureTitle(id))
	}
	return strings.Join(names, ", ")
}

// VerdictText says how the similar incident's label was reached.
func (s SimilarIncident) VerdictText() string {
	switch s.Verdict {
	case "correct":
		return "diagnosis confirmed"
	case "wrong":
		return "diagnosis corrected"
	}
	return "labelled"
}

// signatureRatioTitles name the ratio features of a case signature.
var signatureRatioTitles = map[string]string{
	"ttft_over_tpot":    "TTFT/TPOT",
	"queue_share":       "queue share of E2E",
	"gateway_excess":    "time outside the engine",
	"kv_usage":          "KV-cache usage",
	"prefix_hit_change": "prefix-hit change",
	"sm_per_seq_change": "SM activity per sequence",
	"error_level":       "error level",
	"rejection_level":   "draft rejection",
}

// SignatureFeatureTitle names a catalog id or a signature ratio.
func SignatureFeatureTitle(id string) string {
	if t, ok := signatureRatioTitles[id]; ok {
		return t
	}
	return MetricLabel(id)
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
	// Similar lists the past incidents the current diagnosis matched.
	Similar []SimilarIncident
	// Changes are the incident's change requests.
	Changes []ChangeRow
	// ReadOnly hides every form and link out of the incident (shared view).
	ReadOnly bool
	Now      time.Time
	// Review is the one-click review under the answer (not read-only).
	Review ReviewControls
}

// HasDiagnosis reports whether the incident has been diagnosed.
func (v IncidentView) HasDiagnosis() bool { return v.Current.D.RootCause != "" }

// CauseHeadline is the page's headline: the diagnosed cause.
func (v IncidentView) CauseHeadline() string {
	if !v.HasDiagnosis() {
		return v.Title
	}
	return v.Current.Title()
}

// AnswerStatus colours the headline: the diagnosis's status, else the
// incident's severity.
func (v IncidentView) AnswerStatus() Status {
	if v.HasDiagnosis() {
		return v.Current.Status()
	}
	return v.Status()
}

// SeverityText is the severity word shown in the headline.
func (v IncidentView) SeverityText() string {
	if v.Severity == "" {
		return "unknown"
	}
	return v.Severity
}

// TopEvidence is the first n evidence lines of the current diagnosis,
// strongest first as the engine ranked them.
func (v IncidentView) TopEvidence(n int) []EvidenceRow {
	ev := v.Current.Evidence()
	if len(ev) > n {
		ev = ev[:n]
	}
	return ev
}

// Status is the page's status colour from its severity.
func (v IncidentView) Status() Status { return StatusOfSeverityWord(v.Severity) }

// VerdictText describes the current review state.
func (v IncidentView) VerdictText() string {
	t := v.TrueCauseTitle
	if t == "" {
		t = CauseTitle(v.TrueCause)
	}
	return VerdictState(v.Verdict, t)
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
	case "change":
		return "Change request"
	case "applied":
		return "Change applied"
	case "rolled_back":
		return "Change rolled back"
	}
	return e.Kind
}
