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
	want := map[string]string{
		"gpu_memory_utilization": strconv.FormatFloat(cfg.GPUMemoryUtilization, 'f', -1, 64),
		"max_num_seqs":           strconv.Itoa(cfg.MaxNumSeqs),
		"tensor_parallel_size":   strconv.Itoa(cfg.TensorParallelSize),
		"replicas":               strconv.Itoa(instances),
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
