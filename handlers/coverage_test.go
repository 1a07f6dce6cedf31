package handlers_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/web"
)

// coverageTelemetry is the fake telemetry of a source whose GPUs join
// through exported_pod for every instance but llama-70b-1, and whose
// engines lack the profiling fields and the per-request TPOT histogram.
type coverageTelemetry struct {
	*handlerstest.Telemetry
	err error
}

func (c coverageTelemetry) Coverage(_ context.Context, scope metrics.Scope) (telemetry.Coverage, error) {
	if c.err != nil {
		return telemetry.Coverage{}, c.err
	}
	set := telemetry.NewSeriesSet([]map[string]string{
		{"__name__": "vllm:num_requests_running"}, {"__name__": "vllm:gpu_cache_usage_perc"},
		{"__name__": "vllm:inter_token_latency_seconds_sum"}, {"__name__": "vllm:inter_token_latency_seconds_count"},
		{"__name__": "DCGM_FI_DEV_GPU_UTIL"}, {"__name__": "DCGM_FI_DEV_SM_CLOCK"},
	})
	engines := []telemetry.EngineRef{{Model: "llama-70b", Instance: "llama-70b-0", Namespace: "serving"}, {Model: "llama-70b", Instance: "llama-70b-1", Namespace: "serving"}}
	gpus := []map[string]string{{"exported_pod": "llama-70b-0", "exported_namespace": "serving", "pod": "dcgm-exporter-abc", "UUID": "GPU-1"}}
	join := telemetry.DetectGPUJoin(engines, gpus, telemetry.JoinOptions{})
	joined := scope.Instance != "llama-70b-1"
	cov := telemetry.CoverageOf(set, join, joined)
	cov.Scope = scope
	return cov, nil
}

func TestCoverageOnStorageAndScopePages(t *testing.T) {
	tel := sharedTel()
	ct := coverageTelemetry{Telemetry: tel}
	f := newFixture(t, tel, func(o *web.Options) { o.Telemetry = ct })

	res := f.do(t, http.MethodGet, "/storage", nil, nil)
	for _, want := range []string{
		`data-testid="storage-join"`, "exported_pod and exported_namespace (detected)", `data-instance="serving/llama-70b-0"`,
		"1 engine instance(s) have no GPU series: serving/llama-70b-1",
		`data-testid="coverage-resolved" data-metric="kv_cache_usage"`, "vllm:gpu_cache_usage_perc", "vLLM before 0.12",
		`data-testid="coverage-resolved" data-metric="tpot_ms"`, "vllm:inter_token_latency_seconds_sum",
		`data-testid="coverage-missing" data-metric="tensor_active"`, "default-counters.csv",
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("storage page lacks %q", want)
		}
	}

	res = f.do(t, http.MethodGet, "/scopes/llama-70b/llama-70b-1", nil, nil)
	if res.status != http.StatusOK {
		t.Fatalf("scope page: %d", res.status)
	}
	for _, want := range []string{`data-testid="scope-gpu-join"`, "llama-70b/llama-70b-1 did not join", `data-testid="scope-missing"`,
		`data-metric="gpu_sm_util"`, "did not join its engines"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("unjoined scope page lacks %q", want)
		}
	}
	res = f.do(t, http.MethodGet, "/scopes/llama-70b/llama-70b-0", nil, nil)
	if strings.Contains(res.body, `data-testid="scope-gpu-join"`) || !strings.Contains(res.body, `data-metric="tensor_active"`) {
		t.Errorf("joined scope page: GPU join notice shown or missing metrics not listed")
	}
	// Without profiling fields the page says so, what stands in for SM
	// activity, and which rules read what is missing.
	for _, page := range []struct{ path, prefix string }{{"/scopes/llama-70b/llama-70b-0", "scope"}, {"/storage", "storage"}} {
		body := f.do(t, http.MethodGet, page.path, nil, nil).body
		for _, want := range []string{
			`data-testid="` + page.prefix + `-profiling"`, "DCGM profiling fields (DCGM_FI_PROF_*) are absent", "Tensor active and DRAM active are missing",
			"SM active is read from DCGM_FI_DEV_GPU_UTIL",
			`data-testid="` + page.prefix + `-rule-gaps"`, `data-cause="memory_bandwidth_bound"`, `data-cause="host_overhead"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", page.path, want)
			}
		}
	}

	// In Chinese the page's own sentences are Chinese; the source's
	// reasons (why a series is missing) stay in its words.
	body := f.do(t, http.MethodGet, "/storage?lang=zh-CN", nil, nil).body
	for _, want := range []string{"exported_pod 和 exported_namespace（自动识别）", "有 1 个引擎实例没有 GPU 序列：serving/llama-70b-1",
		"缺少 DCGM profiling 字段", "SM 活跃 改为读取 DCGM_FI_DEV_GPU_UTIL"} {
		if !strings.Contains(body, want) {
			t.Errorf("Chinese storage page lacks %q", want)
		}
	}
	for _, not := range []string{"(detected)", "are missing", "is read from"} {
		if strings.Contains(body, not) {
			t.Errorf("Chinese storage page shows %q", not)
		}
	}

	// A source that cannot answer leaves the pages as they were.
	f = newFixture(t, tel, func(o *web.Options) { o.Telemetry = coverageTelemetry{Telemetry: tel, err: errors.New("down")} })
	res = f.do(t, http.MethodGet, "/storage", nil, nil)
	if res.status != http.StatusOK || strings.Contains(res.body, `data-testid="storage-join"`) {
		t.Errorf("storage page with coverage failing: %d", res.status)
	}
}

// /readyz stays ready with a degraded source and names it.
func TestReadyzNamesDegradedSources(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Status: []metrics.SourceStatus{
		{Name: "prometheus http://prom:9090", OK: true},
		{Name: "gpu join", OK: false, Err: "GPU series join no engine: no GPU series' pod (e.g. dcgm-exporter-x) names an engine instance"},
	}})
	f := newFixture(t, tel, nil)
	res := f.do(t, http.MethodGet, "/readyz", nil, nil)
	if res.status != http.StatusOK || !strings.HasPrefix(res.body, "ready\n") || !strings.Contains(res.body, "gpu join: GPU series join no engine") {
		t.Errorf("readyz: %d %q", res.status, res.body)
	}
}
