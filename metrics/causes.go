package metrics

// Root-cause ids of the taxonomy. They are stable: stored diagnoses, labels
// and outside tools refer to them.
const (
	CauseKVCacheEviction       = "kv_cache_eviction"
	CauseQueueBacklog          = "queue_backlog"
	CauseGPUUnderutilized      = "gpu_underutilized"
	CauseSpecDecodeDegradation = "spec_decode_degradation"
	CauseMemoryBandwidthBound  = "memory_bandwidth_bound"
	CauseLongPromptPrefill     = "long_prompt_prefill"
	CausePrefixCacheMiss       = "prefix_cache_miss"
	CauseGPUThrottling         = "gpu_throttling"
	CauseTransportLatency      = "transport_latency"
	CauseEngineErrors          = "engine_errors"
	CauseHostOverhead          = "host_overhead"
	CauseUnknown               = "unknown"
	CauseNone                  = "none"
)

// Cause is one taxonomy entry.
type Cause struct {
	ID        string
	Title     string
	What      string // what happened
	Signature string // how it typically shows in the metrics
}

// Causes is the built-in taxonomy in display order. Engineers can add causes
// of their own in the archive; those live in the store, not here.
var Causes = []Cause{
	{CauseKVCacheEviction, "KV-cache eviction storm", "Contexts are too diverse or the KV cache is too small; sequences are evicted and recomputed.", "prefix hit rate down, KV usage near 1, preemptions up, TTFT >> TPOT"},
	{CauseQueueBacklog, "Queue backlog", "Arrivals exceed capacity and the engine queue builds.", "queue depth and queue time up, throughput flat at its ceiling, SM busy"},
	{CauseGPUUnderutilized, "GPU underutilised", "Batches are too small and GPU compute is wasted.", "SM utilisation low while requests flow"},
	{CauseSpecDecodeDegradation, "Speculative decoding degraded", "The draft model drifted from the target model; most drafts are rejected.", "rejection rate up, TPOT up"},
	{CauseMemoryBandwidthBound, "Memory-bandwidth bound", "HBM bandwidth is saturated or degraded, so every decode step is slower.", "DRAM activity high or bandwidth drop, TPOT up, then queue, then throughput down"},
	{CauseLongPromptPrefill, "Long-prompt prefill surge", "Prompt lengths surged; prefill dominates time to first token.", "mean prompt tokens up, prefill and TTFT up, TPOT normal"},
	{CausePrefixCacheMiss, "Prefix-cache misses", "Shared-prefix traffic changed and the prefix cache stopped hitting.", "prefix hit rate down, prompt tokens/s up, TTFT up, KV not full"},
	{CauseGPUThrottling, "GPU throttling", "Thermal or power limits cut the clocks.", "SM clock down, temperature or power at the limit, all latencies up"},
	{CauseTransportLatency, "Transport latency", "The network, gateway or streaming path is slow, not the engine.", "gateway E2E up while engine E2E normal"},
	{CauseEngineErrors, "Engine errors", "The engine is failing requests: OOM, crashes, aborts.", "error rate up"},
	{CauseHostOverhead, "Host overhead", "A CPU-side bottleneck: tokenizer, scheduler or kernel-launch overhead.", "SM utilisation low with latency up and batch not small"},
	{CauseUnknown, "Unknown anomaly", "Metrics are anomalous but match no known pattern.", "—"},
	{CauseNone, "No anomaly", "Nothing is anomalous: a false alarm.", "every metric within its baseline"},
}

// LookupCause returns the built-in taxonomy entry for id.
func LookupCause(id string) (Cause, bool) {
	for _, c := range Causes {
		if c.ID == id {
			return c, true
		}
	}
	return Cause{}, false
}

// CauseTitle is the title of a taxonomy cause, or the id itself for a
// cause the taxonomy does not know (an engineer's, kept in the archive).
func CauseTitle(id string) string {
	if c, ok := LookupCause(id); ok {
		return c.Title
	}
	return id
}

// FaultCauses are the causes a simulator can inject: every cause except
// unknown and none.
func FaultCauses() []string {
	var out []string
	for _, c := range Causes {
		if c.ID != CauseUnknown && c.ID != CauseNone {
			out = append(out, c.ID)
		}
	}
	return out
}
