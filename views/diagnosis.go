package views

import (
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// DiagnosisPanelView is the view model of the reusable diagnosis panel.
type DiagnosisPanelView struct {
	D diagnose.Diagnosis
	// ChangeURL, when set, is where each action's "Create change request"
	// form posts (an incident's /changes); empty hides the forms.
	ChangeURL string
	// Current holds the knob values Casebook knows (engine info labels or
	// the configured engine file); a form asks for the others.
	Current map[string]string
	// Engine names the scope's engine when it is not vLLM, and
	// EngineKnobs says per knob id how that engine sets it, or that it
	// has no equivalent and why.
	Engine      string
	EngineKnobs map[string]string
}

// CurrentOf is the known current value of an action's knob, or "".
func (p DiagnosisPanelView) CurrentOf(a diagnose.Action) string { return p.Current[a.Knob] }

// NewDiagnosisPanel wraps a diagnosis for the DiagnosisPanel component.
func NewDiagnosisPanel(d diagnose.Diagnosis) DiagnosisPanelView {
	return DiagnosisPanelView{D: d}
}

// Status is the panel's status, from the diagnosis severity; a diagnosis
// of "none" is OK whatever its severity.
func (p DiagnosisPanelView) Status() Status {
	if p.D.RootCause == metrics.CauseNone {
		return StatusOK
	}
	return StatusOfSeverity(p.D.Severity)
}

// Title is the diagnosis title, falling back to the taxonomy title.
func (p DiagnosisPanelView) Title() string {
	if p.D.Title != "" {
		return p.D.Title
	}
	return CauseTitle(p.D.RootCause)
}

// Confidence renders the confidence as a percentage.
func (p DiagnosisPanelView) Confidence() string { return FormatPercent(p.D.Confidence) }

// SeverityWord is the severity for display.
func (p DiagnosisPanelView) SeverityWord() string {
	if p.D.Severity == "" {
		return "info"
	}
	return string(p.D.Severity)
}

// CauseTitle returns the taxonomy title of a root-cause id, or the id.
func CauseTitle(id string) string { return metrics.CauseTitle(id) }

// CauseWhat returns the taxonomy's explanation of a root cause.
func CauseWhat(id string) string {
	if c, ok := metrics.LookupCause(id); ok {
		return c.What
	}
	return ""
}

// EvidenceRow is one formatted evidence line.
type EvidenceRow struct {
	Metric, Label, Value, Baseline, Z, Text string
	Status                                  Status
}

// Evidence formats the evidence table.
func (p DiagnosisPanelView) Evidence() []EvidenceRow {
	out := make([]EvidenceRow, 0, len(p.D.Evidence))
	for _, e := range p.D.Evidence {
		st := StatusOK
		switch a := abs(e.Z); {
		case a >= CriticalZ:
			st = StatusCritical
		case a > 3:
			st = StatusWarning
		}
		out = append(out, EvidenceRow{
			Metric: e.Metric, Label: MetricLabel(e.Metric),
			Value: FormatValue(e.Metric, e.Value), Baseline: FormatValue(e.Metric, e.BaselineMean),
			Z: FormatZ(e.Z), Text: e.Text, Status: st,
		})
	}
	return out
}

// Chain returns the causal chain as display labels.
func (p DiagnosisPanelView) Chain() []string {
	out := make([]string, len(p.D.CausalChain))
	for i, id := range p.D.CausalChain {
		out[i] = MetricLabel(id)
	}
	return out
}

// MissingLabels lists the metrics the rules wanted but did not get.
func (p DiagnosisPanelView) MissingLabels() string {
	out := make([]string, len(p.D.Missing))
	for i, id := range p.D.Missing {
		out[i] = MetricLabel(id)
	}
	return strings.Join(out, ", ")
}

// EffectText renders an expected effect ("TPOT ↓ -20..-40%").
func EffectText(e diagnose.Effect) string {
	arrow := "↑"
	if e.Direction == "down" {
		arrow = "↓"
	}
	return MetricLabel(e.Metric) + " " + arrow + " " + e.Size
}

// KnobText renders an action's knob change ("gpu_memory_utilization → 0.95").
func KnobText(a diagnose.Action) string {
	if a.Knob == "" && a.Proposed != "" {
		return a.Proposed
	}
	switch {
	case a.Knob == "":
		return "operational step"
	case a.Proposed == "":
		return a.Knob
	}
	return a.Knob + " → " + a.Proposed
}

// ScoreText renders a candidate score.
func ScoreText(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// DiagnosisView is the view model of the "diagnose now" result page.
type DiagnosisView struct {
	Layout   LayoutView
	Scope    metrics.Scope
	At       time.Time
	BackHref string // the live view the diagnosis was started from
	Panel    DiagnosisPanelView
	Charts   []Chart // the leading evidence metrics over the two hours before
}
