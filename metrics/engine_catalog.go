package metrics

// The catalog's ways to compute each metric from the engines other than
// vLLM (whose alternatives are written in Catalog itself). Names, types,
// labels and buckets were read from each engine's own source:
//
//   - SGLang: sgl-project/sglang python/sglang/srt/metrics/collector.py at
//     commit 00ae9c15 (0.5 release line). SchedulerMetricsCollector's
//     gauges (num_running_reqs, num_queue_reqs, token_usage,
//     cache_hit_rate, spec_accept_rate, spec_accept_length) are set at each
//     scheduler log interval and describe that interval, not a counter to
//     rate; TokenizerMetricsCollector's counters and histograms
//     (num_requests_total, prompt_tokens_total, cached_tokens_total,
//     time_to_first_token_seconds, inter_token_latency_seconds,
//     e2e_request_latency_seconds) are per request. Its inter-token
//     histogram adds each interval to _sum and counts num_new_tokens
//     observations of interval/num_new_tokens, so _sum/_count is per
//     output token, the catalog's TPOT. Labels: model_name, engine_type,
//     tp_rank, pp_rank (the scheduler's also moe_ep_rank, dp_rank).
//   - TensorRT-LLM: NVIDIA/TensorRT-LLM tensorrt_llm/metrics/collector.py
//     at commit 050f80de (trtllm-serve's /prometheus/metrics, prefix
//     trtllm_, labels model_name and engine_type; histogram buckets copied
//     from vLLM's). trtllm_kv_cache_hit_rate is a per-iteration block
//     gauge; trtllm_prompt_cached_tokens_total is the token counter.
//     Triton's tensorrtllm_backend exposes nv_trt_llm_request_metrics and
//     nv_trt_llm_kv_cache_block_metrics gauges labelled by model instead.
//   - llama.cpp: ggml-org/llama.cpp tools/server/server-context.cpp at
//     commit fb402660 (llama-server --metrics): counters of tokens and
//     of the seconds spent on them, and gauges; no labels, no histograms,
//     no request counter. predicted_tokens_seconds is a rate gauge over
//     the time since the previous /metrics read, so the catalog reads
//     the counters instead and keeps the gauge as a fallback.
//   - NVIDIA Dynamo: ai-dynamo/dynamo lib/runtime/src/metrics/
//     prometheus_names.rs at commit 04070c75: the frontend's
//     dynamo_frontend_request_duration_seconds histogram and
//     dynamo_frontend_requests_total counter, labelled by model. Its
//     workers pass vLLM's or SGLang's own metrics through.

const (
	noteSGLang     = "SGLang 0.4-0.5 (sglang/srt/metrics/collector.py)"
	noteSGLangGage = "SGLang scheduler gauge: the value over its last log interval"
	noteTRTLLM     = "TensorRT-LLM trtllm-serve (trtllm_ prefix, tensorrt_llm/metrics/collector.py)"
	noteTriton     = "Triton TensorRT-LLM backend (nv_trt_llm_*, labelled by model)"
	noteLlamaCpp   = "llama.cpp llama-server --metrics"
	noteDynamo     = "NVIDIA Dynamo frontend (labelled by model; model-wide, not per worker)"
	noteSGLangTPOT = "SGLang 0.4 and earlier (time_per_output_token_seconds, renamed inter_token_latency_seconds)"
	// trtllm-serve's first metrics (NVIDIA/TensorRT-LLM pull 5785, mid
	// 2025) carried no prefix; only a scope set to TensorRT-LLM reads them.
	noteTRTBare = "trtllm-serve before the trtllm_ prefix (TensorRT-LLM 1.0)"
)

func engineAlt(e Engine, note, q string, series ...string) Alternative {
	return Alternative{Series: series, PromQL: q, Note: note, Engine: e}
}

// withModel copies the model from the configured label ($MLABEL) into
// model_name, for series that carry none.
func withModel(vector string) string {
	return `label_replace(` + vector + `, "model_name", "$1", "$MLABEL", "(.*)")`
}

// fromFrontend copies Dynamo's and Triton's model label into model_name.
func fromFrontend(vector string) string {
	return `label_replace(` + vector + `, "model_name", "$1", "model", "(.*)")`
}

func llamaRate(counter string) string {
	return "sum $BY (" + withModel("rate("+counter+"{$MSEL}[$WINDOW])") + ")"
}

func llamaGauge(agg, gauge string) string {
	return agg + " $BY (" + withModel(gauge+"{$MSEL}") + ")"
}

func frontendMean(hist string) string {
	return "1000 * sum $BY (" + fromFrontend("rate("+hist+"_sum{$FSEL}[$WINDOW])") + ") / sum $BY (" +
		fromFrontend("rate("+hist+"_count{$FSEL}[$WINDOW])") + ")"
}

func sg(note, q string, series ...string) Alternative {
	return engineAlt(EngineSGLang, note, q, series...)
}
func trt(note, q string, series ...string) Alternative {
	return engineAlt(EngineTRTLLM, note, q, series...)
}
func llama(q string, series ...string) Alternative {
	return engineAlt(EngineLlamaCpp, noteLlamaCpp, q, series...)
}

func engMean(e Engine, note, hist string) Alternative {
	a := mean(note, hist)
	a.Engine = e
	return a
}

func engP99(e Engine, note, hist string) Alternative {
	a := p99(note, hist)
	a.Engine = e
	return a
}

// engineAlts holds, per catalog id, the alternatives of every engine but
// vLLM, in the order the chain tries them.
var engineAlts = map[string][]Alternative{
	GatewayE2E: {{Series: []string{"dynamo_frontend_request_duration_seconds_sum", "dynamo_frontend_request_duration_seconds_count"},
		PromQL: frontendMean("dynamo_frontend_request_duration_seconds"), Note: noteDynamo}},
	ArrivalRPS: {{Series: []string{"dynamo_frontend_requests_total"},
		PromQL: "sum $BY (" + fromFrontend("rate(dynamo_frontend_requests_total{$FSEL}[$WINDOW])") + ")", Note: noteDynamo}},

	E2E: {
		engMean(EngineSGLang, noteSGLang, "sglang:e2e_request_latency_seconds"),
		engMean(EngineTRTLLM, noteTRTLLM, "trtllm_e2e_request_latency_seconds"),
		engMean(EngineTRTLLM, noteTRTBare, "e2e_request_latency_seconds"),
	},
	E2EP99: {
		engP99(EngineSGLang, noteSGLang, "sglang:e2e_request_latency_seconds"),
		engP99(EngineTRTLLM, noteTRTLLM, "trtllm_e2e_request_latency_seconds"),
		engP99(EngineTRTLLM, noteTRTBare, "e2e_request_latency_seconds"),
	},
	TTFT: {
		engMean(EngineSGLang, noteSGLang, "sglang:time_to_first_token_seconds"),
		engMean(EngineTRTLLM, noteTRTLLM, "trtllm_time_to_first_token_seconds"),
		engMean(EngineTRTLLM, noteTRTBare, "time_to_first_token_seconds"),
	},
	TTFTP99: {
		engP99(EngineSGLang, noteSGLang, "sglang:time_to_first_token_seconds"),
		engP99(EngineTRTLLM, noteTRTLLM, "trtllm_time_to_first_token_seconds"),
		engP99(EngineTRTLLM, noteTRTBare, "time_to_first_token_seconds"),
	},
	TPOT: {
		engMean(EngineSGLang, noteSGLang+": inter-token latency counted per output token", "sglang:inter_token_latency_seconds"),
		engMean(EngineSGLang, noteSGLangTPOT, "sglang:time_per_output_token_seconds"),
		engMean(EngineTRTLLM, noteTRTLLM, "trtllm_time_per_output_token_seconds"),
		engMean(EngineTRTLLM, noteTRTBare, "time_per_output_token_seconds"),
		llama("1000 * "+llamaRate("llamacpp:tokens_predicted_seconds_total")+" / "+llamaRate("llamacpp:tokens_predicted_total"),
			"llamacpp:tokens_predicted_seconds_total", "llamacpp:tokens_predicted_total"),
		engineAlt(EngineLlamaCpp, noteLlamaCpp+": rate gauge since the previous /metrics read",
			"1000 / "+llamaGauge("avg", "llamacpp:predicted_tokens_seconds"), "llamacpp:predicted_tokens_seconds"),
	},
	TPOTP99: {
		engP99(EngineSGLang, noteSGLang+": inter-token latency counted per output token", "sglang:inter_token_latency_seconds"),
		engP99(EngineSGLang, noteSGLangTPOT, "sglang:time_per_output_token_seconds"),
		engP99(EngineTRTLLM, noteTRTLLM, "trtllm_time_per_output_token_seconds"),
		engP99(EngineTRTLLM, noteTRTBare, "time_per_output_token_seconds"),
	},
	QueueTime: {
		engMean(EngineSGLang, noteSGLang, "sglang:queue_time_seconds"),
		engMean(EngineTRTLLM, noteTRTLLM, "trtllm_request_queue_time_seconds"),
	},
	PrefillTime: {engMean(EngineTRTLLM, noteTRTLLM, "trtllm_request_prefill_time_seconds")},
	DecodeTime:  {engMean(EngineTRTLLM, noteTRTLLM, "trtllm_request_decode_time_seconds")},
	ThroughputRPS: {
		sg(noteSGLang, rateOf("sglang:num_requests_total"), "sglang:num_requests_total"),
		trt(noteTRTLLM, rateOf("trtllm_request_success_total"), "trtllm_request_success_total"),
	},
	PromptTPS: {
		sg(noteSGLang, rateOf("sglang:prompt_tokens_total"), "sglang:prompt_tokens_total"),
		trt(noteTRTLLM, rateOf("trtllm_prompt_tokens_total"), "trtllm_prompt_tokens_total"),
		llama(llamaRate("llamacpp:prompt_tokens_total"), "llamacpp:prompt_tokens_total"),
	},
	GenerationTPS: {
		sg(noteSGLang, rateOf("sglang:generation_tokens_total"), "sglang:generation_tokens_total"),
		trt(noteTRTLLM, rateOf("trtllm_generation_tokens_total"), "trtllm_generation_tokens_total"),
		llama(llamaRate("llamacpp:tokens_predicted_total"), "llamacpp:tokens_predicted_total"),
	},
	RunningSeqs: {
		sg(noteSGLang, "sum $BY (sglang:num_running_reqs{$ENGINE})", "sglang:num_running_reqs"),
		trt(noteTRTLLM, "sum $BY (trtllm_num_requests_running{$ENGINE})", "trtllm_num_requests_running"),
		trt(noteTriton, "sum $BY ("+fromFrontend(`nv_trt_llm_request_metrics{$FSEL,request_type="active"}`)+")", `nv_trt_llm_request_metrics{request_type="active"}`),
		llama(llamaGauge("sum", "llamacpp:requests_processing"), "llamacpp:requests_processing"),
	},
	QueueDepth: {
		sg(noteSGLang, "sum $BY (sglang:num_queue_reqs{$ENGINE})", "sglang:num_queue_reqs"),
		trt(noteTRTLLM, "sum $BY (trtllm_num_requests_waiting{$ENGINE})", "trtllm_num_requests_waiting"),
		llama(llamaGauge("sum", "llamacpp:requests_deferred"), "llamacpp:requests_deferred"),
	},
	MeanPromptTokens: {
		sg(noteSGLang+": prompt tokens per finished request", ratioOf("sglang:prompt_tokens_total", "sglang:num_requests_total"),
			"sglang:prompt_tokens_total", "sglang:num_requests_total"),
		trt(noteTRTLLM+": prompt tokens per finished request", ratioOf("trtllm_prompt_tokens_total", "trtllm_request_success_total"),
			"trtllm_prompt_tokens_total", "trtllm_request_success_total"),
	},
	KVCacheUsage: {
		sg(noteSGLang+": token_usage, the share of the KV pool's tokens in use", "avg $BY (sglang:token_usage{$ENGINE})", "sglang:token_usage"),
		trt(noteTRTLLM, "avg $BY (trtllm_kv_cache_utilization{$ENGINE})", "trtllm_kv_cache_utilization"),
		trt(noteTriton, "sum $BY ("+fromFrontend(`nv_trt_llm_kv_cache_block_metrics{$FSEL,kv_cache_block_type="used"}`)+") / sum $BY ("+
			fromFrontend(`nv_trt_llm_kv_cache_block_metrics{$FSEL,kv_cache_block_type="max"}`)+")",
			`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used"}`, `nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max"}`),
		llama(llamaGauge("avg", "llamacpp:kv_cache_usage_ratio"), "llamacpp:kv_cache_usage_ratio"),
	},
	KVCacheHitRate: {
		sg(noteSGLang+": cached / all prompt tokens", ratioOf("sglang:cached_tokens_total", "sglang:prompt_tokens_total"),
			"sglang:cached_tokens_total", "sglang:prompt_tokens_total"),
		sg(noteSGLangGage, "avg $BY (sglang:cache_hit_rate{$ENGINE})", "sglang:cache_hit_rate"),
		trt(noteTRTLLM+": cached / all prompt tokens", ratioOf("trtllm_prompt_cached_tokens_total", "trtllm_prompt_tokens_total"),
			"trtllm_prompt_cached_tokens_total", "trtllm_prompt_tokens_total"),
		trt(noteTRTLLM+": per-iteration block hit-rate gauge", "avg $BY (trtllm_kv_cache_hit_rate{$ENGINE})", "trtllm_kv_cache_hit_rate"),
	},
	RejectionRate: {
		sg(noteSGLangGage+" (accepted / draft tokens in the batch)", "1 - avg $BY (sglang:spec_accept_rate{$ENGINE})", "sglang:spec_accept_rate"),
		trt(noteTRTLLM, "1 - "+ratioOf("trtllm_spec_decode_num_accepted_tokens_total", "trtllm_spec_decode_num_draft_tokens_total"),
			"trtllm_spec_decode_num_accepted_tokens_total", "trtllm_spec_decode_num_draft_tokens_total"),
	},
	ErrorRate: {
		trt(noteTRTLLM+": 5xx answers / finished and failed requests",
			"sum $BY (rate(trtllm_request_error_total{$ENGINE,http_code=~\"5..\"}[$WINDOW])) / (sum $BY (rate(trtllm_request_success_total{$ENGINE}[$WINDOW])) + sum $BY (rate(trtllm_request_error_total{$ENGINE,http_code=~\"5..\"}[$WINDOW])))",
			"trtllm_request_error_total", "trtllm_request_success_total"),
	},
	PreemptionRate: {
		sg(noteSGLang+": retracted requests (SGLang's preemption)", rateOf("sglang:num_retracted_requests_total"), "sglang:num_retracted_requests_total"),
	},
	AbortRate: {
		sg(noteSGLang+": aborted / finished requests", ratioOf("sglang:num_aborted_requests_total", "sglang:num_requests_total"),
			"sglang:num_aborted_requests_total", "sglang:num_requests_total"),
	},
	CachedPromptTPS: {
		sg(noteSGLang, rateOf("sglang:cached_tokens_total"), "sglang:cached_tokens_total"),
		trt(noteTRTLLM, rateOf("trtllm_prompt_cached_tokens_total"), "trtllm_prompt_cached_tokens_total"),
	},
	SpecAcceptLength: {
		sg(noteSGLangGage, "avg $BY (sglang:spec_accept_length{$ENGINE})", "sglang:spec_accept_length"),
		trt(noteTRTLLM+": per-iteration gauge", "avg $BY (trtllm_spec_decode_acceptance_length{$ENGINE})", "trtllm_spec_decode_acceptance_length"),
	},
}

// engineAbsent says why an engine has no equivalent of a metric, where
// the reason is more than "it exports none".
var engineAbsent = map[Engine]map[string]string{
	EngineSGLang: {
		PrefillTime:   "SGLang times prefill only per stage of disaggregated serving (per_stage_req_latency_seconds), not per request",
		DecodeTime:    "SGLang times decode only per stage of disaggregated serving (per_stage_req_latency_seconds), not per request",
		ErrorRate:     "SGLang counts aborted requests (num_aborted_requests_total) without telling an engine failure from a client abort",
		APIErrorRate:  "SGLang's HTTP server exports no per-status request counter",
		QueueCapacity: "SGLang does not split its queue by reason (num_grammar_queue_reqs counts grammar compilation only)",
	},
	EngineTRTLLM: {
		PreemptionRate: "TensorRT-LLM reports paused requests as a gauge (trtllm_num_paused_requests), not a count of preemptions",
		AbortRate:      "trtllm-serve labels finished requests with finished_reason but counts no client cancellations apart",
		APIErrorRate:   "trtllm-serve's errors are read from trtllm_request_error_total (error_rate)",
		QueueCapacity:  "TensorRT-LLM does not split its queue by reason",
	},
}
