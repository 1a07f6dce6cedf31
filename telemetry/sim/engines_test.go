package sim

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/casebook/casebook/metrics"
)

// Each engine's page carries its own names, types and buckets, names its
// engine to DetectEngine, and resolves the catalog metrics that engine
// maps (and only through that engine's alternatives).
func TestEnginePagesResolveTheirCatalog(t *testing.T) {
	tests := []struct {
		engine  metrics.Engine
		types   map[string]dto.MetricType
		buckets map[string][]float64
		resolve []string
	}{
		{metrics.EngineSGLang,
			map[string]dto.MetricType{"sglang:num_running_reqs": dto.MetricType_GAUGE, "sglang:token_usage": dto.MetricType_GAUGE,
				"sglang:cache_hit_rate": dto.MetricType_GAUGE, "sglang:spec_accept_rate": dto.MetricType_GAUGE,
				"sglang:num_requests_total": dto.MetricType_COUNTER, "sglang:cached_tokens_total": dto.MetricType_COUNTER,
				"sglang:num_retracted_requests_total": dto.MetricType_COUNTER, "sglang:inter_token_latency_seconds": dto.MetricType_HISTOGRAM},
			map[string][]float64{"sglang:time_to_first_token_seconds": sglangTTFTBuckets, "sglang:inter_token_latency_seconds": sglangITLBuckets,
				"sglang:e2e_request_latency_seconds": sglangE2EBuckets, "sglang:queue_time_seconds": sglangQueueBuckets},
			[]string{metrics.E2E, metrics.E2EP99, metrics.TTFT, metrics.TTFTP99, metrics.TPOT, metrics.TPOTP99, metrics.QueueTime,
				metrics.ThroughputRPS, metrics.PromptTPS, metrics.GenerationTPS, metrics.RunningSeqs, metrics.QueueDepth,
				metrics.MeanPromptTokens, metrics.KVCacheUsage, metrics.KVCacheHitRate, metrics.RejectionRate, metrics.PreemptionRate,
				metrics.AbortRate, metrics.CachedPromptTPS, metrics.SpecAcceptLength}},
		{metrics.EngineTRTLLM,
			map[string]dto.MetricType{"trtllm_request_success_total": dto.MetricType_COUNTER, "trtllm_kv_cache_utilization": dto.MetricType_GAUGE,
				"trtllm_request_error_total": dto.MetricType_COUNTER, "trtllm_time_per_output_token_seconds": dto.MetricType_HISTOGRAM},
			map[string][]float64{"trtllm_time_to_first_token_seconds": ttftBuckets, "trtllm_e2e_request_latency_seconds": requestLatencyBuckets},
			[]string{metrics.E2E, metrics.TTFTP99, metrics.TPOT, metrics.QueueTime, metrics.PrefillTime, metrics.DecodeTime,
				metrics.ThroughputRPS, metrics.KVCacheUsage, metrics.KVCacheHitRate, metrics.RejectionRate, metrics.ErrorRate}},
		{metrics.EngineLlamaCpp,
			map[string]dto.MetricType{"llamacpp:prompt_tokens_total": dto.MetricType_COUNTER, "llamacpp:tokens_predicted_seconds_total": dto.MetricType_COUNTER,
				"llamacpp:requests_processing": dto.MetricType_GAUGE},
			nil,
			[]string{metrics.TPOT, metrics.PromptTPS, metrics.GenerationTPS, metrics.RunningSeqs, metrics.QueueDepth}},
	}
	for _, tc := range tests {
		t.Run(string(tc.engine), func(t *testing.T) {
			c := New(Options{Models: 1, Seed: 1, Start: monday, Engines: []metrics.Engine{tc.engine}})
			c.Advance(monday.Add(10 * time.Minute))
			tg := c.Targets()[0]
			if tg.Engine != tc.engine || c.EngineOf(tg.Model) != tc.engine {
				t.Fatalf("target engine %q, EngineOf %q", tg.Engine, c.EngineOf(tg.Model))
			}
			fams := parsePage(t, c, tg.EnginePath)
			for name, typ := range tc.types {
				if f := fams[name]; f == nil || f.GetType() != typ {
					t.Errorf("%s: %v, want a %v", name, f.GetType(), typ)
				}
			}
			for name, want := range tc.buckets {
				f := fams[name]
				if f == nil {
					t.Errorf("no %s", name)
					continue
				}
				checkHistogram(t, name, f.Metric[0].GetHistogram(), want)
			}
			has := map[string]bool{}
			var names []string
			for name, f := range fams {
				names = append(names, name)
				has[name] = true
				if f.GetType() == dto.MetricType_HISTOGRAM {
					has[name+"_bucket"], has[name+"_sum"], has[name+"_count"] = true, true, true
				}
			}
			if got, err := metrics.DetectEngine(names); err != nil || got != tc.engine {
				t.Errorf("DetectEngine = %q, %v", got, err)
			}
			for _, id := range tc.resolve {
				m, _ := metrics.Lookup(id)
				if r := m.ForEngine(tc.engine).Resolve(func(s string) bool { n, _, _ := metrics.SplitSeries(s); return has[n] }); !r.OK {
					t.Errorf("%s does not resolve: %s", id, r.Why)
				}
			}
		})
	}
}

// A mixed corpus carries each case's engine and what it lacks; the
// metrics an engine has no equivalent of are absent from its cases.
func TestScenariosPerEngine(t *testing.T) {
	engines := []metrics.Engine{metrics.EngineVLLM, metrics.EngineSGLang, metrics.EngineTRTLLM}
	n := 3 * (len(metrics.FaultCauses()) + 1)
	cases := Scenarios(ScenarioOptions{N: n, Seed: 11, Engines: engines})
	seen := map[metrics.Engine]int{}
	for i, c := range cases {
		e := c.Engine
		if e == "" {
			e = metrics.EngineVLLM
		}
		if e != caseEngine(engines, i) {
			t.Fatalf("case %d engine %q, want %q", i, e, caseEngine(engines, i))
		}
		seen[e]++
		switch e {
		case metrics.EngineSGLang:
			if _, ok := c.Current[metrics.PrefillTime]; ok {
				t.Errorf("case %d: SGLang case has prefill_ms", i)
			}
			if _, ok := c.Current[metrics.TTFT]; !ok {
				t.Errorf("case %d: SGLang case lacks ttft_ms", i)
			}
			if c.Absent[metrics.ErrorRate] == "" {
				t.Errorf("case %d: SGLang case does not say why error_rate is absent", i)
			}
		case metrics.EngineTRTLLM:
			if _, ok := c.Current[metrics.PreemptionRate]; ok {
				t.Errorf("case %d: TensorRT-LLM case has preemption_rate", i)
			}
		}
	}
	for _, e := range engines {
		if seen[e] != len(metrics.FaultCauses())+1 {
			t.Errorf("%s: %d cases, want one per label", e, seen[e])
		}
	}
	// The engines run the same incidents: the labels, scopes and times of
	// each plan agree.
	for i := 0; i+2 < len(cases); i += 3 {
		a, b, c := cases[i], cases[i+1], cases[i+2]
		if a.Label != b.Label || b.Label != c.Label || !a.At.Equal(c.At) || a.Scope != c.Scope {
			t.Errorf("cases %d-%d run different plans: %s/%s/%s", i, i+2, a.Label, b.Label, c.Label)
		}
	}
}
