package metrics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
)

func TestDetectEngine(t *testing.T) {
	tests := []struct {
		name    string
		names   []string
		want    metrics.Engine
		wantErr error
		errHas  string
	}{
		{"vLLM", []string{"vllm:num_requests_running", "DCGM_FI_DEV_GPU_UTIL"}, metrics.EngineVLLM, nil, ""},
		{"SGLang", []string{"sglang:num_running_reqs", "sglang:token_usage"}, metrics.EngineSGLang, nil, ""},
		{"trtllm-serve", []string{"trtllm_num_requests_running"}, metrics.EngineTRTLLM, nil, ""},
		{"Triton TensorRT-LLM backend", []string{"nv_trt_llm_request_metrics"}, metrics.EngineTRTLLM, nil, ""},
		{"llama-server", []string{"llamacpp:requests_processing"}, metrics.EngineLlamaCpp, nil, ""},
		// Dynamo's frontend is the gateway: its workers' engine decides.
		{"Dynamo frontend over SGLang workers", []string{"dynamo_frontend_requests_total", "sglang:num_running_reqs"}, metrics.EngineSGLang, nil, ""},
		{"two engines under one scope", []string{"vllm:num_requests_running", "sglang:num_running_reqs"}, "", metrics.ErrMixedEngines, "SGLang and vLLM"},
		{"no engine at all", []string{"DCGM_FI_DEV_GPU_UTIL", "tgi_request_count"}, "", metrics.ErrUnknownEngine, ""},
		{"nothing", nil, "", metrics.ErrUnknownEngine, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := metrics.DetectEngine(tc.names)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %v naming %q", err, tc.wantErr, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DetectEngine = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseEngine(t *testing.T) {
	if e, err := metrics.ParseEngine(" SGLang "); err != nil || e != metrics.EngineSGLang {
		t.Errorf("ParseEngine(SGLang) = %q, %v", e, err)
	}
	if _, err := metrics.ParseEngine("tgi"); err == nil || !strings.Contains(err.Error(), "vllm, sglang, trtllm, llamacpp") {
		t.Errorf("ParseEngine(tgi) err = %v, want the known engines listed", err)
	}
}

// Per engine, every metric reads only that engine's series (or series all
// engines share) and parses; a metric without an equivalent says so.
func TestForEngineReadsOnlyItsOwnSeries(t *testing.T) {
	sel := metrics.Selectors{Engine: `model_name="m",pod="a"`, GPU: `pod="a"`, Model: "m", Instance: "a", ModelLabel: "job"}
	for _, spec := range metrics.Engines {
		for _, m := range metrics.Catalog {
			em := m.ForEngine(spec.ID)
			if len(em.Alts) == 0 {
				if em.PromQL != "" || !strings.Contains(em.Absent, spec.Name) {
					t.Errorf("%s/%s: no alternative, PromQL %q, Absent %q (want the engine named)", spec.ID, m.ID, em.PromQL, em.Absent)
				}
				continue
			}
			for _, a := range em.Alts {
				for _, s := range a.Series {
					name, _, _ := metrics.SplitSeries(s)
					if e, ok := metrics.EngineOf(name); ok && e != spec.ID {
						t.Errorf("%s/%s reads %s, a %s series", spec.ID, m.ID, s, e)
					}
					if !strings.Contains(a.PromQL, name) {
						t.Errorf("%s/%s: alternative names %s but its PromQL does not read it", spec.ID, m.ID, name)
					}
				}
			}
			for _, q := range []string{em.Query(sel, time.Minute), em.QueryBy(metrics.Selectors{}, time.Minute, []string{"model_name", "pod"})} {
				if placeholder.MatchString(q) {
					t.Errorf("%s/%s: unexpanded placeholder in %q", spec.ID, m.ID, q)
				}
				if _, err := parser.NewParser(parser.Options{}).ParseExpr(q); err != nil {
					t.Errorf("%s/%s: %q does not parse: %v", spec.ID, m.ID, q, err)
				}
			}
		}
	}
}

// The four dimensions are filled for every engine with request metrics,
// and the reconciled semantics read the right series.
func TestEnginesFillTheFourDimensions(t *testing.T) {
	tests := []struct {
		engine metrics.Engine
		id     string
		want   string // a fragment of the engine's query
	}{
		{metrics.EngineSGLang, metrics.TTFT, "sglang:time_to_first_token_seconds_sum"},
		{metrics.EngineSGLang, metrics.TPOT, "sglang:inter_token_latency_seconds_sum"},
		{metrics.EngineSGLang, metrics.ThroughputRPS, "sglang:num_requests_total"},
		{metrics.EngineSGLang, metrics.KVCacheUsage, "sglang:token_usage"},
		// Counters first, the interval gauge as the fallback.
		{metrics.EngineSGLang, metrics.KVCacheHitRate, "rate(sglang:cached_tokens_total"},
		{metrics.EngineSGLang, metrics.RejectionRate, "1 - avg (sglang:spec_accept_rate"},
		{metrics.EngineSGLang, metrics.PreemptionRate, "sglang:num_retracted_requests_total"},
		{metrics.EngineTRTLLM, metrics.PrefillTime, "trtllm_request_prefill_time_seconds_sum"},
		{metrics.EngineTRTLLM, metrics.KVCacheHitRate, "trtllm_prompt_cached_tokens_total"},
		{metrics.EngineTRTLLM, metrics.ErrorRate, `http_code=~"5.."`},
		// llama.cpp: counters of seconds per token, the model copied in
		// from the configured label.
		{metrics.EngineLlamaCpp, metrics.TPOT, `rate(llamacpp:tokens_predicted_seconds_total{job="m",pod="a"}`},
		{metrics.EngineLlamaCpp, metrics.TPOT, `"model_name", "$1", "job", "(.*)"`},
		// Dynamo's frontend is the gateway level, selected by its model label.
		{metrics.EngineSGLang, metrics.GatewayE2E, `dynamo_frontend_request_duration_seconds_sum{model="m"}`},
	}
	sel := metrics.Selectors{Engine: `model_name="m",pod="a"`, Model: "m", Instance: "a", ModelLabel: "job"}
	for _, tc := range tests {
		m, _ := metrics.Lookup(tc.id)
		q := m.ForEngine(tc.engine).Query(sel, time.Minute)
		if !strings.Contains(q, tc.want) {
			t.Errorf("%s/%s: %q lacks %q", tc.engine, tc.id, q, tc.want)
		}
	}
	for _, e := range []metrics.Engine{metrics.EngineVLLM, metrics.EngineSGLang, metrics.EngineTRTLLM} {
		for _, d := range metrics.Dimensions {
			n := 0
			for _, m := range metrics.InDimension(d) {
				if m.Source == metrics.SourceEngine && len(m.ForEngine(e).Alts) > 0 {
					n++
				}
			}
			if d != metrics.Utilization && n < 3 || n < 1 {
				t.Errorf("%s: %d engine metrics in %s", e, n, d)
			}
		}
	}
}

func TestForEngineAbsentNamesTheReason(t *testing.T) {
	m, _ := metrics.Lookup(metrics.PrefillTime)
	if got := m.ForEngine(metrics.EngineSGLang).Absent; !strings.Contains(got, "SGLang") || !strings.Contains(got, "per_stage_req_latency_seconds") {
		t.Errorf("SGLang prefill absent = %q", got)
	}
	m, _ = metrics.Lookup(metrics.ThroughputRPS)
	if got := m.ForEngine(metrics.EngineLlamaCpp).Absent; !strings.Contains(got, "no request counter") {
		t.Errorf("llama.cpp throughput absent = %q", got)
	}
}

// Whatever names a scope exposes, detection never panics, names an engine
// only when one prefix is present, and parses only known ids.
func FuzzDetectEngine(f *testing.F) {
	f.Add("vllm:num_requests_running\nsglang:num_running_reqs", " SGLang")
	f.Add("llamacpp:requests_processing\nDCGM_FI_DEV_GPU_UTIL", "llamacpp")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, names, id string) {
		list := strings.Split(names, "\n")
		e, err := metrics.DetectEngine(list)
		if err == nil {
			n := 0
			for _, name := range list {
				if got, ok := metrics.EngineOf(name); ok {
					n++
					if got != e {
						t.Fatalf("detected %q but %q names %q", e, name, got)
					}
				}
			}
			if n == 0 {
				t.Fatalf("detected %q from no engine series", e)
			}
		} else if !errors.Is(err, metrics.ErrMixedEngines) && !errors.Is(err, metrics.ErrUnknownEngine) {
			t.Fatalf("unexpected error %v", err)
		}
		if pe, err := metrics.ParseEngine(id); err == nil {
			if _, ok := metrics.LookupEngine(pe); !ok {
				t.Fatalf("ParseEngine(%q) = %q, not a known engine", id, pe)
			}
		}
	})
}
