package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Postmortem serves the incident as a Markdown postmortem draft.
func (h *Incidents) Postmortem(c echo.Context) error { return h.d.postmortem(c) }

// postmortem serves the Markdown postmortem of the incident the path
// names, for the page's link and the JSON API's export.
func (d *IncidentDeps) postmortem(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p, err := d.Archive.Page(ctx, id)
	if err != nil {
		return archiveError(err, "id")
	}
	md := PostmortemMarkdownIn(ctx, p, d.Service.CauseTitles(ctx))
	if d.Changes != nil {
		if cs, err := d.Changes.d.Store.Changes(ctx, id); err == nil && len(cs) > 0 {
			followUps := "\n## " + i18n.T(ctx, "pm.followups")
			md = strings.Replace(md, followUps, "\n"+changesMarkdown(ctx, cs)+followUps, 1)
		}
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`inline; filename="incident-%d-postmortem.md"`, id))
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}

// changesMarkdown lists an incident's change requests for its postmortem.
func changesMarkdown(ctx context.Context, cs []store.Change) string {
	var b strings.Builder
	b.WriteString("## " + i18n.T(ctx, "pm.changes") + "\n\n")
	for _, ch := range cs {
		r := changeRow(ch)
		fmt.Fprintf(&b, "- %s %s: %s", mdTime(ch.CreatedAt), mdEscape(r.Title),
			i18n.T(ctx, "pm.change_line", views.StatusWordIn(ctx, string(ch.Status)), deliveryWord(ctx, ch.Delivery)))
		if ch.Verdict != "" {
			fmt.Fprint(&b, i18n.T(ctx, "pm.change_outcome", views.StatusWordIn(ctx, ch.Verdict)))
		}
		fmt.Fprintf(&b, " (%s)\n", r.Link)
	}
	return b.String()
}

// mdEscape keeps user text from being read as Markdown or HTML: it
// backslash-escapes the characters that start emphasis, code, links, HTML,
// entities and table cells, and flattens newlines. User text never starts
// a line here, so line-start markers (#, -, +, 1.) need no escape.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '&', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdCode renders s as an inline code span. Backslash escapes do not work
// inside code spans, so backticks become quotes; pipes keep the GFM table
// escape.
func mdCode(s string) string {
	s = strings.NewReplacer("`", "'", "\n", " ", "\r", " ", "|", "\\|").Replace(s)
	return "`" + s + "`"
}

func mdTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format(time.RFC3339)
}

// PostmortemMarkdown renders an incident page's data as a postmortem draft
// in English; causeTitle names causes (nil means the taxonomy's titles).
// All user-supplied text is escaped.
func PostmortemMarkdown(p store.Page, causeTitle func(string) string) string {
	return PostmortemMarkdownIn(context.Background(), p, causeTitle)
}

// PostmortemMarkdownIn is PostmortemMarkdown in the language of ctx's
// Locale: the same sections, table rows and lists, with the words and
// the diagnosis texts translated.
func PostmortemMarkdownIn(ctx context.Context, p store.Page, causeTitle func(string) string) string {
	if causeTitle == nil {
		causeTitle = views.CauseTitle
	}
	l := i18n.From(ctx)
	inc := p.Incident
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# %s\n\n", l.T("pm.title", fmt.Sprint(inc.ID), mdEscape(inc.Title)))
	w("| | |\n|---|---|\n")
	w("| %s | %s |\n", l.T("field.scope"), mdEscape(inc.Scope.String()))
	w("| %s | %s |\n", l.T("field.trigger"), mdEscape(triggerTextIn(ctx, inc)))
	if inc.Alert != nil {
		w("| %s | %s", l.T("field.alert"), l.T("pm.alert", alertStateIn(ctx, string(inc.Alert.State)), mdCode(inc.Alert.Fingerprint), mdTime(inc.Alert.StartsAt)))
		if inc.Alert.State == store.AlertResolved {
			w("%s", l.T("pm.alert_resolved", mdTime(inc.Alert.ResolvedAt)))
		}
		w(" |\n")
	}
	w("| %s | %s |\n", l.T("field.opened"), mdTime(inc.OpenedAt))
	w("| %s | %s |\n", l.T("field.window"), l.T("pm.window", mdTime(inc.WindowStart), mdTime(inc.WindowEnd)))
	w("| %s | %s |\n", l.T("field.severity"), mdEscape(severityIn(ctx, inc.Severity)))
	review := l.T("pm.not_reviewed")
	switch inc.Verdict {
	case store.VerdictCorrect:
		review = l.T("pm.confirmed")
	case store.VerdictWrong:
		review = l.T("pm.wrong", mdEscape(causeTitleIn(ctx, causeTitle, inc.TrueCause)), mdCode(inc.TrueCause))
	}
	w("| %s | %s |\n\n", l.T("field.review"), review)

	if len(p.Diagnoses) > 0 {
		d := diagnose.Localize(incident.DecodeDiagnosis(p.Diagnoses[0]), l.Code())
		w("## %s\n\n%s\n\n", l.T("field.diagnosis"), l.T("pm.diagnosis",
			mdEscape(views.CauseTitleIn(ctx, d.RootCause)), mdCode(d.RootCause), views.FormatPercent(d.Confidence),
			mdEscape(severityIn(ctx, string(d.Severity))), mdEscape(d.EngineVersion)))
		if w2 := views.CauseWhatIn(ctx, d.RootCause); w2 != "" {
			w("%s\n\n", mdEscape(w2))
		}
		if len(d.CausalChain) > 0 {
			var chain []string
			for _, id := range d.CausalChain {
				chain = append(chain, mdEscape(views.MetricLabelIn(ctx, id)))
			}
			w("%s\n\n", l.T("pm.chain", strings.Join(chain, " → ")))
		}
		writeEvidence(ctx, &b, d)
		writeActions(ctx, &b, d)
		if len(p.Diagnoses) > 1 {
			w("### %s\n\n", l.T("incident.earlier"))
			for _, old := range p.Diagnoses[1:] {
				w("- %s: %s\n", mdTime(old.CreatedAt), l.T("pm.earlier", mdEscape(views.CauseTitleIn(ctx, old.RootCause)),
					mdCode(old.RootCause), views.FormatPercent(old.Confidence), mdEscape(old.EngineVersion)))
			}
			w("\n")
		}
	}
	w("## %s\n\n", l.T("incident.timeline"))
	for _, e := range timeline(ctx, p, causeTitle) {
		who := ""
		if e.Who != "" {
			who = " (" + mdEscape(e.Who) + ")"
		}
		w("- %s **%s**%s: %s\n", mdTime(e.At), e.KindLabelIn(ctx), who, mdEscape(e.Text))
	}
	w("\n## %s\n\n- [ ] \n", l.T("pm.followups"))
	return b.String()
}

// severityIn names a severity; "" stays empty.
func severityIn(ctx context.Context, s string) string {
	if s == "" {
		return ""
	}
	return views.SeverityLabel(ctx, s)
}

// alertStateIn names an alert state ("firing", "resolved").
func alertStateIn(ctx context.Context, state string) string {
	switch state {
	case "firing":
		return i18n.T(ctx, "alert.firing")
	case "resolved":
		return i18n.T(ctx, "pm.resolved")
	}
	return state
}

func writeEvidence(ctx context.Context, b *strings.Builder, d diagnose.Diagnosis) {
	if len(d.Evidence) == 0 {
		return
	}
	l := i18n.From(ctx)
	fmt.Fprintf(b, "### %s\n\n| %s | %s | %s | z | %s |\n|---|---:|---:|---:|---|\n", l.T("diagnosis.evidence"),
		l.T("field.metric"), l.T("field.value"), l.T("field.baseline"), l.T("field.finding"))
	for _, e := range d.Evidence {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", mdEscape(views.MetricLabelIn(ctx, e.Metric)), views.FormatValue(e.Metric, e.Value),
			views.FormatValue(e.Metric, e.BaselineMean), views.FormatZ(e.Z), mdEscape(e.Text))
	}
	b.WriteString("\n")
}

func writeActions(ctx context.Context, b *strings.Builder, d diagnose.Diagnosis) {
	if len(d.Actions) == 0 {
		return
	}
	l := i18n.From(ctx)
	fmt.Fprintf(b, "### %s\n\n", l.T("pm.actions"))
	for i, a := range d.Actions {
		fmt.Fprintf(b, "%d. **%s**", i+1, mdEscape(a.Title))
		if a.Knob != "" {
			fmt.Fprintf(b, " (%s", mdCode(a.Knob))
			if a.Proposed != "" {
				fmt.Fprintf(b, " → %s", mdCode(diagnose.ProposedIn(l.Code(), a.Proposed)))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		if a.Why != "" {
			fmt.Fprintf(b, "   - %s %s\n", l.T("pm.why"), mdEscape(a.Why))
		}
		for _, e := range a.Effects {
			fmt.Fprintf(b, "   - %s %s\n", l.T("pm.expected"), mdEscape(views.EffectTextIn(ctx, e)))
		}
		if a.Risk != "" {
			fmt.Fprintf(b, "   - %s %s\n", l.T("pm.risk"), mdEscape(a.Risk))
		}
		if a.Rollback != "" {
			fmt.Fprintf(b, "   - %s %s\n", l.T("pm.rollback"), mdEscape(a.Rollback))
		}
	}
	b.WriteString("\n")
}

// deliveryWord names a webhook delivery state in the request's language.
func deliveryWord(ctx context.Context, d string) string {
	switch d {
	case store.DeliveryPending:
		return i18n.T(ctx, "delivery.pending")
	case store.DeliveryDelivered:
		return i18n.T(ctx, "delivery.delivered")
	case store.DeliveryFailed:
		return i18n.T(ctx, "delivery.failed")
	case store.DeliveryNone:
		return i18n.T(ctx, "delivery.none")
	}
	return d
}
