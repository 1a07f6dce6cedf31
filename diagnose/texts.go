package diagnose

import (
	"fmt"

	m "github.com/casebook/casebook/metrics"
)

// This file holds every title and sentence the package shows, in one table
// per kind, so that a translation can be added by swapping the tables.

// causeTitle names a root cause: the taxonomy's title (metrics.Causes is
// the one table of cause names), or the id of a cause the taxonomy does
// not know.
func causeTitle(id string) string { return m.CauseTitle(id) }

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
	remarkPowerPerToken = "power_per_token"
	remarkFrontend      = "frontend"
	remarkCachedContext = "cached_context"
	remarkAdmittedLoad  = "admitted_load"
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
	remarkPowerPerToken: "The boards draw more power for each generated token: the GPU works longer per step.",
	remarkFrontend:      "Time to first token grew outside the engine's queue and prefill: requests wait in the API server (tokenising, input processing).",
	remarkCachedContext: "Prompts grew, but the growth was served from the prefix cache: no more prefill, longer contexts for every decode step to read.",
	remarkAdmittedLoad:  "The extra load was admitted into the running batch: steps slow faster than the load grows, the sign of a saturated engine.",
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
	// noteAbsent: a metric the rules wanted that the scope's source cannot
	// provide, and why (the snapshot's Absent).
	noteAbsent = "Could not check %s: %s; the rules that need it stood down."
	// noteNoProfiling: the named cause lives on the GPU and the DCGM
	// profiling fields were not collected.
	noteNoProfiling = "The DCGM profiling fields (DCGM_FI_PROF_DRAM_ACTIVE, _SM_ACTIVE, _PIPE_TENSOR_ACTIVE) are not collected, as in dcgm-exporter's default counters: GPU activity is read from GPU_UTIL, the share of time any kernel runs, which stays near 100% whenever the engine is busy, so the cause is inferred from step time, batch size, token rate and power, and the confidence is lowered."
)

// noteOverturned explains a diagnosis that similar cases changed: the
// rules' cause, the new one, how many neighbours named it, its vote share
// and the rules' confidence.
const noteOverturned = "Similar cases changed the answer from %s to %s: %d of the %d nearest labelled cases had that cause (%.0f%% of the similarity-weighted vote), against the rules' confidence of %.0f%%."

// noteExplained explains a diagnosis where two faults act at once and the
// quieter one is the stronger: both causes, then each one's expression as
// a percentile of its own labelled cases.
const noteExplained = "Two faults act at once: %s and %s. %s shows as strongly as the %.0fth percentile of its labelled cases, %s only as the %.0fth, so %s is named although %s moves more metrics."

// noteShowedFirst explains a diagnosis where two faults act at once and
// the recent minutes show which began first: both causes, then the first
// one twice and the other.
const noteShowedFirst = "Two faults act at once: %s and %s. %s showed first in the minutes before this snapshot and has shown ever since, so %s is named as the primary fault, although %s moves more metrics now."

// noteOrderKept explains similar cases that would have named the fault
// that showed second: their cause, the one kept.
const noteOrderKept = "Similar cases point to %s, but %s showed first in the minutes before this snapshot, so it stays the primary fault."

// noteMildFault explains a mild fault named where the rules saw none: the
// cause and the share of labelled healthy cases whose signs it exceeds.
const noteMildFault = "No metric crossed the anomaly bar on its own, but together the signs of %s exceed those of %.0f%% of the labelled healthy cases."

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
	return evidenceSentence(enEvidence, "en", id, x, d, remarks[remark])
}

// eff builds an Effect.
func eff(metric, dir, size string) Effect { return Effect{Metric: metric, Direction: dir, Size: size} }

// causeActions are the remedies per root cause, most effective first. An
// action with a knob carries a rule Proposed that the change package turns
// into a concrete value ("0.95", "current x 2", "+1", "double"); its
// Effects are the metrics the simulator's physics moves when the action is
// applied to the fault (telemetry/sim's action test checks every one).
// Actions without a knob are operational steps; those the simulator can
// model (moving a replica, routing around it or the gateway) are checked
// the same way.
var causeActions = map[string][]Action{
	m.CauseKVCacheEviction: {
		{ID: "raise_gpu_memory_utilization", Title: "Give the KV cache more memory", Knob: "gpu_memory_utilization", Proposed: "0.95",
			Why:      "A larger share of GPU memory for the engine means more KV blocks: more sequences fit before the scheduler preempts, so capacity and TTFT recover.",
			Effects:  []Effect{eff(m.TTFT, "down", "-20..-50%"), eff(m.QueueTime, "down", "-20..-50%"), eff(m.ThroughputRPS, "up", "+20..+50% while saturated"), eff(m.GPUMemUsedFrac, "up", "+5 pts")},
			Risk:     "Out-of-memory under activation spikes (long prompts, large batches) when too little headroom is left.",
			Rollback: "Restore the previous gpu_memory_utilization and restart the engine."},
		{ID: "drain_node", Title: "Move the replicas off the node whose GPU memory another process holds", Knob: "",
			Why:      "A co-tenant process on the same GPUs shrinks the KV pool; on a clean node the engine gets its whole share back.",
			Effects:  []Effect{eff(m.PreemptionRate, "down", "-80..-100%"), eff(m.KVCacheUsage, "down", "-50..-95%"), eff(m.TTFT, "down", "-50..-99%")},
			Risk:     "Capacity drops while the replicas restart elsewhere; needs free GPUs.",
			Rollback: "Uncordon the node and let the scheduler place the replicas again."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Each added GPU brings its free memory to the KV pool and splits the per-token KV bytes, so the working set fits again.",
			Effects:  []Effect{eff(m.PreemptionRate, "down", "-50..-100%"), eff(m.KVCacheUsage, "down", "-50..-90%"), eff(m.TTFT, "down", "-50..-99%"), eff(m.KVCacheHitRate, "up", "+10..+40 pts")},
			Risk:     "Twice the GPUs per replica; communication overhead at small batches.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "add_replicas", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
			Why:      "Spreading sequences over more engines divides the KV demand per cache.",
			Effects:  []Effect{eff(m.KVCacheUsage, "down", "-20..-50%"), eff(m.TTFT, "down", "-20..-50%"), eff(m.ThroughputRPS, "up", "+20..+50% while saturated")},
			Risk:     "GPU cost; prefix locality drops unless routing is cache-aware.",
			Rollback: "Scale the replicas back down."},
		{ID: "lower_max_model_len", Title: "Cap the context length", Knob: "max_model_len", Proposed: "the p99 of real prompt+output length",
			Why:      "Very long contexts take many blocks each; a cap stops a few requests from evicting everyone else.",
			Effects:  []Effect{eff(m.KVCacheUsage, "down", "-10..-30%"), eff(m.PreemptionRate, "down", "-30..-70%"), eff(m.ErrorRate, "up", "+0..+1 pt")},
			Risk:     "Requests longer than the cap are rejected.",
			Rollback: "Restore max_model_len."},
	},
	m.CauseQueueBacklog: {
		{ID: "add_replicas", Title: "Add capacity", Knob: "replicas", Proposed: "+1",
			Why:      "Arrivals exceed what the engines can serve; only more capacity drains the queue at this load.",
			Effects:  []Effect{eff(m.QueueTime, "down", "-50..-99%"), eff(m.TTFT, "down", "-50..-99%"), eff(m.GenerationTPS, "up", "+20..+50%")},
			Risk:     "GPU cost; scale-up takes minutes while the queue keeps growing.",
			Rollback: "Scale the replicas back down once the surge ends."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Twice the GPUs per replica doubles its compute and memory bandwidth, so each step is faster and the queue drains.",
			Effects:  []Effect{eff(m.QueueTime, "down", "-50..-99%"), eff(m.TPOT, "down", "-30..-80%"), eff(m.GenerationTPS, "up", "+20..+50%")},
			Risk:     "Twice the GPUs per replica; a restart of every replica.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "raise_max_num_seqs", Title: "Batch more sequences per step", Knob: "max_num_seqs", Proposed: "current x 2",
			Why:      "When the batch limit binds and the cache has room, a larger batch admits waiting requests sooner, at a TPOT cost.",
			Effects:  []Effect{eff(m.QueueTime, "down", "-2..-10%"), eff(m.TPOT, "up", "+50..+100%"), eff(m.KVCacheUsage, "up", "+50..+100%")},
			Risk:     "Every running sequence gets slower; preemptions if the cache fills.",
			Rollback: "Restore max_num_seqs."},
		{ID: "shed_load", Title: "Rate-limit or shed low-priority traffic", Knob: "",
			Why:      "Admission control keeps latency bounded for the traffic that stays.",
			Effects:  []Effect{eff(m.QueueDepth, "down", "-50..-100%"), eff(m.ErrorRate, "up", "+shed share")},
			Risk:     "Rejected requests are user-visible.",
			Rollback: "Remove the limit."},
	},
	m.CauseGPUUnderutilized: {
		{ID: "reduce_replicas", Title: "Consolidate onto fewer replicas", Knob: "replicas", Proposed: "-1",
			Why:      "The same traffic on fewer engines forms larger batches and frees GPUs.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+5..+30 pts"), eff(m.DRAMActive, "up", "+20..+50%"), eff(m.Power, "up", "+5..+20%")},
			Risk:     "Less headroom for a surge.",
			Rollback: "Scale back up."},
		{ID: "lower_tensor_parallel_size", Title: "Use less tensor parallelism", Knob: "tensor_parallel_size", Proposed: "half",
			Why:      "Small batches split over many GPUs leave each GPU idle; half the GPUs do the same work and the rest are free.",
			Effects:  []Effect{eff(m.SMUtil, "up", "+5..+30 pts"), eff(m.DRAMActive, "up", "+20..+60%"), eff(m.TPOT, "up", "+20..+60%")},
			Risk:     "The model or its KV cache may not fit; higher per-token latency.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "raise_num_speculative_tokens", Title: "Speculate deeper with the idle compute", Knob: "num_speculative_tokens", Proposed: "current + 2",
			Why:      "With the GPU idle between small steps, verifying more draft tokens per step costs little and yields more tokens per step.",
			Effects:  []Effect{eff(m.TPOT, "down", "-5..-20%"), eff(m.RejectionRate, "up", "+5..+15 pts")},
			Risk:     "Wasted work if the draft's acceptance drops; more KV per sequence.",
			Rollback: "Restore num_speculative_tokens."},
		{ID: "check_load_balancing", Title: "Check the load balancer spreads traffic evenly", Knob: "",
			Why:      "One idle replica beside busy ones means routing, not capacity.",
			Effects:  []Effect{eff(m.SMUtil, "up", "evens out")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
	},
	m.CauseSpecDecodeDegradation: {
		{ID: "lower_num_speculative_tokens", Title: "Propose fewer draft tokens", Knob: "num_speculative_tokens", Proposed: "1",
			Why:      "With most drafts rejected, each extra draft position is verified for nothing; one position keeps most of the remaining gain.",
			Effects:  []Effect{eff(m.RejectionRate, "down", "-10..-30%"), eff(m.SMUtil, "down", "-3..-10 pts"), eff(m.Power, "down", "-3..-10%")},
			Risk:     "Less speed-up once the draft recovers.",
			Rollback: "Restore num_speculative_tokens."},
		{ID: "add_replicas", Title: "Add a replica while the draft is fixed", Knob: "replicas", Proposed: "+1",
			Why:      "Fewer tokens per step make every replica slower; a smaller batch per replica gives part of it back.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.QueueTime, "down", "-20..-40%"), eff(m.TTFT, "down", "-5..-20%")},
			Risk:     "GPU cost.",
			Rollback: "Scale the replicas back down."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "More memory bandwidth per replica shortens every step, rejected drafts included.",
			Effects:  []Effect{eff(m.TPOT, "down", "-30..-60%"), eff(m.TTFT, "down", "-20..-50%")},
			Risk:     "Twice the GPUs per replica.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "realign_draft_model", Title: "Redeploy a draft model that matches the target", Knob: "",
			Why:      "Rejections rise when the target was updated or the traffic drifted away from the draft's training data.",
			Effects:  []Effect{eff(m.RejectionRate, "down", "back to baseline"), eff(m.TPOT, "down", "back to baseline")},
			Risk:     "A new draft needs validation.",
			Rollback: "Redeploy the previous draft."},
	},
	m.CauseMemoryBandwidthBound: {
		{ID: "drain_node", Title: "Move the replicas off the node with the bandwidth-hungry co-tenant", Knob: "",
			Why:      "Another process streaming through the same HBM takes bandwidth every decode step needs.",
			Effects:  []Effect{eff(m.TPOT, "down", "-30..-60%"), eff(m.DRAMActive, "down", "-20..-50%"), eff(m.TTFT, "down", "-10..-40%")},
			Risk:     "Capacity drops while the replicas restart elsewhere; needs free GPUs.",
			Rollback: "Uncordon the node."},
		{ID: "raise_tensor_parallel_size", Title: "Spread the model over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "More GPUs give more aggregate HBM bandwidth per token.",
			Effects:  []Effect{eff(m.TPOT, "down", "-20..-60%"), eff(m.TTFT, "down", "-20..-50%"), eff(m.DRAMActive, "down", "-5..-20%")},
			Risk:     "GPU cost and communication overhead.",
			Rollback: "Restore tensor_parallel_size."},
		{ID: "add_replicas", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
			Why:      "A smaller batch per replica reads less KV per step, below the bandwidth knee.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.DRAMActive, "down", "-5..-20%"), eff(m.TTFT, "down", "-5..-20%")},
			Risk:     "GPU cost.",
			Rollback: "Scale the replicas back down."},
		{ID: "quantize_kv_cache", Title: "Quantise the KV cache to FP8 (--kv-cache-dtype fp8)", Knob: "",
			Why:      "Half the bytes per KV read halves the bandwidth attention needs.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.DRAMActive, "down", "-10..-30%")},
			Risk:     "A small accuracy loss on some models.",
			Rollback: "Restore the previous kv_cache_dtype."},
		{ID: "check_memory_health", Title: "Check memory clocks, ECC and row remapping", Knob: "",
			Why:      "A dropped memory clock or a degraded HBM stack lowers bandwidth without any load change.",
			Effects:  []Effect{eff(m.MemClock, "up", "back to baseline")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
	},
	m.CauseLongPromptPrefill: {
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Prefill is compute-bound; twice the GPUs per replica halves each prompt's prefill time.",
			Effects:  []Effect{eff(m.TTFT, "down", "-50..-99%"), eff(m.PrefillTime, "down", "-30..-60%"), eff(m.TPOT, "down", "-30..-70%")},
			Risk:     "Twice the GPUs per replica.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "add_replicas", Title: "Add prefill capacity", Knob: "replicas", Proposed: "+1",
			Why:      "Longer prompts cost more compute per request; more replicas share it.",
			Effects:  []Effect{eff(m.TTFT, "down", "-30..-80%"), eff(m.QueueTime, "down", "-30..-80%"), eff(m.GenerationTPS, "up", "+20..+50%")},
			Risk:     "GPU cost.",
			Rollback: "Scale the replicas back down."},
		{ID: "lower_max_num_batched_tokens", Title: "Prefill in smaller chunks", Knob: "max_num_batched_tokens", Proposed: "half",
			Why:      "With chunked prefill every engine step carries the running decodes plus prompt chunks up to the token budget; a smaller budget keeps each step, and so each output token, short while long prompts are prefilled.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-50%"), eff(m.TPOTP99, "down", "-10..-60%")},
			Risk:     "Prompts take more steps: TTFT rises, and prefill throughput falls a little.",
			Rollback: "Restore max_num_batched_tokens and restart."},
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
	},
	m.CausePrefixCacheMiss: {
		{ID: "stabilise_prompt_prefix", Title: "Revert the prompt template so the shared prefix is byte-identical again", Knob: "",
			Why:      "A timestamp or per-user field early in the system prompt breaks every cached prefix.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "back to baseline"), eff(m.TTFT, "down", "-20..-60%"), eff(m.PrefillTime, "down", "-10..-40%")},
			Risk:     "Needs a client or template change.",
			Rollback: "Revert the template change."},
		{ID: "enable_prefix_caching", Title: "Make sure prefix caching is on", Knob: "enable_prefix_caching", Proposed: "true",
			Why:      "A deploy that dropped the flag looks exactly like a traffic change.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "back to baseline"), eff(m.TTFT, "down", "-20..-60%")},
			Risk:     "None if it was on before.",
			Rollback: "Restore the previous flag."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Missed prefixes are prefilled again; twice the compute per replica absorbs the extra prefill.",
			Effects:  []Effect{eff(m.TTFT, "down", "-30..-60%"), eff(m.PrefillTime, "down", "-30..-60%")},
			Risk:     "Twice the GPUs per replica.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "add_replicas", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
			Why:      "The extra prefill work is shared by more engines.",
			Effects:  []Effect{eff(m.TTFT, "down", "-10..-30%"), eff(m.QueueTime, "down", "-20..-50%")},
			Risk:     "GPU cost; prefix locality drops further unless routing is cache-aware.",
			Rollback: "Scale the replicas back down."},
		{ID: "cache_aware_routing", Title: "Route by prefix (session or prompt-hash affinity)", Knob: "",
			Why:      "Requests sharing a prefix only hit when they reach the replica that holds it.",
			Effects:  []Effect{eff(m.KVCacheHitRate, "up", "+10..+40 pts"), eff(m.TTFT, "down", "-20..-50%")},
			Risk:     "Uneven load across replicas.",
			Rollback: "Return to round-robin routing."},
	},
	m.CauseGPUThrottling: {
		{ID: "drain_node", Title: "Drain the throttled node and move its replica to healthy GPUs", Knob: "",
			Why:      "One throttled GPU stalls its whole tensor-parallel group; on healthy GPUs the clocks are back at full speed.",
			Effects:  []Effect{eff(m.SMClock, "up", "back to baseline"), eff(m.TPOT, "down", "-20..-50%"), eff(m.TTFT, "down", "-30..-90%")},
			Risk:     "Capacity drops while the replica moves; needs free GPUs.",
			Rollback: "Uncordon the node."},
		{ID: "stop_routing_to_replica", Title: "Take the throttled replica out of the load balancer", Knob: "",
			Why:      "Requests stop queueing behind the slow replica at once, and the idle GPUs cool down.",
			Effects:  []Effect{eff(m.SMClock, "up", "back to baseline"), eff(m.TTFT, "down", "-30..-70%"), eff(m.QueueTime, "down", "-30..-70%")},
			Risk:     "The other replicas take its share; check they have headroom.",
			Rollback: "Put the replica back into the load balancer."},
		{ID: "add_replicas", Title: "Add a replica on another node", Knob: "replicas", Proposed: "+1",
			Why:      "A replica on healthy GPUs takes part of the load off the throttled one.",
			Effects:  []Effect{eff(m.TPOT, "down", "-20..-50%"), eff(m.TTFT, "down", "-30..-90%")},
			Risk:     "GPU cost; the throttled node still needs fixing.",
			Rollback: "Scale the replicas back down."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Less work per GPU lowers the power each draws, which lifts a power-capped clock.",
			Effects:  []Effect{eff(m.TPOT, "down", "-30..-70%"), eff(m.TTFT, "down", "-50..-90%"), eff(m.SMClock, "up", "+10..+30%")},
			Risk:     "Twice the GPUs per replica.",
			Rollback: "Restore tensor_parallel_size and restart."},
		{ID: "check_cooling", Title: "Check cooling, airflow and the power limit", Knob: "",
			Why:      "Thermal throttling cuts clocks at the slowdown temperature; a lowered power cap throttles without heat.",
			Effects:  []Effect{eff(m.SMClock, "up", "back to baseline"), eff(m.TPOT, "down", "back to baseline")},
			Risk:     "None; read-only check.",
			Rollback: "Nothing to undo."},
	},
	m.CauseTransportLatency: {
		{ID: "failover_gateway", Title: "Send the model's traffic through the standby gateway", Knob: "",
			Why:      "The time is spent on the primary gateway's hop; the standby has its own network path.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "back to engine E2E + baseline gap")},
			Risk:     "The standby takes the full load; check its capacity.",
			Rollback: "Switch the traffic back to the primary gateway."},
		{ID: "bypass_gateway_hop", Title: "Route clients straight to the engine service", Knob: "",
			Why:      "Skipping the slow hop removes its delay; the engine is not the problem.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "back to engine E2E")},
			Risk:     "Loses what the gateway does (auth, rate limits, metrics) for that path.",
			Rollback: "Restore the route through the gateway."},
		{ID: "scale_gateway", Title: "Add gateway replicas", Knob: "",
			Why:      "A congested hop queues requests; more gateway capacity shortens the queue.",
			Effects:  []Effect{eff(m.GatewayE2E, "down", "-20..-50%")},
			Risk:     "Little; cost of the extra gateway pods.",
			Rollback: "Scale the gateway back down."},
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
		{ID: "stop_routing_to_replica", Title: "Take the failing replica out of the load balancer", Knob: "",
			Why:      "Requests stop reaching the replica that fails them; the healthy replicas take its share.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "-80..-100%"), eff(m.TTFT, "up", "+20..+200% on the others")},
			Risk:     "The remaining replicas run hotter; check their headroom.",
			Rollback: "Put the replica back into the load balancer."},
		{ID: "drain_node", Title: "Move the failing replica to other GPUs", Knob: "",
			Why:      "Errors tied to one GPU or its driver (XID errors) stay with the node, not the replica.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "-80..-100%")},
			Risk:     "In-flight requests are lost; needs free GPUs.",
			Rollback: "Uncordon the node."},
		{ID: "add_replicas", Title: "Add a healthy replica", Knob: "replicas", Proposed: "+1",
			Why:      "A healthy replica takes a share of the traffic, so fewer requests reach the failing one.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "-20..-40%"), eff(m.TTFT, "down", "-5..-20%")},
			Risk:     "GPU cost; the failing replica still needs fixing.",
			Rollback: "Scale the replicas back down."},
		{ID: "read_engine_logs", Title: "Read the engine logs for OOM, CUDA or scheduler errors", Knob: "",
			Why:      "The error class decides the fix: OOM, a crashed worker or client aborts.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "after the fix")},
			Risk:     "None; read-only.",
			Rollback: "Nothing to undo."},
		{ID: "rollback_deploy", Title: "Roll back the last deploy", Knob: "",
			Why:      "A new engine version, model or config is the most common source of new errors.",
			Effects:  []Effect{eff(m.ErrorRate, "down", "back to baseline")},
			Risk:     "Loses the deploy's changes.",
			Rollback: "Redeploy."},
	},
	m.CauseHostOverhead: {
		{ID: "raise_num_speculative_tokens", Title: "Produce more tokens per scheduler step", Knob: "num_speculative_tokens", Proposed: "current + 2",
			Why:      "The host's cost is per step; more accepted draft tokens per step spread it over more tokens.",
			Effects:  []Effect{eff(m.TPOT, "down", "-5..-20%")},
			Risk:     "Wasted work if the draft's acceptance drops.",
			Rollback: "Restore num_speculative_tokens."},
		{ID: "add_replicas", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
			Why:      "Each replica has its own host process; more replicas share the per-step CPU work.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-20%"), eff(m.TTFT, "down", "-5..-20%")},
			Risk:     "GPU cost for a CPU problem; fix the host too.",
			Rollback: "Scale the replicas back down."},
		{ID: "raise_tensor_parallel_size", Title: "Spread each replica over more GPUs", Knob: "tensor_parallel_size", Proposed: "double",
			Why:      "Shorter GPU steps leave more of each step to the host, but the batch per replica drains faster.",
			Effects:  []Effect{eff(m.TPOT, "down", "-10..-30%"), eff(m.TTFT, "down", "-10..-30%")},
			Risk:     "Twice the GPUs per replica for a CPU problem.",
			Rollback: "Restore tensor_parallel_size and restart."},
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

// ActionsFor returns a copy of the built-in actions for a root cause, most
// effective first; nil for an id the taxonomy does not know.
func ActionsFor(cause string) []Action {
	if _, ok := causeActions[cause]; !ok {
		return nil
	}
	return actionsFor(cause)
}
