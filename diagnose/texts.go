package diagnose

import (
	"fmt"
	"math"

	m "github.com/casebook/casebook/metrics"
)

// This file holds every title and sentence the package shows, in one table
// per kind, so that a translation can be added by swapping the tables.

// causeTitles names each root cause.
var causeTitles = map[string]string{
	m.CauseKVCacheEviction:       "KV-cache eviction storm",
	m.CauseQueueBacklog:          "Queue backlog: arrivals exceed capacity",
	m.CauseGPUUnderutilized:      "GPU underutilised: batches too small",
	m.CauseSpecDecodeDegradation: "Speculative decoding degraded",
	m.CauseMemoryBandwidthBound:  "Memory-bandwidth bound decode",
	m.CauseLongPromptPrefill:     "Long-prompt prefill surge",
	m.CausePrefixCacheMiss:       "Prefix-cache misses",
	m.CauseGPUThrottling:         "GPU throttling",
	m.CauseTransportLatency:      "Transport latency outside the engine",
	m.CauseEngineErrors:          "Engine errors",
	m.CauseHostOverhead:          "Host (CPU-side) overhead",
	m.CauseUnknown:               "Unknown anomaly",
	m.CauseNone:                  "No anomaly",
}

func causeTitle(id string) string {
	if t, ok := causeTitles[id]; ok {
		return t
	}
	if c, ok := m.LookupCause(id); ok {
		return c.Title
	}
	return id
}

// metricNames are the short English names of catalog metrics used in
// evidence sentences.
var metricNames = map[string]string{
	m.GatewayE2E:       "Gateway E2E latency",
	m.E2E:              "Engine E2E latency",
	m.E2EP99:           "p99 engine E2E latency",
	m.TTFT:             "Time to first token",
	m.TTFTP99:          "p99 time to first token",
	m.TPOT:             "Time per output token",
	m.TPOTP99:          "p99 time per output token",
	m.QueueTime:        "Queue time",
	m.PrefillTime:      "Prefill time",
	m.DecodeTime:       "Decode time",
	m.ThroughputRPS:    "Throughput",
	m.ArrivalRPS:       "Arrival rate",
	m.PromptTPS:        "Prompt tokens/s",
	m.GenerationTPS:    "Generated tokens/s",
	m.RunningSeqs:      "Running batch",
	m.QueueDepth:       "Queue depth",
	m.MeanPromptTokens: "Mean prompt length",
	m.SMUtil:           "SM activity",
	m.TensorActive:     "Tensor-pipe activity",
	m.DRAMActive:       "DRAM bandwidth utilisation",
	m.GPUMemUsedFrac:   "GPU memory used",
	m.KVCacheUsage:     "KV-cache usage",
	m.SMClock:          "SM clock",
	m.MemClock:         "Memory clock",
	m.Power:            "Board power",
	m.GPUTemp:          "GPU temperature",
	m.KVCacheHitRate:   "Prefix-cache hit rate",
	m.RejectionRate:    "Draft rejection rate",
	m.ErrorRate:        "Error rate",
	m.PreemptionRate:   "Preemption rate",
}

// Remark keys: a physical reading a rule adds to an evidence sentence.
const (
	remarkKVFull        = "kv_full"
	remarkKVRoom        = "kv_room"
	remarkPreempting    = "preempting"
	remarkHitsLost      = "hits_lost"
	remarkAtCeiling     = "at_ceiling"
	remarkSaturated     = "saturated"
	remarkIdle          = "idle"
	remarkSmallBatch    = "small_batch"
	remarkRejected      = "rejected"
	remarkBandwidth     = "bandwidth"
	remarkDecodeBound   = "decode_bound"
	remarkLongPrompts   = "long_prompts"
	remarkClockDown     = "clock_down"
	remarkHot           = "hot"
	remarkOutsideEngine = "outside_engine"
	remarkEngineCalm    = "engine_calm"
	remarkFailing       = "failing"
	remarkStarved       = "starved"
	remarkBatchFine     = "batch_fine"
	remarkCapped        = "capped"
)

var remarks = map[string]string{
	remarkKVFull:        "Past the ~90% knee every new sequence forces a preemption.",
	remarkKVRoom:        "The cache has room, so the misses come from the traffic, not the cache size.",
	remarkPreempting:    "Preempted sequences are recomputed from their prompt.",
	remarkHitsLost:      "Lost prefix hits turn into prefill work.",
	remarkAtCeiling:     "Throughput holds at its ceiling instead of following demand.",
	remarkSaturated:     "The GPU is at its saturation knee; queueing grows non-linearly from here.",
	remarkIdle:          "The SMs are idle a large share of the time.",
	remarkSmallBatch:    "Small batches leave compute unused.",
	remarkRejected:      "Each rejected draft costs a step that keeps a single token.",
	remarkBandwidth:     "Decode steps are limited by HBM bandwidth.",
	remarkDecodeBound:   "Every decode step reads the weights and KV cache from HBM.",
	remarkLongPrompts:   "Prefill cost grows with prompt length.",
	remarkClockDown:     "A lower clock slows every kernel.",
	remarkHot:           "The GPU is near its thermal limit.",
	remarkOutsideEngine: "The extra time is spent outside the engine.",
	remarkEngineCalm:    "The engine itself is not slower.",
	remarkFailing:       "Failed requests are lost work and user-visible errors.",
	remarkStarved:       "The GPU is waiting on the host.",
	remarkBatchFine:     "The batch is not small, so the GPU should be busy.",
	remarkCapped:        "Requests wait while the batch shrank: the scheduler admits fewer sequences than the GPU could take.",
	"abs_errors":        "A healthy engine fails well under 1% of requests.",
	"abs_kv":            "Past the ~90% knee every new sequence forces a preemption.",
	"abs_queue":         "The queue is deeper than the running batch: the engine cannot admit the work.",
	"abs_idle":          "Requests wait while the batch is small and the SMs idle.",
	"abs_clock":         "A busy data-centre GPU below ~1,400 MHz, or near 85-90 C, is held back by a thermal or power limit.",
	"abs_gateway":       "A healthy gateway adds a few milliseconds; this much time is spent outside the engine.",
	"abs_rejected":      "A useful draft model has most of its tokens accepted.",
	"abs_dram":          "HBM bandwidth is at its saturation knee.",
	"abs_host":          "A large batch should keep the SMs busy; the time goes elsewhere.",
}

// absRemark is the physical limit an absolute signature read, added to
// the first reading it cites.
var absRemark = map[string]string{
	m.CauseEngineErrors:          "abs_errors",
	m.CauseKVCacheEviction:       "abs_kv",
	m.CauseQueueBacklog:          "abs_queue",
	m.CauseGPUUnderutilized:      "abs_idle",
	m.CauseGPUThrottling:         "abs_clock",
	m.CauseTransportLatency:      "abs_gateway",
	m.CauseSpecDecodeDegradation: "abs_rejected",
	m.CauseMemoryBandwidthBound:  "abs_dram",
	m.CauseHostOverhead:          "abs_host",
}

// Notes a diagnosis carries about its own footing.
const (
	noteNoBaseline    = "No usable history: the diagnosis rests on absolute limits only, so its confidence is lowered."
	noteShortBaseline = "Only part of the metrics have a baseline (%.0f%%); the confidence is lowered accordingly."
)

// noteOverturned explains a diagnosis that similar cases changed: the
// rules' cause, the new one, how many neighbours named it, its vote share
// and the rules' confidence.
const noteOverturned = "Similar cases changed the answer from %s to %s: %d of the %d nearest labelled cases had that cause (%.0f%% of the similarity-weighted vote), against the rules' confidence of %.0f%%."

// formatValue renders a metric value in its unit.
func formatValue(id string, x float64) string {
	mt, _ := m.Lookup(id)
	switch mt.Unit {
	case "ratio":
		return fmt.Sprintf("%.1f%%", 100*x)
	case "ms":
		return fmt.Sprintf("%.0f ms", x)
	case "", "count":
		return fmt.Sprintf("%.3g", x)
	case "1/s":
		return fmt.Sprintf("%.3g/s", x)
	default:
		return fmt.Sprintf("%.3g %s", x, mt.Unit)
	}
}

// evidenceText is the one-sentence reading of a metric against its baseline,
// followed by the rule's remark.
func evidenceText(id string, x float64, d Deviation, remark string) string {
	name := metricNames[id]
	if name == "" {
		name = id
	}
	var s string
	switch {
	case d.Std == 0 && d.Z == 0:
		s = fmt.Sprintf("%s is %s (no baseline).", name, formatValue(id, x))
	case math.Abs(d.Z) < 2:
		s = fmt.Sprintf("%s is %s, within its baseline of %s (z %+.1f).", name, formatValue(id, x), formatValue(id, d.Mean), d.Z)
	case d.Mean > 0 && x/d.Mean >= 1.5:
		s = fmt.Sprintf("%s is %s, %.1fx its baseline of %s (z %+.1f).", name, formatValue(id, x), x/d.Mean, formatValue(id, d.Mean), d.Z)
	case d.Z > 0:
		s = fmt.Sprintf("%s is %s, up from its baseline of %s (z %+.1f).", name, formatValue(id, x), formatValue(id, d.Mean), d.Z)
	default:
		s = fmt.Sprintf("%s is %s, down from its baseline of %s (z %+.1f).", name, formatValue(id, x), formatValue(id, d.Mean), d.Z)
	}
	if r := remarks[remark]; r != "" {
		s += " " + r
	}
	return s
}

// eff builds an Effect.
func eff(metric, dir, size string) Effect { return Effect{Metric: metric, Direction: dir, Size: size} }

// causeActions are the remedies per root cause, most effective first.
var causeActions = map[string][]Action{
	m.CauseKVCacheEviction: {
		{ID: "raise_gpu_memory_utilization", Title: "Give the KV cache more memory", Knob: "gpu_memory_utilization", Proposed: "0.95",
			Why:      "A larger share of GPU memory for the engine means more KV blocks, so fewer sequences are evicted and recomputed.",
			Effects:  []Effect{eff(m.PreemptionRate, "down", "-50..-90%"), eff(m.TTFT, "down", "-20..-50%"), eff(m.KVCacheHitRate, "up", "+5..+20 pts"), eff(m.GPUMemUsedFrac, "up", "+3..+5 pts")},
			Risk:     "Out-of-memory under activation spikes (long prompts, large batches) when too little headroom is left.",
			Rollback: "Restore the previous gpu_memory_utilization and restart the engine."},
		{ID: "lower_max_num_seqs", Title: "Admit fewer concurrent sequences", Knob: "max_num_seqs", Proposed: "current x 0.75",
			Why:      "Fewer sequences in flight fit in the cache, so they stop preempting each other.",
			Effects:  []Effect{eff(m.PreemptionRate, "down", "-50..-90%"), eff(m.TTFT, "down", "-10..-40%"), eff(m.ThroughputRPS, "down", "0..-15%"), eff(m.QueueTime, "up", "+0..+30%")},
			Risk:     "Lower peak throughput; the queue moves from the KV cache to the scheduler.",
			Rollback: "Restore max_num_seqs."},
		{ID: "lower_max_model_len", Title: "Cap the context length", Knob: "max_model_len", Proposed: "the p99 of real prompt+output length",
			Why:      "Very long contexts take many blocks each; a cap stops a few requests from evicting everyone else.",
			Effects:  []Effect{eff(m.KVCacheUsage, "down", "-10..-30%"), eff(m.PreemptionRate, "down", "-30..-70%"), eff(m.ErrorRate, "up", "+0..+1 pt")},
			Risk:     "Requests longer than the cap are rejected.",
			Rollback: "Restore max_model_len."},
		{ID: "add_replicas", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
			Why:      "Spreading sequences over more engines divides the KV demand per cache.",
			Effects:  []Effect{eff(m.KVCacheUsage, "down", "-20..-50%"), eff(m.TTFT, "down", "-20..-50%"), eff(m.ThroughputRPS, "up", "+0..+50%")},
			Risk:     "GPU cost; prefix locality drops unless routing is cache-aware.",
			Rollback: "Scale the replicas back down."},
	},
	m.CauseQueueBacklog: {
		{ID: "add_replicas", Title: "Add capacity", Knob: "replicas", Proposed: "+1 per 80% of current peak load",
			Why:      "Arrivals exceed what the engines can serve; only more capacity drains the queue at this load.",
			Effects:  []Effect{eff(m.QueueTime, "down", "-50..-95%"), eff(m.TTFT, "down", "-30..-80%"), eff(m.ThroughputRPS, "up", "+20..+100%")},
			Risk:     "GPU cost; scale-up takes minutes while the queue keeps growing.",
			Rollback: "Scale the replicas back down once the surge ends."},
		{ID: "raise_max_num_seqs", Title: "Batch more sequences per step", Knob: "max_num_seqs", Proposed: "current x 1.5 if KV usage < 80%",
			Why:      "When the cache has room, a larger batch raises throughput per GPU at a small TPOT cost.",
			Effects:  []Effect{eff(m.ThroughputRPS, "up", "+10..+30%"), eff(m.TPOT, "up", "+5..+20%"), eff(m.KVCacheUsage, "up", "+10..+30%")},
			Risk:     "KV pressure and preemptions if the cache fills.",
			Rollback: "Restore max_num_seqs."},
		{ID: "shed_load", Title: "Rate-limit or shed low-priority traffic", Knob: "",
			Why:      "Admission control keeps latency bounded for the traffic that stays.",
			Effects:  []Effect{eff(m.QueueDepth, "down", "-50..-100%"), eff(m.ErrorRate, "up", "+shed share")},
			Risk:     "Rejected requests are user-visible.",
			Rollback: "Remove the limit."},
		{ID: "raise_max_num_batched_tokens", Title: "Raise the per-step token budget", Knob: "max_num_batched_tokens", Proposed: "current x 2",
			Why:      "A larger budget admits waiting prefills sooner.",
			Effects:  []Effect{eff(m.QueueTime, "down", "-10..-40%"), eff(m.TPOT, "up", "+5..+15%")},
			Risk:     "Longer steps raise inter-token latency for running sequences.",
			Rollback: "Restore max_num_batched_tokens."},
	},
	m.CauseGPUUnderutilized: {
		{ID: "raise_max_num_seqs", Title: "Allow larger batches", Knob: "max_num_seqs", Proposed: "current x 2",
			Why:      "Decode is cheap per extra sequence until the memory-bandwidth knee; small batches waste the GPU.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+10..+30 pts"), eff(m.ThroughputRPS, "up", "+20..+80%"), eff(m.TPOT, "up", "+0..+15%")},
			Risk:     "More KV usage; preemptions if the cache is small.",
			Rollback: "Restore max_num_seqs."},
		{ID: "reduce_replicas", Title: "Consolidate onto fewer replicas", Knob: "replicas", Proposed: "-1",
			Why:      "The same traffic on fewer engines forms larger batches and frees GPUs.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+10..+40 pts"), eff(m.TPOT, "up", "+0..+20%")},
			Risk:     "Less headroom for a surge.",
			Rollback: "Scale back up."},
		{ID: "lower_tensor_parallel_size", Title: "Use less tensor parallelism", Knob: "tensor_parallel_size", Proposed: "half the current size, if the model fits",
			Why:      "Small batches split over many GPUs spend their time in communication, not compute.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+10..+30 pts"), eff(m.TPOT, "up", "+0..+30%")},
			Risk:     "The model or its KV cache may not fit; higher per-token latency.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "check_load_balancing", Title: "Check the load balancer spreads traffic evenly", Knob: "",
			Why:      "One idle replica beside busy ones means routing, not capacity.",
			Effects:  []Effect{eff(m.SMUtil, "up", "evens out")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
	},
	m.CauseSpecDecodeDegradation: {
		{ID: "lower_num_speculative_tokens", Title: "Propose fewer draft tokens", Knob: "num_speculative_tokens", Proposed: "1-2",
			Why:      "With most drafts rejected, each extra draft token is wasted work.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.RejectionRate, "down", "-10..-30 pts")},
			Risk:     "Less speed-up once the draft recovers.",
			Rollback: "Restore num_speculative_tokens."},
		{ID: "disable_speculative_decoding", Title: "Turn speculative decoding off", Knob: "num_speculative_tokens", Proposed: "0",
			Why:      "A drifted draft is slower than no draft at all.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-40%"), eff(m.GenerationTPS, "up", "+10..+40%")},
			Risk:     "Loses the speed-up on traffic where the draft still works.",
			Rollback: "Re-enable the draft model."},
		{ID: "realign_draft_model", Title: "Redeploy a draft model that matches the target", Knob: "",
			Why:      "Rejections rise when the target was updated or the traffic drifted away from the draft's training data.",
			Effects:  []Effect{eff(m.RejectionRate, "down", "back to baseline"), eff(m.TPOT, "down", "back to baseline")},
			Risk:     "A new draft needs validation.",
			Rollback: "Redeploy the previous draft."},
	},
	m.CauseMemoryBandwidthBound: {
		{ID: "lower_max_num_seqs", Title: "Cap the batch below the bandwidth knee", Knob: "max_num_seqs", Proposed: "current x 0.75",
			Why:      "Past the bandwidth knee, a larger batch adds KV reads per step and slows every token.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.ThroughputRPS, "down", "0..-10%")},
			Risk:     "Queueing rises at peak load.",
			Rollback: "Restore max_num_seqs."},
		{ID: "quantize_kv_cache", Title: "Quantise the KV cache to FP8 (--kv-cache-dtype fp8)", Knob: "",
			Why:      "Half the bytes per KV read halves the bandwidth attention needs.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.DRAMActive, "down", "-10..-30%")},
			Risk:     "A small accuracy loss on some models.",
			Rollback: "Restore the previous kv_cache_dtype."},
		{ID: "raise_tensor_parallel_size", Title: "Spread the model over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "More GPUs give more aggregate HBM bandwidth per token.",
			Effects:  []Effect{eff(m.TPOT, "down", "-20..-40%"), eff(m.ThroughputRPS, "up", "+0..+40%")},
			Risk:     "GPU cost and communication overhead.",
			Rollback: "Restore tensor_parallel_size."},
		{ID: "check_memory_health", Title: "Check memory clocks, ECC and row remapping", Knob: "",
			Why:      "A dropped memory clock or a degraded HBM stack lowers bandwidth without any load change.",
			Effects:  []Effect{eff(m.MemClock, "up", "back to baseline")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
	},
	m.CauseLongPromptPrefill: {
		{ID: "lower_max_num_batched_tokens", Title: "Chunk prefills smaller", Knob: "max_num_batched_tokens", Proposed: "2048-4096",
			Why:      "Smaller prefill chunks interleave with decode, so long prompts stop stalling running sequences.",
			Effects:  []Effect{eff(m.TPOTP99, "down", "-20..-50%"), eff(m.TTFT, "up", "+0..+20%")},
			Risk:     "Long prompts take a little longer to first token.",
			Rollback: "Restore max_num_batched_tokens."},
		{ID: "enable_prefix_caching", Title: "Cache shared prompt prefixes", Knob: "enable_prefix_caching", Proposed: "true",
			Why:      "Long prompts often share system prompts or documents; cached prefixes skip prefill.",
			Effects:  []Effect{eff(m.PrefillTime, "down", "-10..-60%"), eff(m.TTFT, "down", "-10..-60%")},
			Risk:     "Little; some memory for cached blocks.",
			Rollback: "Disable prefix caching."},
		{ID: "lower_max_model_len", Title: "Cap the prompt length", Knob: "max_model_len", Proposed: "the p99 of expected traffic",
			Why:      "A few very long prompts can dominate prefill time.",
			Effects:  []Effect{eff(m.PrefillTime, "down", "-10..-40%"), eff(m.ErrorRate, "up", "+rejected share")},
			Risk:     "Over-long requests are rejected.",
			Rollback: "Restore max_model_len."},
		{ID: "route_long_prompts", Title: "Route long prompts to a dedicated pool", Knob: "replicas",
			Why:      "Separating long-context traffic keeps short requests fast.",
			Effects:  []Effect{eff(m.TTFT, "down", "-20..-60% for short prompts")},
			Risk:     "More operational complexity.",
			Rollback: "Remove the routing rule."},
	},
	m.CausePrefixCacheMiss: {
		{ID: "enable_prefix_caching", Title: "Make sure prefix caching is on", Knob: "enable_prefix_caching", Proposed: "true",
			Why:      "A deploy that dropped the flag looks exactly like a traffic change.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "back to baseline"), eff(m.TTFT, "down", "-20..-60%")},
			Risk:     "None if it was on before.",
			Rollback: "Restore the previous flag."},
		{ID: "cache_aware_routing", Title: "Route by prefix (session or prompt-hash affinity)", Knob: "replicas",
			Why:      "Requests sharing a prefix only hit when they reach the replica that holds it.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "+10..+40 pts"), eff(m.TTFT, "down", "-20..-50%")},
			Risk:     "Uneven load across replicas.",
			Rollback: "Return to round-robin routing."},
		{ID: "stabilise_prompt_prefix", Title: "Keep the shared prompt prefix byte-identical", Knob: "",
			Why:      "A timestamp or per-user field early in the system prompt breaks every cached prefix.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "back to baseline"), eff(m.PromptTPS, "down", "-20..-60% computed")},
			Risk:     "Needs a client or template change.",
			Rollback: "Revert the template change."},
	},
	m.CauseGPUThrottling: {
		{ID: "check_cooling", Title: "Check cooling and airflow", Knob: "",
			Why:      "Thermal throttling cuts clocks when the GPU reaches its slowdown temperature.",
			Effects:  []Effect{eff(m.SMClock, "up", "back to baseline"), eff(m.TPOT, "down", "back to baseline")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
		{ID: "check_power_cap", Title: "Check the power limit and clock policy", Knob: "",
			Why:      "A lowered power cap or an application-clock setting throttles without heat.",
			Effects:  []Effect{eff(m.SMClock, "up", "back to baseline"), eff(m.Power, "up", "to the default cap")},
			Risk:     "Higher power draw.",
			Rollback: "Restore the previous cap."},
		{ID: "drain_node", Title: "Drain the affected node", Knob: "replicas", Proposed: "move the replica",
			Why:      "One throttled GPU stalls its whole tensor-parallel group.",
			Effects:  []Effect{eff(m.TPOT, "down", "back to baseline"), eff(m.ThroughputRPS, "up", "back to baseline")},
			Risk:     "Capacity drops while the replica moves.",
			Rollback: "Uncordon the node."},
	},
	m.CauseTransportLatency: {
		{ID: "check_gateway", Title: "Check gateway and load-balancer health", Knob: "",
			Why:      "The gateway sees slower requests while the engine does not.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "back to engine E2E + baseline gap")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
		{ID: "check_network_path", Title: "Check the network path and TLS termination", Knob: "",
			Why:      "Packet loss, a saturated link or a slow TLS handshake adds time outside the engine.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "-gap")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
		{ID: "check_streaming_buffering", Title: "Disable response buffering for streamed responses", Knob: "",
			Why:      "A proxy that buffers server-sent events delays every token to the client.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "-10..-50%")},
			Risk:     "Proxy configuration change.",
			Rollback: "Restore the proxy configuration."},
	},
	m.CauseEngineErrors: {
		{ID: "read_engine_logs", Title: "Read the engine logs for OOM, CUDA or scheduler errors", Knob: "",
			Why:      "The error class decides the fix: OOM, a crashed worker or client aborts.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "after the fix")},
			Risk:     "None; read-only.",
			Rollback: "Nothing to undo."},
		{ID: "lower_gpu_memory_utilization", Title: "Leave more memory headroom", Knob: "gpu_memory_utilization", Proposed: "current - 0.05",
			Why:      "Out-of-memory errors under activation spikes need headroom outside the KV cache.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "-50..-100% if OOM"), eff(m.KVCacheUsage, "up", "+5..+10 pts")},
			Risk:     "A smaller KV cache and more preemption.",
			Rollback: "Restore gpu_memory_utilization."},
		{ID: "rollback_deploy", Title: "Roll back the last deploy", Knob: "",
			Why:      "A new engine version, model or config is the most common source of new errors.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "back to baseline")},
			Risk:     "Loses the deploy's changes.",
			Rollback: "Redeploy."},
		{ID: "restart_replica", Title: "Restart the failing replica", Knob: "replicas",
			Why:      "A wedged worker keeps failing requests until restarted.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "back to baseline"), eff(m.ThroughputRPS, "down", "briefly")},
			Risk:     "In-flight requests are lost.",
			Rollback: "Nothing to undo."},
	},
	m.CauseHostOverhead: {
		{ID: "enable_cuda_graphs", Title: "Make sure CUDA graphs are on (no enforce-eager)", Knob: "",
			Why:      "Without CUDA graphs every decode step pays kernel-launch overhead on the CPU.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-40%"), eff(m.SMUtil, "up", "+10..+30 pts")},
			Risk:     "Longer start-up and some memory for graphs.",
			Rollback: "Restore the previous flag."},
		{ID: "check_cpu_allocation", Title: "Give the engine more CPU and pin it", Knob: "",
			Why:      "Tokenisation, scheduling and detokenisation run on the CPU; a throttled pod starves the GPU.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.SMUtil, "up", "+5..+20 pts")},
			Risk:     "Cost of the extra CPU.",
			Rollback: "Restore the previous CPU request."},
		{ID: "raise_max_num_batched_tokens", Title: "Do more work per scheduler step", Knob: "max_num_batched_tokens", Proposed: "current x 2",
			Why:      "Fewer, larger steps amortise per-step host overhead.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+5..+15 pts"), eff(m.TPOT, "up", "+0..+10%")},
			Risk:     "Longer steps for running sequences.",
			Rollback: "Restore max_num_batched_tokens."},
	},
	m.CauseUnknown: {
		{ID: "capture_profile", Title: "Capture a profiler trace", Knob: "",
			Why:      "The metrics move but match no known pattern; kernel-level data shows where the time goes.",
			Effects:  []Effect{},
			Risk:     "Some overhead while profiling.",
			Rollback: "Stop the profiler."},
		{ID: "compare_recent_changes", Title: "Compare with recent deploys and config changes", Knob: "",
			Why:      "Anomalies without a pattern often line up with a change.",
			Effects:  []Effect{},
			Risk:     "None; read-only.",
			Rollback: "Nothing to undo."},
		{ID: "label_case", Title: "Label this incident once understood", Knob: "",
			Why:      "A labelled case lets the next diagnosis match it.",
			Effects:  []Effect{},
			Risk:     "None.",
			Rollback: "Edit the label."},
	},
	m.CauseNone: {
		{ID: "close_false_alarm", Title: "Close as a false alarm", Knob: "",
			Why:      "Every metric is within its own baseline.",
			Effects:  []Effect{},
			Risk:     "A slow drift below the 3-sigma bar can hide here; recheck if it repeats.",
			Rollback: "Reopen the incident."},
		{ID: "tune_alert", Title: "Move the alert to a dynamic threshold", Knob: "",
			Why:      "Fixed thresholds fire on normal seasonal peaks.",
			Effects:  []Effect{},
			Risk:     "A looser alert can fire later on a real incident.",
			Rollback: "Restore the previous alert."},
		{ID: "check_client_side", Title: "Check the client side if users still complain", Knob: "",
			Why:      "The service looks healthy from here; the problem may be upstream of the gateway.",
			Effects:  []Effect{},
			Risk:     "None; read-only.",
			Rollback: "Nothing to undo."},
	},
}

// actionsFor returns a copy of the actions for a cause.
func actionsFor(cause string) []Action {
	src := causeActions[cause]
	out := make([]Action, len(src))
	copy(out, src)
	return out
}
