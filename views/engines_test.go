package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// On a scope of another engine, each action says how that engine sets its
// knob, or that it has none.
func TestActionsNameTheEnginesKnob(t *testing.T) {
	p := NewDiagnosisPanel(diagnose.Diagnosis{RootCause: metrics.CauseKVCacheEviction, Severity: diagnose.Severity("warning"),
		Actions: []diagnose.Action{{ID: "raise_gpu_memory_utilization", Title: "Give the KV cache more memory", Knob: "gpu_memory_utilization", Proposed: "current + 0.05"}}})
	p.Engine, p.EngineKnobs = "SGLang", map[string]string{"gpu_memory_utilization": "--mem-fraction-static (SGLang)"}
	var b bytes.Buffer
	if err := DiagnosisPanel(p).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `data-testid="action-engine-knob"`) || !strings.Contains(b.String(), "In SGLang: --mem-fraction-static (SGLang)") {
		t.Errorf("panel does not name SGLang's knob:\n%s", b.String())
	}
	p.EngineKnobs = nil
	b.Reset()
	_ = DiagnosisPanel(p).Render(context.Background(), &b)
	if strings.Contains(b.String(), `action-engine-knob`) {
		t.Errorf("a vLLM panel names an engine knob")
	}
}
