package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/casebook/casebook/metrics"
)

// EngineInfo returns the engine configuration labels the scope's engines
// expose (vLLM's vllm:cache_config_info, one label per setting) at at,
// from the first instance that has them, plus "replicas": the number of
// instances serving the model. An engine without the info metric gives
// an empty map, not an error.
func (t *Telemetry) EngineInfo(ctx context.Context, scope metrics.Scope, at time.Time) (map[string]string, error) {
	sel, _, err := t.scopeSelectors(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine info: %w", err)
	}
	res, err := t.querier.Instant(ctx, "last_over_time(vllm:cache_config_info{"+sel.Engine+"}[10m])", at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine info of %s: %w", scope, err)
	}
	out := map[string]string{}
	for _, r := range res {
		for k, v := range r.Labels {
			if _, seen := out[k]; !seen && k != "__name__" {
				out[k] = v
			}
		}
	}
	scopes, err := t.Scopes(ctx)
	if err == nil {
		n := 0
		for _, s := range scopes {
			if s.Model == scope.Model && s.Instance != "" {
				n++
			}
		}
		if n > 0 {
			out["replicas"] = strconv.Itoa(n)
		}
	}
	return out, nil
}

// GPUReading is one GPU's utilisation over a window, from DCGM.
type GPUReading struct {
	Host, GPU, UUID string
	Pod             string // the engine pod on the GPU, "" when none
	MaxUtil         float64
	Samples         int
}

// GPUUsage returns every GPU's highest utilisation (DCGM_FI_DEV_GPU_UTIL,
// 0..1) and its number of readings over the window ending at at, with the
// host, GPU index, UUID and pod labels dcgm-exporter attaches.
func (t *Telemetry) GPUUsage(ctx context.Context, window time.Duration, at time.Time) ([]GPUReading, error) {
	w := strconv.FormatInt(int64(window/time.Second), 10) + "s"
	maxRes, err := t.querier.Instant(ctx, "max_over_time(DCGM_FI_DEV_GPU_UTIL["+w+"])", at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: gpu usage: %w", err)
	}
	cntRes, err := t.querier.Instant(ctx, "count_over_time(DCGM_FI_DEV_GPU_UTIL["+w+"])", at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: gpu usage: %w", err)
	}
	key := func(l map[string]string) string { return l["UUID"] + "|" + host(l) + "|" + l["gpu"] }
	counts := map[string]int{}
	for _, r := range cntRes {
		if len(r.Samples) > 0 {
			counts[key(r.Labels)] = int(r.Samples[len(r.Samples)-1].V)
		}
	}
	var out []GPUReading
	for _, r := range maxRes {
		if len(r.Samples) == 0 {
			continue
		}
		l := r.Labels
		out = append(out, GPUReading{Host: host(l), GPU: l["gpu"], UUID: l["UUID"], Pod: l[GPUInstanceLabel],
			MaxUtil: r.Samples[len(r.Samples)-1].V / 100, Samples: counts[key(l)]})
	}
	return out, nil
}

// host reads dcgm-exporter's host label, Hostname or lower-case hostname
// on newer builds.
func host(l map[string]string) string {
	if h := l["Hostname"]; h != "" {
		return h
	}
	return l["hostname"]
}
