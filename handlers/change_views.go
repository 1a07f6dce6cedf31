package handlers

import (
	"context"
	"fmt"
	"strings"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

func (h *Changes) layout(title string) views.LayoutView {
	if h.d.Layout != nil {
		return h.d.Layout(title, views.NavIncidents)
	}
	return views.LayoutView{Title: title, Nav: views.NavIncidents, Assets: h.d.Assets}
}

// ChangeRows are an incident's change requests for its page.
func ChangeRows(cs []store.Change) []views.ChangeRow {
	out := make([]views.ChangeRow, 0, len(cs))
	for _, ch := range cs {
		out = append(out, changeRow(ch))
	}
	return out
}

func changeRow(ch store.Change) views.ChangeRow {
	req, _ := change.DecodeRequest(ch.Doc) // an unreadable document leaves the action's id as the title
	title := req.Title
	if title == "" {
		title = ch.ActionID
	}
	return views.ChangeRow{ID: ch.ID, Title: title, Status: string(ch.Status), Delivery: ch.Delivery, Verdict: ch.Verdict,
		CreatedAt: ch.CreatedAt, Link: route.URL(route.ChangeShow, ch.IncidentID, ch.ID)}
}

// changeTimeline adds an incident's change requests to its timeline.
func changeTimeline(ctx context.Context, cs []store.Change) []views.TimelineEntry {
	var out []views.TimelineEntry
	for _, ch := range cs {
		r := changeRow(ch)
		text := r.Title
		switch ch.Delivery {
		case store.DeliveryPending:
			text += i18n.T(ctx, "timeline.webhook_sending")
		case store.DeliveryDelivered:
			text += i18n.T(ctx, "timeline.webhook_delivered")
		case store.DeliveryFailed:
			text += i18n.T(ctx, "timeline.webhook_failed")
		}
		out = append(out, views.TimelineEntry{At: ch.CreatedAt, Kind: "change", Who: ch.CreatedBy, Text: text, Link: r.Link})
		if !ch.AppliedAt.IsZero() {
			text := r.Title
			if ch.Verdict != "" {
				text += i18n.T(ctx, "timeline.change_verdict", views.StatusWordIn(ctx, ch.Verdict))
			}
			kind := "applied"
			if ch.Status == store.ChangeRolledBack {
				kind = "rolled_back"
			}
			out = append(out, views.TimelineEntry{At: ch.AppliedAt, Kind: kind, Text: text, Link: r.Link})
		}
	}
	return out
}

// changeView shapes a change request for its page: the page's words in
// the viewer's language, the document's texts in the language it was
// written in.
func (h *Changes) changeView(ctx context.Context, inc store.Incident, ch store.Change) views.ChangeView {
	l := i18n.From(ctx)
	req, _ := change.DecodeRequest(ch.Doc) // an unreadable document shows the stored Markdown only
	v := views.ChangeView{Layout: h.layout(l.T("cr.title", fmt.Sprint(ch.ID))), IncidentID: inc.ID, IncidentTitle: inc.Title,
		Row: changeRow(ch), UID: ch.UID, Action: req.Action.Title, Why: req.Action.Why, Risk: req.Risk, Rollback: req.Rollback,
		ArgDiff: req.VLLMArgs, Helm: req.HelmValues, Markdown: ch.Markdown, Webhook: h.d.Webhook != nil, AppliedAt: ch.AppliedAt,
		Verdict: ch.Verdict}
	if req.Change != nil {
		v.Knob, v.Before, v.After, v.Reason = req.Change.Knob, req.Change.Current, req.Change.Proposed, req.Change.Reason
		if v.Before == "" {
			v.Before = l.T("cr.unknown")
		}
	}
	if req.Window != nil {
		key, start := "change.window_next", req.Window.Start.Format("Mon 2 Jan 2006 15:04")
		if req.Window.Open {
			key = "change.window_open"
		}
		if l.IsChinese() {
			start = req.Window.Start.Format("2006年1月2日 15:04")
		}
		v.Window = l.T(key, start, req.Window.End.Format("15:04"), req.Window.Zone)
	}
	if req.Capacity != nil {
		v.Capacity = req.Capacity.Summary
		if len(req.Alternatives) > 0 {
			v.Capacity += l.T("change.alternatives", strings.Join(req.Alternatives, l.T("trigger.sep")))
		}
	}
	for _, e := range req.Effects {
		v.Effects = append(v.Effects, views.EffectTextIn(ctx, diagnose.Effect{Metric: e.Metric, Direction: e.Direction, Size: e.Size}))
	}
	for _, a := range ch.Attempts {
		v.Attempts = append(v.Attempts, views.DeliveryRow{Attempt: a.Attempt, At: a.At, OK: a.OK, Code: a.Code, Error: a.Error})
	}
	if !ch.AppliedAt.IsZero() {
		v.OutcomeDue = change.OutcomeDue(ch.AppliedAt, h.d.OutcomeWindow)
	}
	if len(ch.Outcome) > 0 {
		if o, err := change.DecodeOutcome(ch.Outcome); err == nil {
			for _, e := range o.Effects {
				v.Outcome = append(v.Outcome, views.OutcomeRow{Metric: views.MetricLabelIn(ctx, e.Metric), Direction: directionIn(l, e.Direction),
					Before: fmt.Sprintf("%.4g", e.Before), After: fmt.Sprintf("%.4g", e.After), Change: fmt.Sprintf("%+.0f%%", 100*e.Change),
					Verdict: e.Verdict, Why: e.Why})
			}
		}
	}
	return v
}

// directionIn names an effect's direction ("up", "down") in l's language.
func directionIn(l *i18n.Locale, dir string) string {
	if dir == "up" || dir == "down" {
		return l.T("cr." + dir)
	}
	return dir
}
