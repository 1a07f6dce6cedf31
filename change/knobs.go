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
	Name     string  // the action's knob id, e.g. "max_num_seqs"
	Flag     string  // the vLLM command-line flag, "" for a deployment setting
	HelmPath string  // dotted path in a Helm values file
	Type     string  // TypeFloat, TypeInt or TypeBool
	Min, Max float64 // valid range (ignored for TypeBool)
	Help     string
}

// Knobs is the catalog of the knobs actions may change, vLLM's engine
// arguments and the deployment's replica count.
var Knobs = []Knob{
	{"gpu_memory_utilization", "--gpu-memory-utilization", "vllm.engineArgs.gpuMemoryUtilization", TypeFloat, 0.5, 0.98,
		"Share of each GPU's memory the engine may use for weights, activations and the KV cache."},
	{"max_num_seqs", "--max-num-seqs", "vllm.engineArgs.maxNumSeqs", TypeInt, 1, 4096,
		"Most sequences in one batch."},
	{"max_num_batched_tokens", "--max-num-batched-tokens", "vllm.engineArgs.maxNumBatchedTokens", TypeInt, 256, 1 << 20,
		"Token budget of one scheduler step (prefill chunks plus decodes)."},
	{"max_model_len", "--max-model-len", "vllm.engineArgs.maxModelLen", TypeInt, 256, 1 << 20,
		"Longest context (prompt plus output) the engine accepts."},
	{"enable_prefix_caching", "--enable-prefix-caching", "vllm.engineArgs.enablePrefixCaching", TypeBool, 0, 1,
		"Reuse the KV cache of shared prompt prefixes."},
	{"num_speculative_tokens", "--num-speculative-tokens", "vllm.engineArgs.numSpeculativeTokens", TypeInt, 0, 16,
		"Draft tokens proposed per step; 0 turns speculative decoding off."},
	{"tensor_parallel_size", "--tensor-parallel-size", "vllm.engineArgs.tensorParallelSize", TypeInt, 1, 8,
		"GPUs one engine instance spans."},
	{"replicas", "", "replicaCount", TypeInt, 1, 64,
		"Engine instances behind the load balancer."},
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
