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
