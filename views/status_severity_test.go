package views

import (
	"context"
	"strings"
	"testing"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

func TestSeverityStatus(t *testing.T) {
	tests := []struct {
		name string
		d    diagnose.Diagnosis
		want Status
	}{
		{"critical", diagnose.Diagnosis{RootCause: metrics.CauseEngineErrors, Severity: diagnose.SeverityCritical}, StatusCritical},
		{"warning", diagnose.Diagnosis{RootCause: metrics.CauseQueueBacklog, Severity: diagnose.SeverityWarning}, StatusWarning},
		// A low-severity anomaly is still an anomaly: never shown as OK.
		{"info anomaly", diagnose.Diagnosis{RootCause: metrics.CauseUnknown, Severity: diagnose.SeverityInfo}, StatusInfo},
		{"nothing found", diagnose.Diagnosis{RootCause: metrics.CauseNone, Severity: diagnose.SeverityInfo}, StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DiagnosisPanelView{D: tc.d}.Status()
			if got != tc.want {
				t.Errorf("status = %s, want %s", got.Word(), tc.want.Word())
			}
			if got.Icon() == StatusOK.Icon() && got != StatusOK {
				t.Errorf("%s shares the OK icon", got.Word())
			}
		})
	}
	if StatusOfSeverityWord("info") != StatusInfo {
		t.Error(`stored severity "info" is not shown as Info`)
	}
}

func TestDiagnosisPanelShowsNotes(t *testing.T) {
	d := diagnose.Diagnosis{RootCause: metrics.CauseQueueBacklog, Severity: diagnose.SeverityWarning,
		Notes: []string{"Matching overturned the rules: 4 confirmed cases <b>agree</b>."}}
	var b strings.Builder
	if err := DiagnosisPanel(NewDiagnosisPanel(d)).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, `data-testid="diagnosis-notes"`) || !strings.Contains(out, "Matching overturned the rules") {
		t.Errorf("notes missing from the panel:\n%s", out)
	}
	if strings.Contains(out, "<b>agree</b>") {
		t.Error("a note was rendered as HTML, not escaped")
	}
}

// TestStatusOfNeedsMaterialMoves checks that a statistically clear but
// harmless move (KV usage 0.2 % to 1.8 % against a flat hour) is OK,
// while the same z on a large move is not.
func TestStatusOfNeedsMaterialMoves(t *testing.T) {
	tiny := diagnose.Deviation{Mean: 0.002, Std: 0.0014, Z: 11.4, Anomalous: true}
	if got := StatusOf(metrics.KVCacheUsage, tiny, true); got != StatusOK {
		t.Errorf("KV usage 0.2 %% -> 1.8 %%: %v, want OK", got)
	}
	big := diagnose.Deviation{Mean: 0.6, Std: 0.03, Z: 11.4, Anomalous: true}
	if got := StatusOf(metrics.KVCacheUsage, big, true); got != StatusCritical {
		t.Errorf("KV usage 60 %% -> 94 %%: %v, want critical", got)
	}
}
