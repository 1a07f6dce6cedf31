package telemetry

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestEngineInfoAndGPUUsageOnTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("opens the demo")
	}
	tel, _ := openDemo(t, time.Hour)
	ctx := context.Background()
	c := simulator(tel)
	tg := c.Targets()[0]
	cfg, err := c.Config(metrics.Scope{Model: tg.Model})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-5 * time.Minute)
	info, err := tel.EngineInfo(ctx, metrics.Scope{Model: tg.Model}, at)
	if err != nil {
		t.Fatal(err)
	}
	instances := 0
	for _, x := range c.Targets() {
		if x.Model == tg.Model {
			instances++
		}
	}
	// CacheConfig fields from vllm:cache_config_info, max_model_len from
	// the engine's /v1/models, replicas from the instances; settings vLLM
	// does not report (max_num_seqs, tensor_parallel_size) stay unknown.
	want := map[string]string{
		"gpu_memory_utilization": strconv.FormatFloat(cfg.GPUMemoryUtilization, 'f', -1, 64),
		"enable_prefix_caching":  "True",
		"max_model_len":          strconv.Itoa(cfg.MaxModelLen),
		"replicas":               strconv.Itoa(instances),
		"max_num_seqs":           "",
		"tensor_parallel_size":   "",
		"model_name":             "",
	}
	if !cfg.EnablePrefixCaching {
		want["enable_prefix_caching"] = "False"
	}
	for k, v := range want {
		if info[k] != v {
			t.Errorf("engine info %s = %q, want %q (all: %v)", k, info[k], v, info)
		}
	}
	gpus, err := tel.GPUUsage(ctx, 15*time.Minute, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != len(c.Targets())*cfg.TensorParallelSize {
		t.Errorf("%d GPUs, want %d (every instance's TP group)", len(gpus), len(c.Targets())*cfg.TensorParallelSize)
	}
	for _, g := range gpus {
		if g.Host == "" || g.UUID == "" || g.Pod == "" || g.Samples == 0 || !(g.MaxUtil > 0 && g.MaxUtil <= 1) {
			t.Errorf("GPU reading %+v: want host, UUID, pod, readings and a busy utilisation in (0, 1]", g)
		}
	}
}

func TestParseModelsMaxLen(t *testing.T) {
	tests := []struct {
		name, body, model string
		want              int
		wantErr           bool
	}{
		{"vLLM answer", `{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","root":"m","parent":null,"max_model_len":8192}]}`, "m", 8192, false},
		{"alias of the only model", `{"data":[{"id":"served","max_model_len":4096}]}`, "m", 4096, false},
		{"two models, the named one", `{"data":[{"id":"a","max_model_len":1},{"id":"m","max_model_len":32768}]}`, "m", 32768, false},
		{"no max_model_len", `{"data":[{"id":"m"}]}`, "m", 0, true},
		{"not positive", `{"data":[{"id":"m","max_model_len":0}]}`, "m", 0, true},
		{"not JSON", `<html>`, "m", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseModelsMaxLen([]byte(tc.body), tc.model)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzParseModelsMaxLen(f *testing.F) {
	f.Add([]byte(`{"data":[{"id":"m","max_model_len":8192}]}`), "m")
	f.Add([]byte(`{"data":null}`), "")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		n, err := ParseModelsMaxLen(body, model)
		if err == nil && n <= 0 {
			t.Fatalf("accepted max_model_len %d", n)
		}
	})
}
