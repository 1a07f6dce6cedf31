package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func TestPostmortemMarkdown(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	d := handlerstest.EvictionDiagnosis()
	d.Actions[0].Knob = "gpu_memory_utilization`|x"
	body, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p := store.Page{
		Incident: store.Incident{Summary: store.Summary{ID: 7, Title: "*bold* [link](javascript:x) <img src=x> | pipe", Scope: metrics.Scope{Model: "llama-70b"},
			Trigger: store.TriggerManual, OpenedAt: at, Severity: "critical", Verdict: store.VerdictWrong, TrueCause: "custom_nccl_stall"}},
		Diagnoses: []store.Diagnosis{{ID: 1, DiagnosisRecord: store.DiagnosisRecord{RootCause: d.RootCause, EngineVersion: "v1", CreatedAt: at, Body: body}}},
		Notes:     []store.Note{{Author: "ana`", At: at.Add(time.Minute), Body: "line one\n# not a heading\n- not a list"}},
	}
	md := handlers.PostmortemMarkdown(p, func(id string) string {
		if id == "custom_nccl_stall" {
			return "NCCL stall"
		}
		return id
	})
	tests := []struct {
		name string
		want string
	}{
		{"title escaped", `# Incident 7: \*bold\* \[link\](javascript:x) \<img src=x\> \| pipe`},
		{"custom cause titled", "true cause NCCL stall (`custom_nccl_stall`)"},
		{"code spans unescaped", "(`kv_cache_eviction`)"},
		{"backtick and pipe in a code span", "(`gpu_memory_utilization'\\|x` → `0.95`)"},
		{"newlines flattened", "line one # not a heading - not a list"},
		{"author escaped", "(ana\\`)"},
		{"evidence table", "| Prefix hit rate | 35% | 82% |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(md, tc.want) {
				t.Errorf("markdown lacks %q:\n%s", tc.want, md)
			}
		})
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "# not") || strings.HasPrefix(line, "- not") {
			t.Errorf("user text started a Markdown line: %q", line)
		}
	}
}
