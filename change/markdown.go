package change

import (
	"github.com/casebook/casebook/metrics"

	"fmt"
	"strings"
	"time"
)

// Markdown renders the change request for a ticket or a review.
func (r Request) Markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Change request %s\n\n", r.ID)
	w("**%s**\n\n", r.Title)
	w("- Incident: [#%d](%s)\n", r.IncidentID, r.IncidentURL)
	if r.Scope.Model != "" {
		w("- Scope: %s\n", r.Scope.String())
	}
	w("- Created: %s", r.CreatedAt.Format(time.RFC3339))
	if r.CreatedBy != "" {
		w(" by %s", r.CreatedBy)
	}
	w("\n")
	if r.Window != nil {
		state := "next"
		if r.Window.Open {
			state = "open now"
		}
		w("- Deployment window (%s): %s to %s %s\n", state,
			r.Window.Start.Format("Mon 2006-01-02 15:04"), r.Window.End.Format("15:04"), r.Window.Zone)
	}
	w("\n## Diagnosis\n\n%s (confidence %.0f%%, %s)\n", r.Diagnosis.Title, 100*r.Diagnosis.Confidence, r.Diagnosis.Severity)
	for _, e := range r.Diagnosis.Evidence {
		w("\n- %s", e)
	}
	w("\n\n## Change\n\n%s\n\n%s\n", r.Action.Title, r.Action.Why)
	if r.Change != nil {
		cur := r.Change.Current
		if cur == "" {
			cur = "unknown"
		}
		w("\n| knob | before | after |\n|---|---|---|\n| %s | %s | %s |\n", r.Change.Knob, cur, r.Change.Proposed)
		w("\nWhy this value: %s\n", r.Change.Reason)
	} else {
		w("\nAn operational step: no engine configuration changes.\n")
	}
	if r.VLLMArgs != "" {
		engine := "vLLM"
		if r.Change != nil && r.Change.Engine != "" {
			engine = metrics.EngineName(r.Change.Engine)
		}
		w("\n### %s arguments\n\n```diff\n%s```\n", engine, r.VLLMArgs)
	}
	if r.HelmValues != "" {
		w("\n### Helm values\n\n```yaml\n%s```\n", r.HelmValues)
	}
	if r.Capacity != nil {
		w("\n### Capacity\n\n%s\n", r.Capacity.Summary)
		for _, g := range r.Capacity.Idle {
			w("\n- %s GPU %s (%s)", g.Host, g.GPU, g.UUID)
		}
		if len(r.Capacity.Idle) > 0 {
			w("\n")
		}
		if len(r.Alternatives) > 0 {
			w("\nIn-place alternatives to try first:\n")
			for _, a := range r.Alternatives {
				w("\n- %s", a)
			}
			w("\n")
		}
	}
	w("\n## Expected effect\n\n| metric | dimension | direction | size |\n|---|---|---|---|\n")
	for _, e := range r.Effects {
		w("| %s | %s | %s | %s |\n", e.Name, e.Dimension, e.Direction, e.Size)
	}
	w("\n## Risk\n\n%s\n\n## Rollback\n\n%s\n", r.Risk, r.Rollback)
	return b.String()
}
