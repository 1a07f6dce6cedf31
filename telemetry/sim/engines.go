package sim

import (
	"math"

	"github.com/casebook/casebook/metrics"
)

// The engines other than vLLM serve the same physics under their own
// names, labels, buckets and semantics, each read from the engine's
// source (cited in metrics/engine_catalog.go):
//
//   - SGLang (python/sglang/srt/metrics/collector.py): scheduler gauges
//     labelled engine_type, model_name, pp_rank and tp_rank
//     (num_running_reqs, num_queue_reqs, token_usage, cache_hit_rate and,
//     with speculative decoding, spec_accept_rate and spec_accept_length,
//     the last interval's values), and the tokenizer's per-request
//     counters and histograms labelled model_name. Its inter-token
//     histogram counts one observation per output token, so its mean is
//     per token, like vLLM's per-request TPOT; the simulator fills it from
//     the same per-request TPOT. An engine error ends a request as an
//     abort: SGLang counts both in num_aborted_requests_total.
//   - TensorRT-LLM trtllm-serve (tensorrt_llm/metrics/collector.py):
//     trtllm_ names labelled model_name and engine_type, vLLM's buckets,
//     kv_cache_utilization and a per-iteration kv_cache_hit_rate gauge,
//     and HTTP errors in request_error_total by http_code.
//   - llama.cpp llama-server (tools/server/server-context.cpp): unlabelled
//     counters of tokens and of the seconds spent on them, and gauges; no
//     request counter, no histograms, no KV usage in current releases.

// SGLang's default histogram buckets (TokenizerMetricsCollector and
// SchedulerMetricsCollector).
var (
	sglangTTFTBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangE2EBuckets   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sglangITLBuckets   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000}
	sglangQueueBuckets = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
)

// newHistogramsFor returns an instance's histograms with the bucket
// bounds its engine exports.
func newHistogramsFor(e metrics.Engine, maxModelLen int) histograms {
	h := newHistograms(maxModelLen)
	if e == metrics.EngineSGLang {
		h.ttft, h.tpot = newHistogram(sglangTTFTBuckets), newHistogram(sglangITLBuckets)
		h.e2e, h.queue = newHistogram(sglangE2EBuckets), newHistogram(sglangQueueBuckets)
	}
	return h
}

// EngineOf returns the engine a model's instances run.
func (c *Cluster) EngineOf(model string) metrics.Engine {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.models {
		if m.spec.Name == model {
			return m.engine
		}
	}
	return ""
}

// walkEngineOf writes the engine page of the instance's engine.
func (in *instance) walkEngineOf(w *walker) {
	switch in.model.engine {
	case metrics.EngineSGLang:
		in.walkSGLang(w)
	case metrics.EngineTRTLLM:
		in.walkTRTLLM(w)
	case metrics.EngineLlamaCpp:
		in.walkLlamaCpp(w)
	default:
		in.walkEngine(w)
	}
}

// hist writes one histogram family with the given labels (le goes first,
// as Python's client writes it).
func (w *walker) hist(name, help string, h *histogram, kv ...string) {
	w.family(name, help, "histogram")
	for i := range h.bounds {
		w.add(name+"_bucket", h.counts[i], append([]string{"le", h.pyLe[i]}, kv...)...)
	}
	w.add(name+"_bucket", h.count, append([]string{"le", "+Inf"}, kv...)...)
	w.add(name+"_count", h.count, kv...)
	w.add(name+"_sum", h.sum, kv...)
}

func (in *instance) walkSGLang(w *walker) {
	mn := in.model.spec.Name
	sched := []string{"engine_type", "unified", "model_name", mn, "pp_rank", "0", "tp_rank", "0"}
	gauge := func(name, help string, v float64) {
		w.family(name, help, "gauge")
		w.add(name, v, sched...)
	}
	counter := func(name, help string, v float64, kv ...string) {
		w.family(name, help, "counter")
		w.add(name, math.Floor(v), kv...)
	}
	pool := kvPoolTokens(in.model.spec, in.cfg)
	gauge("sglang:num_running_reqs", "The number of running requests.", in.running)
	gauge("sglang:num_used_tokens", "The number of used tokens.", math.Round(in.kvUsage*pool))
	gauge("sglang:token_usage", "The token usage.", math.Round(in.kvUsage*1e6)/1e6)
	gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", in.waiting)
	gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", math.Round(in.hitRate*1e6)/1e6)
	gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", pool)
	if in.cfg.NumSpeculativeTokens > 0 {
		gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.", math.Round(in.specLen*1e6)/1e6)
		gauge("sglang:spec_accept_rate", "The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens` in batch).", math.Round(in.specRate*1e6)/1e6)
	}
	counter("sglang:num_retracted_requests_total", "Total number of retracted requests.", in.cnt.preemptions, sched...)
	w.hist("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", in.hist.queue, sched...)

	model := []string{"model_name", mn}
	finished := 0.0
	for _, x := range in.cnt.success {
		finished += x
	}
	counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", in.cnt.prompt, model...)
	counter("sglang:generation_tokens_total", "Number of generation tokens processed.", in.cnt.generation, model...)
	counter("sglang:cached_tokens_total", "Number of cached prompt tokens.", in.cnt.prefixHits, model...)
	counter("sglang:num_requests_total", "Number of requests processed.", finished, model...)
	counter("sglang:num_aborted_requests_total", "Number of requests aborted.", in.cnt.success[2]+in.cnt.success[3], model...)
	w.hist("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", in.hist.ttft, model...)
	w.hist("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", in.hist.tpot, model...)
	w.hist("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", in.hist.e2e, model...)
}

func (in *instance) walkTRTLLM(w *walker) {
	labels := []string{"engine_type", "trtllm", "model_name", in.model.spec.Name}
	gauge := func(name, help string, v float64) {
		w.family(name, help, "gauge")
		w.add(name, v, labels...)
	}
	counter := func(name, help string, v float64) {
		w.family(name, help, "counter")
		w.add(name, math.Floor(v), labels...)
	}
	w.family("trtllm_request_success_total", "Count of successfully processed requests.", "counter")
	for i, r := range finishReasons {
		if r == "error" {
			continue // an engine error is an HTTP error, not a finished request
		}
		w.add("trtllm_request_success_total", math.Floor(in.cnt.success[i]), append(labels[:4:4], "finished_reason", r)...)
	}
	w.family("trtllm_request_error_total", "Total request errors, labeled by HTTP status code.", "counter")
	w.add("trtllm_request_error_total", math.Floor(in.cnt.success[3]), append(labels[:4:4], "http_code", "500")...)
	w.hist("trtllm_e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", in.hist.e2e, labels...)
	w.hist("trtllm_time_to_first_token_seconds", "Histogram of time to first token in seconds.", in.hist.ttft, labels...)
	w.hist("trtllm_time_per_output_token_seconds", "Histogram of time per output token in seconds.", in.hist.tpot, labels...)
	w.hist("trtllm_request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", in.hist.queue, labels...)
	w.hist("trtllm_request_prefill_time_seconds", "Histogram of prefill (context) phase duration in seconds (first_token_time - first_scheduled_time).", in.hist.prefill, labels...)
	w.hist("trtllm_request_decode_time_seconds", "Histogram of decode (generation) phase duration in seconds (last_token_time - first_token_time).", in.hist.decode, labels...)
	counter("trtllm_prompt_tokens_total", "Cumulative number of prompt (input) tokens processed.", in.cnt.prompt)
	counter("trtllm_generation_tokens_total", "Cumulative number of generation (output) tokens produced.", in.cnt.generation)
	counter("trtllm_prompt_cached_tokens_total", "Process-lifetime total prompt tokens served from KV cache. Resets only when the serving process restarts, not when the KV cache is flushed or evicted.", in.cnt.prefixHits)
	gauge("trtllm_kv_cache_hit_rate", "KV cache hit rate", math.Round(in.hitRate*1e6)/1e6)
	gauge("trtllm_kv_cache_utilization", "KV cache utilization", math.Round(in.kvUsage*1e6)/1e6)
	gauge("trtllm_num_requests_running", "Number of active requests", in.running)
	gauge("trtllm_num_requests_waiting", "Number of queued requests", in.waiting)
	if in.cfg.NumSpeculativeTokens > 0 {
		counter("trtllm_spec_decode_num_draft_tokens_total", "Total number of draft tokens in speculative decoding", in.cnt.draftTokens)
		counter("trtllm_spec_decode_num_accepted_tokens_total", "Total number of accepted tokens in speculative decoding", in.cnt.accepted)
		gauge("trtllm_spec_decode_acceptance_length", "Acceptance length in speculative decoding", math.Round(in.specLen*1e6)/1e6)
	}
}

func (in *instance) walkLlamaCpp(w *walker) {
	metric := func(name, help, typ string, v float64) {
		w.family(name, help, typ)
		w.add(name, v)
	}
	metric("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", "counter", math.Floor(in.cnt.prompt))
	metric("llamacpp:prompt_seconds_total", "Prompt process time", "counter", math.Round(in.cnt.prefillSeconds*1e3)/1e3)
	metric("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", "counter", math.Floor(in.cnt.generation))
	metric("llamacpp:tokens_predicted_seconds_total", "Predict process time", "counter", math.Round(in.cnt.decodeSeconds*1e3)/1e3)
	metric("llamacpp:requests_processing", "Number of requests processing.", "gauge", in.running)
	metric("llamacpp:requests_deferred", "Number of requests deferred.", "gauge", in.waiting)
}
