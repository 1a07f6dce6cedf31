package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestFaultEndpoint(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bad := []struct{ name, body, want string }{
		{"not JSON", `{`, "malformed"},
		{"unknown field", `{"cause":"engine_errors","model":"llama-8b","x":1}`, "unknown field"},
		{"missing cause", `{"model":"llama-8b"}`, "cause"},
		{"missing model", `{"cause":"engine_errors"}`, "model"},
		{"unknown cause", `{"cause":"gremlins","model":"llama-8b"}`, "unknown cause"},
		{"unknown model", `{"cause":"engine_errors","model":"gpt-9"}`, "unknown model"},
		{"unknown instance", `{"cause":"engine_errors","model":"llama-8b","instance":"llama-8b-7"}`, "no instance"},
		{"severity too high", `{"cause":"engine_errors","model":"llama-8b","severity":1.5}`, "severity"},
		{"negative duration", `{"cause":"engine_errors","model":"llama-8b","duration":"-5m"}`, "duration"},
		{"bad duration", `{"cause":"engine_errors","model":"llama-8b","duration":"soon"}`, "duration"},
		{"trailing data", `{"cause":"engine_errors","model":"llama-8b"} {}`, "trailing"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(http.MethodPost, "/faults", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("got %d %s, want 400 mentioning %q", code, body, tc.want)
			}
		})
	}
	code, body := do(http.MethodPost, "/faults", `{"cause":"gpu_throttling","model":"llama-3.1-8b-instruct","instance":"llama-8b-1","severity":0.6,"duration":"15m"}`)
	if code != http.StatusCreated {
		t.Fatalf("inject: %d %s", code, body)
	}
	code, body = do(http.MethodGet, "/faults", "")
	var list []faultJSON
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != http.StatusOK || len(list) != 1 {
		t.Fatalf("list: %d %s (%v)", code, body, err)
	}
	if list[0].Cause != metrics.CauseGPUThrottling || list[0].Instance != "llama-8b-1" || *list[0].Severity != 0.6 {
		t.Errorf("listed %+v", list[0])
	}
	// An ordinal names the model's instance, and the fault lands on it.
	if code, body := do(http.MethodPost, "/faults", `{"cause":"engine_errors","model":"qwen-32b","instance":"0"}`); code != http.StatusCreated {
		t.Fatalf("inject by ordinal: %d %s", code, body)
	}
	if got := c.Faults()[1].Scope; got != (metrics.Scope{Model: "qwen2.5-32b-instruct", Instance: "qwen-32b-0"}) {
		t.Errorf("ordinal fault scope = %+v", got)
	}
	if code, _ := do(http.MethodDelete, "/faults", ""); code != http.StatusNoContent {
		t.Errorf("clear: %d", code)
	}
	if len(c.Faults()) != 0 {
		t.Errorf("faults left after DELETE: %v", c.Faults())
	}
	if code, _ := do(http.MethodGet, "/engines/nope/metrics", ""); code != http.StatusNotFound {
		t.Errorf("unknown page: %d, want 404", code)
	}
	code, body = do(http.MethodGet, "/prometheus.yml", "")
	if code != http.StatusOK || !strings.Contains(body, "__metrics_path__: \"/engines/llama-8b-0/metrics\"") || !strings.Contains(body, `pod: "llama-8b-0"`) {
		t.Errorf("prometheus.yml: %d\n%s", code, body)
	}
}

func TestParseFaultSpec(t *testing.T) {
	models := []string{"llama-3.1-8b-instruct", "qwen2.5-32b-instruct"}
	tests := []struct {
		spec    string
		want    Fault
		wantErr bool
	}{
		{"engine_errors", Fault{Cause: "engine_errors", Scope: metrics.Scope{Model: models[0]}, Severity: 0.7}, false},
		{"engine_errors:0.3", Fault{Cause: "engine_errors", Scope: metrics.Scope{Model: models[0]}, Severity: 0.3}, false},
		{"gpu_throttling:qwen-32b", Fault{Cause: "gpu_throttling", Scope: metrics.Scope{Model: "qwen-32b"}, Severity: 0.7}, false},
		{"gpu_throttling:qwen-32b/qwen-32b-1:0.9", Fault{Cause: "gpu_throttling", Scope: metrics.Scope{Model: "qwen-32b", Instance: "qwen-32b-1"}, Severity: 0.9}, false},
		{"gpu_throttling:qwen-32b:lots", Fault{}, true},
		{"gpu_throttling:qwen-32b:1.5", Fault{}, true},
		{":qwen-32b", Fault{}, true},
		{"a:b:c:d", Fault{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseFaultSpec(tc.spec, models)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSetConfigShowsInCacheConfigInfo(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	scope := metrics.Scope{Model: Models[0].Name}
	cfg, err := c.Config(scope)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxNumSeqs = 128
	cfg.GPUMemoryUtilization = 0.85
	cfg.MaxModelLen = 16384
	cfg.Replicas = 3
	if err := c.SetConfig(scope, cfg); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Targets()); n != 5 {
		t.Errorf("%d targets after scaling to 3 replicas, want 5", n)
	}
	info := parsePage(t, c, "/engines/llama-8b-2/metrics")["vllm:cache_config_info"].Metric[0]
	if got := labelValue(info, "gpu_memory_utilization"); got != "0.85" {
		t.Errorf("gpu_memory_utilization label %q, want 0.85", got)
	}
	// vLLM's info metric carries CacheConfig fields only: no scheduler,
	// model or parallel settings, and no model_name.
	for _, l := range info.Label {
		switch l.GetName() {
		case "max_num_seqs", "max_num_batched_tokens", "max_model_len", "tensor_parallel_size",
			"num_speculative_tokens", "replicas", "model_name":
			t.Errorf("cache_config_info carries %s=%q, which is not a CacheConfig field", l.GetName(), l.GetValue())
		}
	}
	// max_model_len comes from the engine's /v1/models instead.
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/engines/llama-8b-2/v1/models", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"max_model_len":16384`) ||
		!strings.Contains(rec.Body.String(), `"id":"`+Models[0].Name+`"`) {
		t.Errorf("/v1/models: %d %s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/engines/nope/v1/models", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/v1/models of an unknown engine: %d", rec.Code)
	}
	cfg.GPUMemoryUtilization = 2
	if err := c.SetConfig(scope, cfg); err == nil {
		t.Error("gpu_memory_utilization 2 accepted")
	}
}

// The default field set is dcgm-exporter's default-counters.csv: no
// profiling field; the profiling set adds them.
func TestDCGMFieldSets(t *testing.T) {
	for _, tc := range []struct {
		fields DCGMFields
		model  map[string]DCGMFields // per-model override
		target int                   // which target's GPUs to read
		wantSM bool
	}{
		{DCGMDefault, nil, 0, false},
		{DCGMProfiling, nil, 0, true},
		{"", nil, 0, true},
		// One model's node pool runs the default counters, the other's
		// the profiling ones.
		{"", map[string]DCGMFields{Models[1].Name: DCGMDefault}, 2, false},
		{"", map[string]DCGMFields{Models[1].Name: DCGMDefault}, 0, true},
		{DCGMDefault, map[string]DCGMFields{Models[0].Name: DCGMProfiling}, 0, true},
	} {
		c := New(Options{Seed: 1, Start: monday, DCGMFields: tc.fields, ModelDCGMFields: tc.model})
		c.Advance(monday.Add(time.Minute))
		fams := parsePage(t, c, c.Targets()[tc.target].GPUPath)
		if _, ok := fams["DCGM_FI_DEV_GPU_UTIL"]; !ok {
			t.Errorf("%q: DCGM_FI_DEV_GPU_UTIL missing", tc.fields)
		}
		prof := 0
		for name := range fams {
			if strings.HasPrefix(name, "DCGM_FI_PROF_") {
				prof++
			}
		}
		if _, ok := fams["DCGM_FI_PROF_SM_ACTIVE"]; ok != tc.wantSM || (!tc.wantSM && prof > 0) {
			t.Errorf("%q %v, target %d: SM_ACTIVE present %v, %d profiling families", tc.fields, tc.model, tc.target, ok, prof)
		}
	}
}

// The Kubernetes-style configuration labels exporter targets with their
// own pod, so that Prometheus renames the series' pod to exported_pod.
func TestPrometheusConfigKubernetesLabels(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	cfg := c.PrometheusConfigFor("sim:9100", ScrapeLabelsKubernetes)
	for _, want := range []string{`pod: "dcgm-exporter-gpu-node-0"`, `namespace: "gpu-operator"`, `namespace: "inference"`,
		"job_name: dcgm-exporter\n    scrape_interval: 5s\n    static_configs:"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if static := c.PrometheusConfig("sim:9100"); !strings.Contains(static, "honor_labels: true") || strings.Contains(static, "dcgm-exporter-gpu-node") {
		t.Errorf("static config:\n%s", static)
	}
	if _, err := ParseScrapeLabels("servicemonitor"); err == nil {
		t.Error("unknown style accepted")
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {12, "12.0"}, {0.43, "0.43"}, {1042, "1042.0"}, {1.5e-05, "1.5e-05"},
		{123456.0, "123456.0"}, {1234567.0, "1.234567e+06"}, {2560, "2560.0"},
	}
	for _, tc := range tests {
		if got := pyFloat(tc.in); got != tc.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzParseFaultJSON(f *testing.F) {
	f.Add([]byte(`{"cause":"engine_errors","model":"llama-8b","severity":0.5,"duration":"10m"}`))
	f.Add([]byte(`{"cause":"x","model":"y","duration":30}`))
	f.Add([]byte(`{"severity":NaN}`))
	c := New(Options{Seed: 1, Start: monday})
	f.Fuzz(func(t *testing.T, body []byte) {
		fault, err := parseFaultJSON(body)
		if err != nil {
			return
		}
		if fault.Severity < 0 || fault.Severity > 1 || fault.Duration < 0 {
			t.Fatalf("accepted out-of-range fault %+v", fault)
		}
		_, _ = c.Inject(fault)
		c.ClearFaults()
	})
}

func TestConcurrentScrapeAndAdvance(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 50; i++ {
			c.Advance(monday.Add(time.Duration(i) * 5 * time.Second))
		}
	}()
	for _, tg := range c.Targets() {
		for _, path := range []string{tg.EnginePath, tg.GPUPath, GatewayPath} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || len(b) == 0 {
				t.Errorf("%s: %d, %d bytes", path, resp.StatusCode, len(b))
			}
		}
	}
	<-done
}
