package change

import (
	"fmt"
	"strings"
	"time"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

// Markdown renders the change request for a ticket or a review, in the
// document's language; its structure is the same in every language.
func (r Request) Markdown() string {
	l := locale(r.Lang)
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# %s\n\n", l.T("cr.title", r.ID))
	w("**%s**\n\n", r.Title)
	w("- %s\n", l.T("cr.kv", l.T("cr.incident"), fmt.Sprintf("[#%d](%s)", r.IncidentID, r.IncidentURL)))
	if r.Scope.Model != "" {
		w("- %s\n", l.T("cr.kv", l.T("cr.scope"), r.Scope.String()))
	}
	w("- %s", l.T("cr.kv", l.T("cr.created"), r.CreatedAt.Format(time.RFC3339)))
	if r.CreatedBy != "" {
		w("%s", l.T("cr.by", r.CreatedBy))
	}
	w("\n")
	if r.Window != nil {
		key, start := "cr.window_next", r.Window.Start.Format("Mon 2006-01-02 15:04")
		if r.Window.Open {
			key = "cr.window_open"
		}
		if l.IsChinese() {
			start = r.Window.Start.Format("2006-01-02 15:04")
		}
		w("- %s\n", l.T(key, start, r.Window.End.Format("15:04"), r.Window.Zone))
	}
	w("\n## %s\n\n%s\n", l.T("cr.diagnosis"),
		l.T("cr.diagnosis_line", r.Diagnosis.Title, fmt.Sprintf("%.0f%%", 100*r.Diagnosis.Confidence), severityIn(l, r.Diagnosis.Severity)))
	for _, e := range r.Diagnosis.Evidence {
		w("\n- %s", e)
	}
	w("\n\n## %s\n\n%s\n\n%s\n", l.T("change.change"), r.Action.Title, r.Action.Why)
	if r.Change != nil {
		cur := r.Change.Current
		if cur == "" {
			cur = l.T("cr.unknown")
		}
		w("\n%s\n|---|---|---|\n| %s | %s | %s |\n", l.T("cr.table_knob"), r.Change.Knob, cur, r.Change.Proposed)
		w("\n%s\n", l.T("cr.why_value", r.Change.Reason))
	} else {
		w("\n%s\n", l.T("change.operational"))
	}
	if r.VLLMArgs != "" {
		engine := "vLLM"
		if r.Change != nil && r.Change.Engine != "" {
			engine = metrics.EngineName(r.Change.Engine)
		}
		w("\n### %s\n\n```diff\n%s```\n", l.T("cr.args", engine), r.VLLMArgs)
	}
	if r.HelmValues != "" {
		w("\n### %s\n\n```yaml\n%s```\n", l.T("change.helm"), r.HelmValues)
	}
	if r.Capacity != nil {
		w("\n### %s\n\n%s\n", l.T("change.capacity"), r.Capacity.Summary)
		for _, g := range r.Capacity.Idle {
			w("\n- %s GPU %s (%s)", g.Host, g.GPU, g.UUID)
		}
		if len(r.Capacity.Idle) > 0 {
			w("\n")
		}
		if len(r.Alternatives) > 0 {
			w("\n%s\n", l.T("cr.alternatives"))
			for _, a := range r.Alternatives {
				w("\n- %s", a)
			}
			w("\n")
		}
	}
	w("\n## %s\n\n%s\n|---|---|---|---|\n", l.T("cr.effect"), l.T("cr.table_effect"))
	for _, e := range r.Effects {
		dim, dir := e.Dimension, e.Direction
		if l.IsChinese() {
			dim, dir = dimensionIn(l, e.Dimension), l.T("cr."+e.Direction)
		}
		w("| %s | %s | %s | %s |\n", e.Name, dim, dir, e.Size)
	}
	w("\n## %s\n\n%s\n\n## %s\n\n%s\n", l.T("cr.risk"), r.Risk, l.T("cr.rollback"), r.Rollback)
	return b.String()
}

// severityIn names a severity in l's language; the stored word when l is
// English or the severity is not one the console knows.
func severityIn(l *i18n.Locale, s string) string {
	switch s {
	case "critical", "warning", "info":
		if l.IsChinese() {
			return l.T("severity." + s)
		}
	}
	return s
}

// dimensionIn names a metric dimension ("latency") in l's language.
func dimensionIn(l *i18n.Locale, d string) string {
	for _, dim := range metrics.Dimensions {
		if string(dim) == d {
			return l.T("dim." + d)
		}
	}
	return d
}
