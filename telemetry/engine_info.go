package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// EngineInfo returns the engine configuration a scope's engines report,
// from the first instance that reports it: the labels of vLLM's
// vllm:cache_config_info (its CacheConfig fields, such as block_size,
// gpu_memory_utilization, enable_prefix_caching and num_gpu_blocks),
// max_model_len from the engine's OpenAI-compatible /v1/models, and
// "replicas": the number of instances serving the model. vLLM's info
// metric carries no model_name, so it is matched through the instance
// label. Anything an engine does not report is left out, not an error.
func (t *Telemetry) EngineInfo(ctx context.Context, scope metrics.Scope, at time.Time) (map[string]string, error) {
	sel, _, es, err := t.scopeSelectors(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine info: %w", err)
	}
	instances, err := t.scopeInstances(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine info: %w", err)
	}
	q := "last_over_time(vllm:cache_config_info{" + sel.Engine + "}[10m])"
	if len(instances) > 0 {
		q = "last_over_time(vllm:cache_config_info{" + t.opts.InstanceLabel + "=~" + quote(alternation(instances)) + "}[10m]) or " + q
	}
	res, err := t.querier.Instant(ctx, q, at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: engine info of %s: %w", scope, err)
	}
	out := map[string]string{}
	if es.Engine != "" {
		out["engine"] = string(es.Engine)
	}
	for _, r := range res {
		for k, v := range r.Labels {
			if _, seen := out[k]; !seen && k != "__name__" && k != "job" && k != "instance" && k != t.opts.InstanceLabel {
				out[k] = v
			}
		}
	}
	for _, in := range instances {
		if n, err := t.maxModelLen(ctx, scope.Model, in); err == nil {
			out["max_model_len"] = strconv.Itoa(n)
			break
		} else {
			t.log.Debug("engine /v1/models unavailable", "instance", in, "err", err)
		}
	}
	if scope.Instance == "" && len(instances) > 0 {
		out["replicas"] = strconv.Itoa(len(instances))
	} else if scope.Instance != "" {
		if all, err := t.scopeInstances(ctx, metrics.Scope{Model: scope.Model}); err == nil && len(all) > 0 {
			out["replicas"] = strconv.Itoa(len(all))
		}
	}
	return out, nil
}

// livenessNames is a regular expression matching every engine's liveness
// gauge.
func livenessNames() string {
	names := make([]string, len(metrics.Engines))
	for i, e := range metrics.Engines {
		names[i] = e.Liveness
	}
	return alternation(names)
}

// scopeInstances returns the instances of a scope: the one named, or every
// instance of the model.
func (t *Telemetry) scopeInstances(ctx context.Context, scope metrics.Scope) ([]string, error) {
	if scope.Instance != "" {
		return []string{scope.Instance}, nil
	}
	scopes, err := t.Scopes(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range scopes {
		if s.Model == scope.Model && s.Instance != "" {
			out = append(out, s.Instance)
		}
	}
	return out, nil
}

// engineEndpoints maps instances to the /metrics URLs Casebook scrapes
// for them (the engine's, and often the GPU exporter's too); the HTTP
// client reaches them.
type engineEndpoints struct {
	mu     sync.Mutex
	urls   map[string][]string
	client *http.Client
}

func (e *engineEndpoints) set(instance, metricsURL string, client *http.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.urls == nil {
		e.urls = map[string][]string{}
	}
	e.urls[instance] = append(e.urls[instance], metricsURL)
	e.client = client
}

func (e *engineEndpoints) get(instance string) ([]string, *http.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.urls[instance], e.client
}

// maxModelsBody bounds a /v1/models answer.
const maxModelsBody = 1 << 20

// maxModelLen asks an engine's OpenAI-compatible /v1/models for the
// served model's max_model_len. The engine is found by its scrape URL
// (the /metrics path replaced by /v1/models) or, for a remote Prometheus,
// by the instance label (host:port) its series carry.
func (t *Telemetry) maxModelLen(ctx context.Context, model, instance string) (int, error) {
	urls, client := t.engines.get(instance)
	var models []string
	for _, u := range urls {
		if strings.HasSuffix(u, "/metrics") {
			models = append(models, strings.TrimSuffix(u, "/metrics")+"/v1/models")
		}
	}
	if len(models) == 0 {
		rs, err := t.querier.Instant(ctx, "group by (instance) ({__name__=~"+quote(livenessNames())+","+t.opts.InstanceLabel+"="+quote(instance)+"})", t.now())
		if err != nil || len(rs) == 0 || rs[0].Labels["instance"] == "" {
			return 0, errors.New("no address known for the engine")
		}
		models = []string{"http://" + rs[0].Labels["instance"] + "/v1/models"}
	}
	if client == nil {
		client = &http.Client{}
	}
	var errs []error
	for _, u := range models {
		n, err := fetchMaxModelLen(ctx, client, u, model)
		if err == nil {
			return n, nil
		}
		errs = append(errs, err)
	}
	return 0, errors.Join(errs...)
}

func fetchMaxModelLen(ctx context.Context, client *http.Client, u, model string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if err != nil {
		return 0, err
	}
	return ParseModelsMaxLen(body, model)
}

// ParseModelsMaxLen reads max_model_len of one served model from an
// OpenAI-compatible /v1/models answer as vLLM writes it
// ({"object":"list","data":[{"id":...,"max_model_len":N},...]}); with one
// model listed, its id need not match (a served-model-name alias).
func ParseModelsMaxLen(body []byte, model string) (int, error) {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen *int   `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("/v1/models: %w", err)
	}
	for _, d := range list.Data {
		if d.MaxModelLen != nil && (d.ID == model || len(list.Data) == 1) {
			if *d.MaxModelLen <= 0 {
				return 0, fmt.Errorf("/v1/models: max_model_len %d of %q is not positive", *d.MaxModelLen, d.ID)
			}
			return *d.MaxModelLen, nil
		}
	}
	return 0, fmt.Errorf("/v1/models lists no max_model_len for %q", model)
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
	podLabel := GPUInstanceLabel
	if j, err := t.GPUJoin(ctx); err == nil && j.InstanceLabel != "" {
		podLabel = j.InstanceLabel
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
		out = append(out, GPUReading{Host: host(l), GPU: l["gpu"], UUID: l["UUID"], Pod: l[podLabel],
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
