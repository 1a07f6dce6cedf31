package views

import (
	"context"
	"strings"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// in is the diagnosis with its texts in the request's language (package
// diagnose keeps the English ones it stored; ids and numbers are kept).
func (p DiagnosisPanelView) in(ctx context.Context) diagnose.Diagnosis {
	return diagnose.Localize(p.D, lang(ctx))
}

// TitleIn is the diagnosis title in the request's language.
func (p DiagnosisPanelView) TitleIn(ctx context.Context) string {
	if t := p.in(ctx).Title; t != "" {
		return t
	}
	return CauseTitleIn(ctx, p.D.RootCause)
}

// NotesIn are the diagnosis's notes in the request's language.
func (p DiagnosisPanelView) NotesIn(ctx context.Context) []string { return p.in(ctx).Notes }

// ActionsIn are the diagnosis's actions in the request's language.
func (p DiagnosisPanelView) ActionsIn(ctx context.Context) []diagnose.Action {
	return p.in(ctx).Actions
}

// ChainIn is the causal chain as metric labels in the request's language.
func (p DiagnosisPanelView) ChainIn(ctx context.Context) []string {
	out := make([]string, len(p.D.CausalChain))
	for i, id := range p.D.CausalChain {
		out[i] = MetricLabelIn(ctx, id)
	}
	return out
}

// MissingLabelsIn lists the metrics the rules wanted but did not get.
func (p DiagnosisPanelView) MissingLabelsIn(ctx context.Context) string {
	out := make([]string, len(p.D.Missing))
	for i, id := range p.D.Missing {
		out[i] = MetricLabelIn(ctx, id)
	}
	return strings.Join(out, T(ctx, "list.sep"))
}

// EvidenceIn is the evidence table with labels and findings in the
// request's language.
func (p DiagnosisPanelView) EvidenceIn(ctx context.Context) []EvidenceRow {
	rows := p.Evidence()
	ev := p.in(ctx).Evidence
	for i := range rows {
		rows[i].Label = MetricLabelIn(ctx, rows[i].Metric)
		rows[i].Text = ev[i].Text
	}
	return rows
}

// EffectTextIn renders an expected effect ("TPOT ↓ -20..-40%").
func EffectTextIn(ctx context.Context, e diagnose.Effect) string {
	arrow := "↑"
	if e.Direction == "down" {
		arrow = "↓"
	}
	return MetricLabelIn(ctx, e.Metric) + " " + arrow + " " + diagnose.EffectSizeIn(lang(ctx), e.Size)
}

// KnobTextIn renders an action's knob change ("gpu_memory_utilization → 0.95").
func KnobTextIn(ctx context.Context, a diagnose.Action) string {
	proposed := diagnose.ProposedIn(lang(ctx), a.Proposed)
	switch {
	case a.Knob == "" && a.Proposed != "":
		return proposed
	case a.Knob == "":
		return T(ctx, "action.operational")
	case a.Proposed == "":
		return a.Knob
	}
	return a.Knob + " → " + proposed
}

// CauseHeadlineIn is the incident page's headline: the diagnosed cause.
func (v IncidentView) CauseHeadlineIn(ctx context.Context) string {
	if !v.HasDiagnosis() {
		return v.Title
	}
	return v.Current.TitleIn(ctx)
}

// TopEvidenceIn is the first n evidence lines in the request's language.
func (v IncidentView) TopEvidenceIn(ctx context.Context, n int) []EvidenceRow {
	ev := v.Current.EvidenceIn(ctx)
	if len(ev) > n {
		ev = ev[:n]
	}
	return ev
}

// VerdictLabel describes the current review state.
func (v IncidentView) VerdictLabel(ctx context.Context) string {
	if v.TrueCause != "" && v.TrueCauseTitle == "" {
		return VerdictStateIn(ctx, v.Verdict, CauseTitle(v.TrueCause))
	}
	return VerdictStateIn(ctx, v.Verdict, v.TrueCauseTitle)
}

// AlertLabel describes the alert state, if any.
func (v IncidentView) AlertLabel(ctx context.Context) string {
	switch v.AlertState {
	case "firing":
		return T(ctx, "alert.firing")
	case "resolved":
		return T(ctx, "alert.resolved", Time(ctx, v.ResolvedAt))
	}
	return ""
}

// PanelTitle names an incident chart panel (a metric dimension).
func PanelTitle(ctx context.Context, id, title string) string {
	switch metrics.Dimension(id) {
	case metrics.Latency:
		return T(ctx, "dim.latency")
	case metrics.Throughput:
		return T(ctx, "dim.throughput")
	case metrics.Utilization:
		return T(ctx, "dim.utilization")
	case metrics.Quality:
		return T(ctx, "dim.quality")
	}
	return title
}

// VerdictLabel says how the similar incident's label was reached.
func (s SimilarIncident) VerdictLabel(ctx context.Context) string {
	switch s.Verdict {
	case "correct":
		return T(ctx, "similar.confirmed")
	case "wrong":
		return T(ctx, "similar.corrected")
	}
	return T(ctx, "similar.labelled")
}

// SharedLabel names the shared deviations.
func (s SimilarIncident) SharedLabel(ctx context.Context) string {
	names := make([]string, 0, len(s.Shared))
	for _, id := range s.Shared {
		if _, ok := metrics.Lookup(id); ok {
			names = append(names, MetricLabelIn(ctx, id))
			continue
		}
		names = append(names, SignatureFeatureTitle(id))
	}
	return strings.Join(names, T(ctx, "list.sep"))
}

// KindLabelIn is the timeline's word for an entry kind.
func (e TimelineEntry) KindLabelIn(ctx context.Context) string {
	switch e.Kind {
	case "opened":
		return T(ctx, "timeline.opened")
	case "diagnosis":
		return T(ctx, "timeline.diagnosed")
	case "label":
		return T(ctx, "timeline.reviewed")
	case "note":
		return T(ctx, "timeline.note")
	case "resolved":
		return T(ctx, "timeline.resolved")
	case "change":
		return T(ctx, "timeline.change")
	case "applied":
		return T(ctx, "timeline.applied")
	case "rolled_back":
		return T(ctx, "timeline.rolled_back")
	}
	return e.Kind
}

// ProposedIn is an action's proposed value in the request's language.
func ProposedIn(ctx context.Context, p string) string { return diagnose.ProposedIn(lang(ctx), p) }
