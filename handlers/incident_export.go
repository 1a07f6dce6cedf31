package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
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
	md := PostmortemMarkdown(p, d.Service.CauseTitles(ctx))
	if d.Changes != nil {
		if cs, err := d.Changes.d.Store.Changes(ctx, id); err == nil && len(cs) > 0 {
			md = strings.Replace(md, "\n## Follow-ups", "\n"+changesMarkdown(cs)+"\n## Follow-ups", 1)
		}
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`inline; filename="incident-%d-postmortem.md"`, id))
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}

// changesMarkdown lists an incident's change requests for its postmortem.
func changesMarkdown(cs []store.Change) string {
	var b strings.Builder
	b.WriteString("## Change requests\n\n")
	for _, ch := range cs {
		r := changeRow(ch)
		fmt.Fprintf(&b, "- %s %s: %s, webhook %s", mdTime(ch.CreatedAt), mdEscape(r.Title), views.StatusWord(string(ch.Status)), ch.Delivery)
		if ch.Verdict != "" {
			fmt.Fprintf(&b, ", outcome: %s", views.StatusWord(ch.Verdict))
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

// PostmortemMarkdown renders an incident page's data as a postmortem draft;
// causeTitle names causes (nil means the taxonomy's titles). All
// user-supplied text is escaped.
func PostmortemMarkdown(p store.Page, causeTitle func(string) string) string {
	if causeTitle == nil {
		causeTitle = views.CauseTitle
	}
	inc := p.Incident
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Incident %d: %s\n\n", inc.ID, mdEscape(inc.Title))
	w("| | |\n|---|---|\n")
	w("| Scope | %s |\n", mdEscape(inc.Scope.String()))
	w("| Trigger | %s |\n", mdEscape(triggerText(inc)))
	if inc.Alert != nil {
		w("| Alert | %s, fingerprint %s, started %s", inc.Alert.State, mdCode(inc.Alert.Fingerprint), mdTime(inc.Alert.StartsAt))
		if inc.Alert.State == store.AlertResolved {
			w(", resolved %s", mdTime(inc.Alert.ResolvedAt))
		}
		w(" |\n")
	}
	w("| Opened | %s |\n", mdTime(inc.OpenedAt))
	w("| Window | %s to %s |\n", mdTime(inc.WindowStart), mdTime(inc.WindowEnd))
	w("| Severity | %s |\n", mdEscape(inc.Severity))
	review := "not reviewed"
	switch inc.Verdict {
	case store.VerdictCorrect:
		review = "diagnosis confirmed correct"
	case store.VerdictWrong:
		review = "diagnosis wrong; true cause " + mdEscape(causeTitle(inc.TrueCause)) + " (" + mdCode(inc.TrueCause) + ")"
	}
	w("| Review | %s |\n\n", review)

	if len(p.Diagnoses) > 0 {
		d := incident.DecodeDiagnosis(p.Diagnoses[0])
		w("## Diagnosis\n\n**%s** (%s), confidence %s, severity %s, engine %s.\n\n",
			mdEscape(views.CauseTitle(d.RootCause)), mdCode(d.RootCause), views.FormatPercent(d.Confidence), mdEscape(string(d.Severity)), mdEscape(d.EngineVersion))
		if w2 := views.CauseWhat(d.RootCause); w2 != "" {
			w("%s\n\n", mdEscape(w2))
		}
		if len(d.CausalChain) > 0 {
			var chain []string
			for _, id := range d.CausalChain {
				chain = append(chain, mdEscape(views.MetricLabel(id)))
			}
			w("Causal chain: %s.\n\n", strings.Join(chain, " → "))
		}
		writeEvidence(&b, d)
		writeActions(&b, d)
		if len(p.Diagnoses) > 1 {
			w("### Earlier diagnoses\n\n")
			for _, old := range p.Diagnoses[1:] {
				w("- %s: %s (%s), confidence %s, engine %s\n", mdTime(old.CreatedAt), mdEscape(views.CauseTitle(old.RootCause)),
					mdCode(old.RootCause), views.FormatPercent(old.Confidence), mdEscape(old.EngineVersion))
			}
			w("\n")
		}
	}
	w("## Timeline\n\n")
	for _, e := range timeline(p, causeTitle) {
		who := ""
		if e.Who != "" {
			who = " (" + mdEscape(e.Who) + ")"
		}
		w("- %s **%s**%s: %s\n", mdTime(e.At), e.KindLabel(), who, mdEscape(e.Text))
	}
	w("\n## Follow-ups\n\n- [ ] \n")
	return b.String()
}

func writeEvidence(b *strings.Builder, d diagnose.Diagnosis) {
	if len(d.Evidence) == 0 {
		return
	}
	b.WriteString("### Evidence\n\n| Metric | Value | Baseline | z | Finding |\n|---|---:|---:|---:|---|\n")
	for _, e := range d.Evidence {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", mdEscape(views.MetricLabel(e.Metric)), views.FormatValue(e.Metric, e.Value),
			views.FormatValue(e.Metric, e.BaselineMean), views.FormatZ(e.Z), mdEscape(e.Text))
	}
	b.WriteString("\n")
}

func writeActions(b *strings.Builder, d diagnose.Diagnosis) {
	if len(d.Actions) == 0 {
		return
	}
	b.WriteString("### Recommended actions\n\n")
	for i, a := range d.Actions {
		fmt.Fprintf(b, "%d. **%s**", i+1, mdEscape(a.Title))
		if a.Knob != "" {
			fmt.Fprintf(b, " (%s", mdCode(a.Knob))
			if a.Proposed != "" {
				fmt.Fprintf(b, " → %s", mdCode(a.Proposed))
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
		if a.Why != "" {
			fmt.Fprintf(b, "   - Why: %s\n", mdEscape(a.Why))
		}
		for _, e := range a.Effects {
			fmt.Fprintf(b, "   - Expected: %s\n", mdEscape(views.EffectText(e)))
		}
		if a.Risk != "" {
			fmt.Fprintf(b, "   - Risk: %s\n", mdEscape(a.Risk))
		}
		if a.Rollback != "" {
			fmt.Fprintf(b, "   - Rollback: %s\n", mdEscape(a.Rollback))
		}
	}
	b.WriteString("\n")
}
