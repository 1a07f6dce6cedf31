package metrics

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Engine names an inference engine whose /metrics the catalog reads.
type Engine string

// The engines the catalog knows. NVIDIA Dynamo is not an engine of its
// own here: its workers pass vLLM's or SGLang's metrics through, and its
// frontend is read as the gateway level of the latency decomposition.
const (
	EngineVLLM     Engine = "vllm"
	EngineSGLang   Engine = "sglang"
	EngineTRTLLM   Engine = "trtllm"
	EngineLlamaCpp Engine = "llamacpp"
)

// EngineSpec describes how one engine exposes its metrics.
type EngineSpec struct {
	ID   Engine
	Name string // as people write it, e.g. "TensorRT-LLM"
	// Prefixes are the metric-name prefixes that mark the engine's
	// series; DetectEngine reads them.
	Prefixes []string
	// Liveness is the gauge every instance of the engine exposes while it
	// runs; scope discovery lists instances by it.
	Liveness string
	// LabelsModel is false for engines whose series carry no model_name
	// label (llama-server labels nothing): the model is then read from a
	// configured label (Selectors.ModelLabel) and copied into model_name
	// with label_replace.
	LabelsModel bool
	// Histograms lists the latency histograms a release with full
	// metrics exposes; a scope with the engine's series but none of these
	// runs a release without histograms.
	Histograms []string
	// Source cites where the catalog's names, types, labels and buckets
	// for this engine were read.
	Source string
}

// Engines lists the engines the catalog maps, vLLM first.
var Engines = []EngineSpec{
	{ID: EngineVLLM, Name: "vLLM", Prefixes: []string{"vllm:"}, Liveness: "vllm:num_requests_running", LabelsModel: true,
		Histograms: []string{"vllm:time_to_first_token_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket"},
		Source:     "vllm-project/vllm vllm/v1/metrics/loggers.py (0.6 to 0.13 release lines)"},
	{ID: EngineSGLang, Name: "SGLang", Prefixes: []string{"sglang:"}, Liveness: "sglang:num_running_reqs", LabelsModel: true,
		Histograms: []string{"sglang:time_to_first_token_seconds_bucket", "sglang:e2e_request_latency_seconds_bucket"},
		Source:     "sgl-project/sglang python/sglang/srt/metrics/collector.py (commit 00ae9c15, 0.5 release line)"},
	{ID: EngineTRTLLM, Name: "TensorRT-LLM", Prefixes: []string{"trtllm_", "nv_trt_llm_"}, Liveness: "trtllm_num_requests_running", LabelsModel: true,
		Histograms: []string{"trtllm_time_to_first_token_seconds_bucket", "trtllm_e2e_request_latency_seconds_bucket"},
		Source:     "NVIDIA/TensorRT-LLM tensorrt_llm/metrics/collector.py (commit 050f80de, trtllm-serve /prometheus/metrics); Triton's nv_trt_llm_* from triton-inference-server/tensorrtllm_backend"},
	{ID: EngineLlamaCpp, Name: "llama.cpp", Prefixes: []string{"llamacpp:"}, Liveness: "llamacpp:requests_processing", LabelsModel: false,
		Source: "ggml-org/llama.cpp tools/server/server-context.cpp (commit fb402660, llama-server --metrics)"},
}

// LookupEngine returns the spec of an engine id.
func LookupEngine(e Engine) (EngineSpec, bool) {
	for _, s := range Engines {
		if s.ID == e {
			return s, true
		}
	}
	return EngineSpec{}, false
}

// EngineName returns the engine's display name, or the id itself for an
// engine the catalog does not know.
func EngineName(e Engine) string {
	if s, ok := LookupEngine(e); ok {
		return s.Name
	}
	return string(e)
}

// ParseEngine reads an engine id ("vllm", "sglang", "trtllm", "llamacpp").
func ParseEngine(s string) (Engine, error) {
	e := Engine(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := LookupEngine(e); ok {
		return e, nil
	}
	ids := make([]string, len(Engines))
	for i, sp := range Engines {
		ids[i] = string(sp.ID)
	}
	return "", fmt.Errorf("unknown engine %q: want one of %s", s, strings.Join(ids, ", "))
}

// Errors of DetectEngine.
var (
	// ErrMixedEngines: one scope exposes the series of two engines (two
	// deployments under one model name, or a mislabelled scrape target);
	// reading both would mix their series.
	ErrMixedEngines = errors.New("the scope exposes the series of more than one engine")
	// ErrUnknownEngine: nothing the scope exposes has a known prefix.
	ErrUnknownEngine = errors.New("no series of a known engine")
)

// EngineOf returns the engine whose prefix a metric name carries, and
// false for names of no engine (DCGM, gateway, HTTP series).
func EngineOf(name string) (Engine, bool) {
	for _, s := range Engines {
		for _, p := range s.Prefixes {
			if strings.HasPrefix(name, p) {
				return s.ID, true
			}
		}
	}
	return "", false
}

// DetectEngine names the engine of a scope from the metric names it
// exposes. Names of no engine are ignored. Two engines give
// ErrMixedEngines (with both named), none ErrUnknownEngine.
func DetectEngine(names []string) (Engine, error) {
	seen := map[Engine]bool{}
	for _, n := range names {
		if e, ok := EngineOf(n); ok {
			seen[e] = true
		}
	}
	switch len(seen) {
	case 0:
		return "", ErrUnknownEngine
	case 1:
		for e := range seen {
			return e, nil
		}
	}
	var found []string
	for e := range seen {
		found = append(found, EngineName(e))
	}
	sort.Strings(found)
	return "", fmt.Errorf("%w: %s", ErrMixedEngines, strings.Join(found, " and "))
}

// HasHistograms reports whether names include one of the engine's latency
// histograms; true for engines that export none in any release.
func (s EngineSpec) HasHistograms(names []string) bool {
	if len(s.Histograms) == 0 {
		return true
	}
	for _, h := range s.Histograms {
		if slices.Contains(names, h) {
			return true
		}
	}
	return false
}

// ForEngine returns the metric as engine e computes it: the alternatives
// of e and those every engine shares (GPU, gateway), with PromQL rebuilt
// from them. When e has no equivalent, Alts and PromQL are empty and
// Absent says why, naming the engine.
func (m Metric) ForEngine(e Engine) Metric {
	out := m
	out.Alts = nil
	for _, a := range m.Alts {
		if a.Engine == "" || a.Engine == e {
			out.Alts = append(out.Alts, a)
		}
	}
	out.PromQL = chainOf(out.Alts)
	if len(out.Alts) == 0 {
		out.Absent = absentFor(e, m.ID)
	}
	return out
}

// Engines reports which engines can compute the metric.
func (m Metric) Engines() []Engine {
	var out []Engine
	for _, s := range Engines {
		for _, a := range m.Alts {
			if a.Engine == "" || a.Engine == s.ID {
				out = append(out, s.ID)
				break
			}
		}
	}
	return out
}

// absentFor explains why engine e has no equivalent of a metric.
func absentFor(e Engine, id string) string {
	if why, ok := engineAbsent[e][id]; ok {
		return EngineName(e) + " exports no equivalent: " + why
	}
	if e == EngineLlamaCpp {
		return "llama.cpp exports no equivalent: llama-server has no request counter and no histograms"
	}
	return EngineName(e) + " exports no equivalent"
}
