package change

import (
	"strings"

	"github.com/casebook/casebook/metrics"
)

// EngineFlag is how one engine other than vLLM sets a knob: its own
// command-line flag, a key of a JSON or YAML option, or nothing.
type EngineFlag struct {
	// Flag is the engine's flag; "" when the engine has no equivalent
	// (Note says why).
	Flag string
	// ConfigKey, when set, is the knob's key inside a JSON-valued flag.
	ConfigKey string
	// Inverted marks a boolean flag that turns the feature off when given
	// (SGLang's --disable-radix-cache).
	Inverted bool
	// Note says what differs from vLLM's knob, or why there is none.
	Note string
}

// engineFlags maps knob ids to the engines' own settings (vLLM's is
// Knob.Flag). Flags were read from each engine's server arguments:
// SGLang python/sglang/srt/server_args.py, trtllm-serve's click options
// (tensorrt_llm/commands/serve.py) and llama.cpp's common/arg.cpp.
var engineFlags = map[string]map[metrics.Engine]EngineFlag{
	"gpu_memory_utilization": {
		metrics.EngineSGLang:   {Flag: "--mem-fraction-static", Note: "the share of GPU memory for weights and the KV pool"},
		metrics.EngineTRTLLM:   {Flag: "--kv_cache_free_gpu_memory_fraction", Note: "the share of the memory left after the weights and buffers, not of all memory"},
		metrics.EngineLlamaCpp: {Note: "llama-server sizes its KV cache by context length (--ctx-size), not by a memory share"},
	},
	"max_num_seqs": {
		metrics.EngineSGLang:   {Flag: "--max-running-requests"},
		metrics.EngineTRTLLM:   {Flag: "--max_batch_size"},
		metrics.EngineLlamaCpp: {Flag: "--parallel", Note: "the number of slots, each with its own share of the context"},
	},
	"max_num_batched_tokens": {
		metrics.EngineSGLang:   {Flag: "--chunked-prefill-size"},
		metrics.EngineTRTLLM:   {Flag: "--max_num_tokens"},
		metrics.EngineLlamaCpp: {Flag: "--batch-size"},
	},
	"max_model_len": {
		metrics.EngineSGLang:   {Flag: "--context-length"},
		metrics.EngineTRTLLM:   {Flag: "--max_seq_len"},
		metrics.EngineLlamaCpp: {Flag: "--ctx-size", Note: "the total context, shared by the --parallel slots"},
	},
	"enable_prefix_caching": {
		metrics.EngineSGLang:   {Flag: "--disable-radix-cache", Inverted: true, Note: "the radix cache is on unless disabled"},
		metrics.EngineTRTLLM:   {Flag: "--extra_llm_api_options", ConfigKey: "kv_cache_config.enable_block_reuse", Note: "a key of the LLM API options file"},
		metrics.EngineLlamaCpp: {Note: "llama-server reuses a slot's prompt cache per request (cache_prompt), not by a server flag"},
	},
	"num_speculative_tokens": {
		metrics.EngineSGLang:   {Flag: "--speculative-num-draft-tokens"},
		metrics.EngineTRTLLM:   {Flag: "--extra_llm_api_options", ConfigKey: "speculative_config.max_draft_len", Note: "a key of the LLM API options file"},
		metrics.EngineLlamaCpp: {Flag: "--draft-max"},
	},
	"tensor_parallel_size": {
		metrics.EngineSGLang:   {Flag: "--tp-size"},
		metrics.EngineTRTLLM:   {Flag: "--tp_size"},
		metrics.EngineLlamaCpp: {Note: "llama-server splits layers or rows across GPUs (--split-mode); it has no tensor-parallel degree"},
	},
}

// ForEngine returns the knob as engine e sets it: its flag (and JSON key)
// in e's terms, and whether e has one at all; note says what differs or
// why there is none. vLLM and an unknown engine get the knob unchanged;
// deployment settings (replicas) are the same everywhere.
func (k Knob) ForEngine(e metrics.Engine) (out Knob, ok bool, note string) {
	if e == "" || e == metrics.EngineVLLM || k.Flag == "" {
		return k, true, ""
	}
	f, found := engineFlags[k.Name][e]
	if !found {
		return k, true, ""
	}
	out = k
	out.Flag, out.ConfigKey = f.Flag, f.ConfigKey
	return out, f.Flag != "", f.Note
}

// inverted reports whether a boolean flag turns its feature off when
// given.
func inverted(flag string) bool {
	for _, byEngine := range engineFlags {
		for _, f := range byEngine {
			if f.Flag == flag && f.Inverted {
				return true
			}
		}
	}
	return false
}

// EngineKnob says in one line how engine e sets a knob, for the action
// lists: "--mem-fraction-static (SGLang)", or that it has none and why.
func EngineKnob(name string, e metrics.Engine) string {
	k, ok := LookupKnob(name)
	if !ok {
		return ""
	}
	ek, has, note := k.ForEngine(e)
	en := metrics.EngineName(e)
	if e == "" {
		en = "vLLM"
	}
	switch {
	case !has:
		return en + " has no equivalent of " + name + ": " + note
	case ek.Flag == "":
		return name + " (a deployment setting)"
	case ek.ConfigKey != "":
		return ek.Flag + " " + ek.ConfigKey + " (" + en + ")"
	}
	s := ek.Flag + " (" + en + ")"
	if note != "" {
		s += ": " + note
	}
	return strings.TrimSpace(s)
}
