package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/web"
)

// engineTelemetry reports llama-70b-0 as an SGLang instance and
// llama-70b-1 as a scope with two engines' series.
type engineTelemetry struct{ coverageTelemetry }

func (e engineTelemetry) Coverage(ctx context.Context, scope metrics.Scope) (telemetry.Coverage, error) {
	sglang := telemetry.EngineStatus{Engine: metrics.EngineSGLang}
	mixed := telemetry.EngineStatus{Problem: "llama-70b/llama-70b-1: the scope exposes the series of more than one engine (SGLang and vLLM)"}
	set := telemetry.NewSeriesSet([]map[string]string{{"__name__": "sglang:num_running_reqs"}, {"__name__": "sglang:time_to_first_token_seconds_sum"}})
	switch scope.Instance {
	case "llama-70b-0":
		return telemetry.CoverageFor(set, telemetry.GPUJoin{}, true, sglang), nil
	case "llama-70b-1":
		return telemetry.CoverageFor(set, telemetry.GPUJoin{}, true, mixed), nil
	}
	c, err := e.coverageTelemetry.Coverage(ctx, scope)
	c.Engines = []telemetry.ScopeEngine{{Scope: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-0"}, Engine: sglang},
		{Scope: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}, Engine: mixed}}
	return c, err
}

func TestEngineOnScopeAndStoragePages(t *testing.T) {
	tel := sharedTel()
	f := newFixture(t, tel, func(o *web.Options) { o.Telemetry = engineTelemetry{coverageTelemetry{Telemetry: tel}} })

	res := f.do(t, http.MethodGet, "/scopes/llama-70b/llama-70b-0", nil, nil)
	for _, want := range []string{`data-engine="SGLang"`, "detected from its sglang: series",
		// Said once: SGLang's missing prefill time, with its reason.
		`data-metric="prefill_ms"`, "SGLang times prefill only per stage"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("SGLang scope page lacks %q", want)
		}
	}
	if strings.Contains(res.body, `data-testid="scope-engine-problem"`) {
		t.Errorf("SGLang scope page shows an engine problem")
	}
	res = f.do(t, http.MethodGet, "/scopes/llama-70b/llama-70b-1", nil, nil)
	for _, want := range []string{`data-testid="scope-engine-problem"`, "more than one engine (SGLang and vLLM)"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("mixed scope page lacks %q", want)
		}
	}
	res = f.do(t, http.MethodGet, "/storage", nil, nil)
	for _, want := range []string{`data-testid="storage-engines"`, `data-scope="llama-70b/llama-70b-0"`, "SGLang", "more than one engine"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("storage page lacks %q", want)
		}
	}
}
