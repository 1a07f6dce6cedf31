package sim

import (
	"testing"
	"time"
)

func TestFleetPreset(t *testing.T) {
	c := New(Options{Deployments: FleetPreset(), Start: time.Unix(1_700_000_000, 0)})
	targets := c.Targets()
	if len(targets) != 500 {
		t.Errorf("engines = %d, want 500", len(targets))
	}
	if c.gpus != 1000 {
		t.Errorf("GPUs = %d, want 1000", c.gpus)
	}
	models := map[string]int{}
	pods := map[string]bool{}
	for _, tg := range targets {
		models[tg.Model]++
		if pods[tg.Instance] {
			t.Errorf("instance %s listed twice", tg.Instance)
		}
		pods[tg.Instance] = true
	}
	if len(models) != 40 {
		t.Errorf("models = %d, want 40", len(models))
	}
	tps := map[int]int{}
	for _, m := range c.models {
		tps[m.cfg.TensorParallelSize] += len(m.instances)
		if got := len(m.instances[0].gpus); got != m.cfg.TensorParallelSize {
			t.Errorf("%s: %d GPUs per engine, want TP %d", m.spec.Name, got, m.cfg.TensorParallelSize)
		}
	}
	if tps[1] != 200 || tps[2] != 200 || tps[4] != 100 {
		t.Errorf("engines by TP = %v, want 200 on 1, 200 on 2, 100 on 4", tps)
	}
}
