package diagnose

import (
	"testing"

	m "github.com/casebook/casebook/metrics"
)

func TestFoldKernelEvidence(t *testing.T) {
	idle := KernelEvidence{Cause: m.CauseHostOverhead, Key: "idle_share", Value: 0.38, Text: "GPU idle 38% of the step."}
	comm := KernelEvidence{Cause: m.CauseUnknown, Key: "communication_share", Value: 0.3, Text: "Communication takes 30%."}
	tests := []struct {
		name           string
		in             Diagnosis
		ev             []KernelEvidence
		wantCause      string
		wantConfUp     bool
		wantTraceCand  bool
		wantEvidenceAt string
	}{
		{"corroborates the named cause",
			Diagnosis{RootCause: m.CauseHostOverhead, Confidence: 0.6, Candidates: []Candidate{{m.CauseHostOverhead, 0.6, SourceRule}}},
			[]KernelEvidence{idle}, m.CauseHostOverhead, true, false, "kernel:idle_share"},
		{"never overrides a cause the metrics support",
			Diagnosis{RootCause: m.CauseQueueBacklog, Confidence: 0.7, Candidates: []Candidate{{m.CauseQueueBacklog, 0.7, SourceRule}}},
			[]KernelEvidence{idle}, m.CauseQueueBacklog, false, true, "kernel:idle_share"},
		{"explains an unknown anomaly",
			Diagnosis{RootCause: m.CauseUnknown, Confidence: 0.4},
			[]KernelEvidence{idle}, m.CauseHostOverhead, false, true, "kernel:idle_share"},
		{"does not turn none into an incident",
			Diagnosis{RootCause: m.CauseNone, Confidence: 0.9},
			[]KernelEvidence{idle}, m.CauseNone, false, true, "kernel:idle_share"},
		{"findings without a cause are evidence only",
			Diagnosis{RootCause: m.CauseUnknown, Confidence: 0.4},
			[]KernelEvidence{comm}, m.CauseUnknown, false, false, "kernel:communication_share"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FoldKernelEvidence(tc.in, tc.ev)
			if got.RootCause != tc.wantCause {
				t.Errorf("root cause %q, want %q", got.RootCause, tc.wantCause)
			}
			if up := got.Confidence > tc.in.Confidence; up != tc.wantConfUp {
				t.Errorf("confidence %.3f from %.3f: raised = %v, want %v", got.Confidence, tc.in.Confidence, up, tc.wantConfUp)
			}
			hasTrace := false
			for _, c := range got.Candidates {
				if c.Source == SourceTrace {
					hasTrace = true
				}
			}
			if hasTrace != tc.wantTraceCand {
				t.Errorf("trace candidate present = %v, want %v (%+v)", hasTrace, tc.wantTraceCand, got.Candidates)
			}
			found := false
			for _, e := range got.Evidence {
				if e.Metric == tc.wantEvidenceAt {
					found = true
				}
			}
			if !found {
				t.Errorf("no evidence %q in %+v", tc.wantEvidenceAt, got.Evidence)
			}
			if got.RootCause != m.CauseUnknown && got.RootCause != m.CauseNone && len(got.Actions) == 0 && tc.in.RootCause == m.CauseUnknown {
				t.Error("a cause named from the trace has no actions")
			}
		})
	}
	if d := FoldKernelEvidence(Diagnosis{RootCause: m.CauseNone}, nil); len(d.Evidence) != 0 || d.RootCause != m.CauseNone {
		t.Errorf("no evidence changed the diagnosis: %+v", d)
	}
}
