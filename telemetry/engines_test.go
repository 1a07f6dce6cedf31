package telemetry

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
)

// Bad input gets a status, never mixed series: two engines under one
// scope, none known, a release without histograms.
func TestEngineStatus(t *testing.T) {
	tel := &Telemetry{opts: Options{InstanceLabel: "pod"}, engineOverrides: map[string]metrics.Engine{"odd-0": metrics.EngineTRTLLM}}
	m := metrics.Scope{Model: "m"}
	tests := []struct {
		name      string
		scope     metrics.Scope
		seen      []metrics.Engine
		instances []string
		engine    metrics.Engine
		problem   string
	}{
		{"one engine", m, []metrics.Engine{metrics.EngineSGLang}, []string{"a"}, metrics.EngineSGLang, ""},
		{"two engines", m, []metrics.Engine{metrics.EngineVLLM, metrics.EngineSGLang}, []string{"a", "b"}, "", "SGLang and vLLM"},
		{"no engine", m, nil, nil, "", "no series of a known engine"},
		{"set per target", metrics.Scope{Model: "m", Instance: "odd-0"}, []metrics.Engine{metrics.EngineVLLM, metrics.EngineSGLang}, nil, metrics.EngineTRTLLM, ""},
		{"a model whose instances are all set", metrics.Scope{Model: "m"}, nil, []string{"odd-0"}, metrics.EngineTRTLLM, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := tel.engineStatus(tc.scope, tc.seen, tc.instances)
			if es.Engine != tc.engine || !strings.Contains(es.Problem, tc.problem) || (tc.problem == "") != (es.Problem == "") {
				t.Fatalf("status %+v, want engine %q and a problem naming %q", es, tc.engine, tc.problem)
			}
			// A scope without one engine reads no engine metric at all.
			ttft, _ := metrics.Lookup(metrics.TTFT)
			if got := engineOf(ttft, es); (got.PromQL == "") != (tc.engine == "") {
				t.Errorf("TTFT query %q for %+v", got.PromQL, es)
			}
		})
	}
}

func TestHistogramCheck(t *testing.T) {
	es := EngineStatus{Engine: metrics.EngineSGLang}
	early := NewSeriesSet([]map[string]string{{"__name__": "sglang:prompt_tokens_total"}, {"__name__": "sglang:num_running_reqs"}})
	if got := withHistogramCheck(es, early); !strings.Contains(got.Problem, "without its latency histograms") {
		t.Errorf("an SGLang release without histograms: %+v", got)
	}
	full := NewSeriesSet([]map[string]string{{"__name__": "sglang:time_to_first_token_seconds_bucket"}})
	if got := withHistogramCheck(es, full); got.Problem != "" {
		t.Errorf("with histograms: %+v", got)
	}
	// llama-server never had histograms: that is no problem.
	if got := withHistogramCheck(EngineStatus{Engine: metrics.EngineLlamaCpp}, early); got.Problem != "" {
		t.Errorf("llama.cpp: %+v", got)
	}
}

func TestEngineOverridesAreChecked(t *testing.T) {
	if _, err := parseEngineOverrides(map[string]string{"m": "tgi"}); err == nil || !strings.Contains(err.Error(), "unknown engine") {
		t.Errorf("unknown engine accepted: %v", err)
	}
	if _, err := Open(t.Context(), Options{DataDir: t.TempDir(), Targets: []Target{{URL: "http://127.0.0.1:1/metrics", Labels: map[string]string{"__engine__": "sglang"}}}}); err == nil || !strings.Contains(err.Error(), "instance label") {
		t.Errorf("an engine without the instance it names: %v", err)
	}
}

// The scope listing is one PromQL query over every engine's liveness
// gauge, llama-server's model copied in from the configured label.
func TestScopeQueryParses(t *testing.T) {
	tel := &Telemetry{opts: Options{InstanceLabel: "pod", ModelLabel: "job"}}
	q := tel.scopeQuery("namespace")
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(q); err != nil {
		t.Fatalf("%q: %v", q, err)
	}
	for _, want := range []string{"sglang:num_running_reqs", "trtllm_num_requests_running", `"model_name", "$1", "job"`, "by (model_name, pod, casebook_engine, namespace)"} {
		if !strings.Contains(q, want) {
			t.Errorf("%q lacks %q", q, want)
		}
	}
}

// The scope listing keeps an engine that reported in the last day, read
// from the hourly tier where it has been aggregated, and drops one whose
// last report is older.
func TestScopesSeenInTheLastDay(t *testing.T) {
	now := tierBase.Add(30 * time.Hour)
	ts := openTestTiers(t, t.TempDir(), TierOptions{}, &now)
	t.Cleanup(func() { _ = ts.close() })
	reported := map[string][2]time.Duration{ // pod: reported from, until (before now)
		"live-0":     {10 * time.Minute, 0},
		"gone-20h":   {21 * time.Hour, 20 * time.Hour},
		"gone-26h":   {27 * time.Hour, 26 * time.Hour},
		"gone-90min": {100 * time.Minute, 90 * time.Minute},
	}
	for at := tierBase; !at.After(now); at = at.Add(15 * time.Second) {
		app := ts.raw().Appender(t.Context())
		for pod, span := range reported {
			if at.Before(now.Add(-span[0])) || at.After(now.Add(-span[1])) {
				continue
			}
			lset := labels.FromStrings(labels.MetricName, "vllm:num_requests_running", "model_name", "llama", "pod", pod)
			if _, err := app.Append(0, lset, at.UnixMilli(), 2); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.ds.catchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	if wm := msTime(ts.ds.watermark(2)); wm.Before(now.Add(-time.Hour)) {
		t.Fatalf("hourly tier aggregated up to %s only", wm)
	}
	tel := &Telemetry{log: slog.New(slog.DiscardHandler), querier: newTieredQuerier(ts, nil), tiers: ts,
		opts: Options{InstanceLabel: "pod", DemoUntil: now}}
	scopes, err := tel.Scopes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range scopes {
		got = append(got, s.String())
	}
	if want := "llama llama/gone-20h llama/gone-90min llama/live-0"; strings.Join(got, " ") != want {
		t.Errorf("scopes %q, want %q", strings.Join(got, " "), want)
	}
}
