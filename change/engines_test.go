package change

import (
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

func TestKnobsInEachEnginesTerms(t *testing.T) {
	tests := []struct {
		knob   string
		engine metrics.Engine
		flag   string // "" when the engine has none
	}{
		{"gpu_memory_utilization", metrics.EngineVLLM, "--gpu-memory-utilization"},
		{"gpu_memory_utilization", metrics.EngineSGLang, "--mem-fraction-static"},
		{"gpu_memory_utilization", metrics.EngineTRTLLM, "--kv_cache_free_gpu_memory_fraction"},
		{"gpu_memory_utilization", metrics.EngineLlamaCpp, ""},
		{"max_num_seqs", metrics.EngineSGLang, "--max-running-requests"},
		{"max_num_seqs", metrics.EngineTRTLLM, "--max_batch_size"},
		{"tensor_parallel_size", metrics.EngineLlamaCpp, ""},
		{"replicas", metrics.EngineSGLang, ""}, // a deployment setting everywhere
	}
	for _, tc := range tests {
		k, _ := LookupKnob(tc.knob)
		ek, ok, note := k.ForEngine(tc.engine)
		if ek.Flag != tc.flag {
			t.Errorf("%s on %s: flag %q, want %q", tc.knob, tc.engine, ek.Flag, tc.flag)
		}
		if tc.flag == "" && tc.knob != "replicas" && (ok || note == "") {
			t.Errorf("%s on %s: ok %v, note %q; want none, with why", tc.knob, tc.engine, ok, note)
		}
	}
	if got := EngineKnob("gpu_memory_utilization", metrics.EngineLlamaCpp); !strings.Contains(got, "llama.cpp has no equivalent") || !strings.Contains(got, "--ctx-size") {
		t.Errorf("EngineKnob llama.cpp = %q", got)
	}
}

// A change request on an SGLang scope writes SGLang's flags; one on a
// llama.cpp scope for a knob it lacks is refused, saying why.
func TestChangeRequestsWriteTheEnginesFlags(t *testing.T) {
	a := diagnose.ActionsFor(metrics.CauseKVCacheEviction)[0]
	p, err := Propose(a, map[string]string{"gpu_memory_utilization": "0.9"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	sg, err := p.ForEngine(metrics.EngineSGLang)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(BuildInput{IncidentID: 7, Scope: metrics.Scope{Model: "qwen"}, Action: a, Proposal: &sg,
		Diagnosis: diagnose.Diagnosis{RootCause: metrics.CauseKVCacheEviction}, Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if r.VLLMArgs != "- --mem-fraction-static 0.9\n+ --mem-fraction-static 0.95\n" {
		t.Errorf("SGLang arg diff %q", r.VLLMArgs)
	}
	if md := r.Markdown(); !strings.Contains(md, "### SGLang arguments") {
		t.Errorf("markdown does not name SGLang's arguments:\n%s", md)
	}
	if _, err := p.ForEngine(metrics.EngineLlamaCpp); err == nil || !strings.Contains(err.Error(), "llama.cpp has no equivalent of gpu_memory_utilization") {
		t.Errorf("llama.cpp proposal err = %v", err)
	}
	// SGLang's radix cache is turned off by a flag that disables it.
	k, _ := LookupKnob("enable_prefix_caching")
	ek, _, _ := k.ForEngine(metrics.EngineSGLang)
	if got := flagValue(ek, "false"); got != "--disable-radix-cache" {
		t.Errorf("prefix caching off on SGLang = %q", got)
	}
}
