package change

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Knob types.
const (
	TypeFloat = "float"
	TypeInt   = "int"
	TypeBool  = "bool"
)

// Knob is one configuration setting an action can change.
type Knob struct {
	Name string // the action's knob id, e.g. "max_num_seqs"
	Flag string // the vLLM command-line flag, "" for a deployment setting
	// ConfigKey, when set, is the knob's key inside a JSON-valued flag:
	// vLLM takes the number of speculative tokens as
	// --speculative-config '{"num_speculative_tokens": N}'.
	ConfigKey string
	Type      string  // TypeFloat, TypeInt or TypeBool
	Min, Max  float64 // valid range (ignored for TypeBool)
	Help      string
}

// Knobs is the catalog of the knobs actions may change, vLLM's engine
// arguments (current flag names) and the deployment's replica count.
var Knobs = []Knob{
	{"gpu_memory_utilization", "--gpu-memory-utilization", "", TypeFloat, 0.5, 0.98,
		"Share of each GPU's memory the engine may use for weights, activations and the KV cache."},
	{"max_num_seqs", "--max-num-seqs", "", TypeInt, 1, 4096,
		"Most sequences in one batch."},
	{"max_num_batched_tokens", "--max-num-batched-tokens", "", TypeInt, 256, 1 << 20,
		"Token budget of one scheduler step (prefill chunks plus decodes)."},
	{"max_model_len", "--max-model-len", "", TypeInt, 256, 1 << 20,
		"Longest context (prompt plus output) the engine accepts."},
	{"enable_prefix_caching", "--enable-prefix-caching", "", TypeBool, 0, 1,
		"Reuse the KV cache of shared prompt prefixes."},
	{"num_speculative_tokens", "--speculative-config", "num_speculative_tokens", TypeInt, 0, 16,
		"Draft tokens proposed per step; 0 turns speculative decoding off."},
	{"tensor_parallel_size", "--tensor-parallel-size", "", TypeInt, 1, 8,
		"GPUs one engine instance spans."},
	{"replicas", "", "", TypeInt, 1, 64,
		"Engine instances behind the load balancer."},
}

// HelmChart says where a deployment chart's values set each knob. Paths
// are dotted; a segment "list[key=value]" is the entry of a list whose
// key is value, and MODEL in a value stands for the scope's model.
type HelmChart struct {
	Name string
	// Values maps knob ids to the values path of their own setting.
	Values map[string]string
	// Args is the values path of the engine's extra argument list, where
	// knobs without a path of their own go as vLLM flags; "" when the
	// chart has none.
	Args string
	// Doc is where the paths were read.
	Doc string
}

// HelmCharts are the presets for the charts people deploy vLLM with. With
// none chosen a change request carries vLLM arguments only.
var HelmCharts = []HelmChart{
	{Name: "production-stack", Doc: "vllm-project/production-stack helm/values.yaml",
		Values: map[string]string{
			"gpu_memory_utilization": "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.gpuMemoryUtilization",
			"max_num_seqs":           "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.maxNumSeqs",
			"max_model_len":          "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.maxModelLen",
			"enable_prefix_caching":  "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.enablePrefixCaching",
			"tensor_parallel_size":   "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.tensorParallelSize",
			"replicas":               "servingEngineSpec.modelSpec[name=MODEL].replicaCount",
		},
		Args: "servingEngineSpec.modelSpec[name=MODEL].vllmConfig.extraArgs"},
	{Name: "llm-d", Doc: "llm-d-incubation/llm-d-modelservice charts/llm-d-modelservice/values.yaml (decode pods)",
		Values: map[string]string{
			"tensor_parallel_size": "decode.parallelism.tensor",
			"replicas":             "decode.replicas",
		},
		Args: "decode.containers[name=vllm].args"},
	// KServe deploys vLLM through an InferenceService manifest rather than
	// chart values; the paths are the manifest's.
	{Name: "kserve", Doc: "KServe InferenceService spec (huggingface runtime)",
		Values: map[string]string{"replicas": "spec.predictor.minReplicas"},
		Args:   "spec.predictor.model.args"},
}

// LookupHelmChart returns a preset by name; "" and "none" mean no chart
// (ok true, zero chart).
func LookupHelmChart(name string) (HelmChart, bool) {
	if name == "" || name == "none" {
		return HelmChart{}, true
	}
	for _, c := range HelmCharts {
		if c.Name == name {
			return c, true
		}
	}
	return HelmChart{}, false
}

// HelmChartNames lists the presets, for flag help and errors.
func HelmChartNames() []string {
	out := []string{"none"}
	for _, c := range HelmCharts {
		out = append(out, c.Name)
	}
	return out
}

// LookupKnob returns the catalog entry for a knob id.
func LookupKnob(name string) (Knob, bool) {
	for _, k := range Knobs {
		if k.Name == name {
			return k, true
		}
	}
	return Knob{}, false
}

// Parse reads a value of the knob's type and checks its range.
func (k Knob) Parse(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if k.Type == TypeBool {
		switch strings.ToLower(s) {
		case "true", "1", "yes", "on":
			return 1, nil
		case "false", "0", "no", "off":
			return 0, nil
		}
		return 0, fmt.Errorf("change: %s: %q is not true or false", k.Name, s)
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("change: %s: %q is not a number", k.Name, s)
	}
	if k.Type == TypeInt && x != math.Trunc(x) {
		return 0, fmt.Errorf("change: %s: %q is not a whole number", k.Name, s)
	}
	if x < k.Min || x > k.Max {
		return 0, fmt.Errorf("change: %s: %s is outside %s..%s", k.Name, s, k.Format(k.Min), k.Format(k.Max))
	}
	return x, nil
}

// Format writes a value the way the knob's flag takes it.
func (k Knob) Format(x float64) string {
	switch k.Type {
	case TypeBool:
		if x != 0 {
			return "true"
		}
		return "false"
	case TypeInt:
		return strconv.FormatInt(int64(math.Round(x)), 10)
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// clamp puts x into the knob's range and, for whole-number knobs, rounds
// it; tensor_parallel_size is kept a power of two.
func (k Knob) clamp(x float64) float64 {
	if k.Type == TypeBool {
		if x != 0 {
			return 1
		}
		return 0
	}
	if k.Type == TypeInt {
		x = math.Round(x)
	}
	if k.Name == "tensor_parallel_size" {
		x = math.Pow(2, math.Round(math.Log2(math.Max(1, x))))
	}
	if k.Type == TypeFloat {
		x = math.Round(x*100) / 100
	}
	return math.Max(k.Min, math.Min(k.Max, x))
}
