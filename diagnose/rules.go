package diagnose

import (
	"math"

	m "github.com/casebook/casebook/metrics"
)

// Rules returns the built-in rule table: one rule per root cause of the
// taxonomy except unknown and none, which the engine decides itself.
//
// Every score is a weighted sum of signal strengths in 0-1 (weights add up
// to about 1; the result is clamped to 0-1), opened by a gate: the
// signature's defining signal, without which the rule stays silent. Signals mix
// absolute physics (knees, ratios, shares) with deviation from the scope's
// own baseline, because absolute thresholds do not transfer between models
// and GPUs. The seed thresholds of the reference rule engine appear as
// weak absolute terms.
func Rules() []Rule {
	return []Rule{
		ruleFunc{m.CauseKVCacheEviction, scoreEviction, []string{m.KVCacheUsage, m.PreemptionRate, m.KVCacheHitRate, m.TTFT, m.TPOT, m.PrefillTime}},
		ruleFunc{m.CauseQueueBacklog, scoreQueueBacklog, []string{m.QueueDepth, m.QueueTime, m.E2E, m.ArrivalRPS, m.ThroughputRPS, m.RunningSeqs, m.SMUtil}},
		ruleFunc{m.CauseGPUUnderutilized, scoreUnderutilized, []string{m.SMUtil, m.ThroughputRPS, m.RunningSeqs, m.TPOT}},
		ruleFunc{m.CauseSpecDecodeDegradation, scoreSpecDecode, []string{m.RejectionRate, m.TPOT, m.GenerationTPS}},
		ruleFunc{m.CauseMemoryBandwidthBound, scoreMemoryBandwidth, []string{m.DRAMActive, m.MemClock, m.TPOT, m.DecodeTime}},
		ruleFunc{m.CauseLongPromptPrefill, scoreLongPrompt, []string{m.MeanPromptTokens, m.PrefillTime, m.TTFT, m.PromptTPS}},
		ruleFunc{m.CausePrefixCacheMiss, scorePrefixMiss, []string{m.KVCacheHitRate, m.KVCacheUsage, m.TTFT, m.PrefillTime}},
		ruleFunc{m.CauseGPUThrottling, scoreThrottling, []string{m.SMClock, m.GPUTemp, m.Power, m.TPOT}},
		ruleFunc{m.CauseTransportLatency, scoreTransport, []string{m.GatewayE2E, m.E2E}},
		ruleFunc{m.CauseEngineErrors, scoreEngineErrors, []string{m.ErrorRate}},
		ruleFunc{m.CauseHostOverhead, scoreHostOverhead, []string{m.TPOT, m.DecodeTime, m.SMUtil, m.DRAMActive, m.RunningSeqs, m.SMClock, m.TTFT}},
	}
}

// bothDown is the strength of a downward move of a metric whose bad
// direction is both ways (SM activity, batch size).
func (r *reader) bothDown(id string) float64 { return ramp(-r.z(id), 2, 6) }

// bothUp is the strength of an upward move of a two-sided metric.
func (r *reader) bothUp(id string) float64 { return ramp(r.z(id), 2, 6) }

// batchSmall is how clearly the running batch shrank against its baseline.
func (r *reader) batchSmall() float64 {
	if !r.has(m.RunningSeqs) {
		return 0
	}
	// A relative drop only means something once the batch is big enough
	// for count noise not to dominate (2 -> 0 sequences is chance).
	base, _ := r.mean(m.RunningSeqs)
	return maxOf(r.bothDown(m.RunningSeqs), ramp(1-r.rel(m.RunningSeqs), 0.25, 0.6)*ramp(base, 4, 16))
}

// beyondBatch is the share of id's rise over its baseline (in log) that
// the running batch's growth leaves unexplained: 1 when the batch did not
// clearly grow, 0 when it grew at least as much as id did. A bigger batch
// does more GPU work each step whatever made the steps slower, so more
// activity per sequence, not per step, is the GPU working harder.
//
// That holds while requests hardly wait: a batch that grew with most of
// the request spent queueing was filled from a backlog (load), and the
// work it brings is the load's, not the host's.
func (r *reader) beyondBatch(id string) float64 {
	x := math.Log(math.Max(r.rel(id), 1e-3))
	b := math.Log(math.Max(r.rel(m.RunningSeqs), 1)) * ramp(r.z(m.RunningSeqs), 2, 4)
	if sh, ok := queueShare(r.in.Snapshot.Current); !ok {
		b = 0
	} else {
		b *= 1 - ramp(sh, 0.2, 0.5)
	}
	if x <= 0 || b <= 0 {
		return 1
	}
	return clamp01((x - b) / x)
}

// gpuWorkPerToken is how clearly the GPU does more work for each generated
// token than at the baseline: board power (above its idle floor, which
// the baseline mean includes, so the ratio understates) rising faster than
// generated tokens/s, at full strength once it is 12% more per token and
// the power rise itself stands out of its noise. Power is in dcgm-exporter's
// default counters, so this holds without the profiling fields.
func (r *reader) gpuWorkPerToken() float64 {
	if !r.has(m.Power) || !r.has(m.GenerationTPS) {
		return 0
	}
	gen := r.rel(m.GenerationTPS)
	if gen <= 0 {
		return 0
	}
	return ramp(r.rel(m.Power)/gen, 1.03, 1.12) * ramp(r.z(m.Power), 1, 3)
}

// kvPressure is how hard the KV cache is pressed: usage inside its
// saturation knee (past ~90% every new sequence forces a preemption), or
// usage rising against its own baseline faster than the load explains
// (prompt length x running batch x lost sharing), at full strength once
// usage doubled beyond the load. Absolute usage does not transfer between
// deployments: a large cache can churn its prefixes well below 90%.
func (r *reader) kvPressure() (float64, bool) {
	kv, ok := r.val(m.KVCacheUsage)
	if !ok {
		return 0, false
	}
	return maxOf(knee(kv, 0.92), r.up(m.KVCacheUsage)*ramp(r.kvExcess(), 1.25, 2)), true
}

// kvExcess is the growth of KV usage over its baseline divided by the
// growth the load explains: prompt length x running batch x lost sharing
// (blocks of a shared prefix are held once; on a miss each sequence holds
// its own, so usage scales with 1 - hit rate). 1 means the load explains
// it all.
func (r *reader) kvExcess() float64 {
	load := r.rel(m.MeanPromptTokens) * r.rel(m.RunningSeqs)
	if hit, ok := r.in.Snapshot.Current.Get(m.KVCacheHitRate); ok {
		if base, ok := r.mean(m.KVCacheHitRate); ok && base < 0.98 {
			load *= math.Max(1-hit, 0.02) / (1 - base)
		}
	}
	return r.rel(m.KVCacheUsage) / math.Max(load, 0.1)
}

// scoreEviction: the KV cache is pressed beyond what the load explains,
// sequences are preempted and recomputed, prefix hits are lost and the
// recompute lands on prefill and TTFT rather than TPOT.
func scoreEviction(r *reader) float64 {
	pressure, _ := r.kvPressure()
	preempt := r.up(m.PreemptionRate)
	hitDown := r.down(m.KVCacheHitRate)
	slow := maxOf(r.up(m.TTFT), r.up(m.PrefillTime))
	seed := 0.0
	if hit, ok := r.val(m.KVCacheHitRate); ok && hit < 0.7 {
		ttft, ok1 := r.val(m.TTFT)
		tpot, ok2 := r.val(m.TPOT)
		if ok1 && ok2 && ttft > 3*tpot && (pressure > 0 || preempt > 0) {
			seed = 1
		}
	}
	if preempt == 0 && !(pressure > 0 && (hitDown > 0 || slow > 0)) {
		return 0
	}
	if r.kvExcess() >= 2.5 {
		// Longer prompts or a bigger batch cannot account for this much
		// KV growth: do not demote the eviction as their symptom.
		r.beyondUpstream = true
	}
	r.noteIf(pressure, m.KVCacheUsage, remarkKVFull)
	r.noteIf(preempt, m.PreemptionRate, remarkPreempting)
	r.noteIf(hitDown, m.KVCacheHitRate, remarkHitsLost)
	r.noteIf(r.up(m.PrefillTime), m.PrefillTime, "")
	r.noteIf(r.up(m.TTFT), m.TTFT, "")
	return 0.3*preempt + 0.3*pressure + 0.2*hitDown + 0.2*slow + 0.05*seed
}

// stepsBeyondLoad is how clearly the decode step slowed down more than
// the load can account for. By Little's law the running batch is
// throughput x time in the engine, so a step that got slower for any
// reason grows the batch by itself; the batch that more load brings is
// only what the extra throughput (or arrivals) and longer prompts (more
// KV per sequence) add at the old step time. A decode step's work grows
// at most in proportion to that (weights are read once per step, KV
// reads grow with batch x context), so a step time that rose well past
// the load's growth was slowed by something other than load, and the
// batch that grew with it is a symptom. Full strength once the step rose
// 30% more than the load.
func (r *reader) stepsBeyondLoad() float64 {
	slow := maxOf(r.rel(m.TPOT), r.rel(m.DecodeTime))
	load := maxOf(1, r.rel(m.ThroughputRPS), r.rel(m.ArrivalRPS)) * maxOf(1, r.rel(m.MeanPromptTokens))
	if slow <= 1 {
		return 0
	}
	return ramp(math.Log(slow/load), math.Log(1.1), math.Log(1.3))
}

// slowerSteps is how clearly the time per output token rose: 0 below
// lo times its baseline, 1 at hi times and a clear z.
func (r *reader) slowerSteps(lo, hi float64) float64 {
	return ramp(r.rel(m.TPOT), lo, hi) * ramp(r.z(m.TPOT), 2, 4)
}

// arrivalsMetric is where arrivals are read: at the gateway, or without
// it, as served throughput.
func (r *reader) arrivalsMetric() string {
	if r.has(m.ArrivalRPS) {
		return m.ArrivalRPS
	}
	return m.ThroughputRPS
}

// moreArrivals is how clearly more requests arrive than at the baseline:
// at the gateway, or without it, served throughput rising (a backlog from
// load lifts throughput to its ceiling first).
func (r *reader) moreArrivals() float64 {
	if r.has(m.ArrivalRPS) {
		return maxOf(ramp(r.rel(m.ArrivalRPS), 1.05, 1.25), r.up(m.ArrivalRPS))
	}
	return maxOf(ramp(r.rel(m.ThroughputRPS), 1.05, 1.25), r.up(m.ThroughputRPS))
}

// queueShare is the share of engine E2E a request spends waiting.
func queueShare(v m.Values) (float64, bool) {
	q, ok1 := v.Get(m.QueueTime)
	e, ok2 := v.Get(m.E2E)
	if !ok1 || !ok2 || e <= 0 {
		return 0, false
	}
	return math.Min(q/e, 1), true
}

// scoreQueueBacklog: arrivals beyond capacity. The queue grows while the
// GPU sits at its saturation knee and throughput holds at its ceiling
// instead of falling (a falling throughput means capacity dropped, which
// is some other cause).
func scoreQueueBacklog(r *reader) float64 {
	depth := r.up(m.QueueDepth)
	if d, ok := r.val(m.QueueDepth); ok && d > 100 {
		depth = maxOf(depth, 0.6)
	}
	qtime := r.up(m.QueueTime)
	share := 0.0
	if sh, ok := queueShare(r.in.Snapshot.Current); ok {
		share = ramp(sh, 0.1, 0.4)
		// Waiting that is a sliver of E2E is burstiness, not a backlog.
		qtime *= ramp(sh, 0.05, 0.2)
	}
	queued := maxOf(depth, qtime)
	// With a generous max_num_seqs and a roomy cache the scheduler admits
	// the excess into the running batch rather than the waiting queue:
	// the overload shows as a bigger batch and slower steps instead.
	saturated := r.loadBeyondCapacity()
	if queued == 0 && saturated == 0 {
		return 0
	}
	if 0.6*saturated > queued {
		r.note(m.RunningSeqs, remarkAdmittedLoad)
		queued = 0.6 * saturated
	}
	// A bigger batch is more load only when requests are served at least
	// as fast: by Little's law, more sequences running at lower
	// throughput, or behind steps that slowed beyond the load, stay
	// longer rather than arrive more often.
	batchLoad := 0.7 * r.bothUp(m.RunningSeqs) * (1 - r.down(m.ThroughputRPS)) * (1 - r.stepsBeyondLoad())
	load := maxOf(r.up(m.ArrivalRPS), r.up(m.ThroughputRPS), batchLoad)
	if a, ok := r.in.Snapshot.Current.Get(m.ArrivalRPS); ok {
		if t, ok := r.in.Snapshot.Current.Get(m.ThroughputRPS); ok && t > 0 {
			load = maxOf(load, ramp(a/t, 1.02, 1.2))
		}
	}
	busy := 0.0
	if sm, ok := r.val(m.SMUtil); ok {
		busy = maxOf(knee(sm, 0.85), r.bothUp(m.SMUtil))
	}
	held := 0.0
	if r.has(m.ThroughputRPS) {
		held = 1 - r.down(m.ThroughputRPS)
	}
	r.noteIf(depth, m.QueueDepth, "")
	r.noteIf(qtime, m.QueueTime, "")
	r.noteIf(load, m.ArrivalRPS, "")
	r.noteIf(load, m.ThroughputRPS, remarkAtCeiling)
	r.noteIf(busy, m.SMUtil, remarkSaturated)
	// A queue behind idle SMs is not a capacity problem: below the knee the
	// engine could serve more, so something else holds it back.
	idle := 0.0
	if sm, ok := r.in.Snapshot.Current.Get(m.SMUtil); ok && sm < 0.7 {
		idle = r.bothDown(m.SMUtil)
	}
	// In a real backlog the scheduler fills the batch to its limit; a
	// queue growing while the batch shrinks, or while neither arrivals
	// nor the step time grew, means the engine admits fewer sequences
	// than it could (a lowered max_num_seqs), not too much load.
	shrunk := maxOf(r.batchSmall(), r.admissionCapped())
	// Capacity is batch / step time: a queue behind steps that got slower
	// while no more requests arrive is capacity lost, and the cause that
	// slowed the steps explains it.
	lost := r.slowerSteps(1.15, 1.5) * (1 - r.moreArrivals())
	// The same checks hold for the absolute reading of a deep queue.
	notLoad := (1 - 0.5*idle) * (1 - 0.6*shrunk) * (1 - 0.6*lost)
	r.absDiscount = 1 - notLoad
	return (0.35*queued + 0.15*share + 0.25*load + 0.15*busy + 0.1*held) * notLoad
}

// loadBeyondCapacity is how clearly more load than the engine serves
// comfortably went into the running batch: arrivals (served throughput
// without a gateway) rose at least 15% out of their noise, the batch
// grew with them, and latency grew clearly faster than the load. Below
// the saturation knee a bigger batch costs each step less than it adds
// (weights are read once per step), so latency grows slower than the
// load; past it, faster.
func (r *reader) loadBeyondCapacity() float64 {
	id := r.arrivalsMetric()
	load := r.rel(id)
	if load < 1.15 || r.z(id) < 2 {
		return 0
	}
	lat := maxOf(r.rel(m.E2E), r.rel(m.TPOT), r.rel(m.TTFT))
	return ramp(load, 1.15, 1.4) * ramp(lat/load, loadLatencyMargin, 1.5) * ramp(r.rel(m.RunningSeqs), 1.2, 1.6)
}

// loadLatencyMargin is how much faster than the load latency may grow
// before it reads as more than the load: a minute's noise on both.
const loadLatencyMargin = 1.1

// admissionCapped is how clearly a queue grew that neither more load nor
// slower steps nor a full cache explain, while the GPU does no more work:
// capacity = batch / step time, so with arrivals and the step time flat and
// the cache roomy, a queue can only come from fewer sequences admitted.
// Arrivals are read at the gateway, or, without it, as served throughput
// rising (a backlog from load first lifts throughput to its ceiling).
func (r *reader) admissionCapped() float64 {
	queued := maxOf(r.up(m.QueueDepth), r.up(m.QueueTime))
	if queued == 0 {
		return 0
	}
	more := maxOf(ramp(r.rel(m.ArrivalRPS), 1.05, 1.25), ramp(r.rel(m.ThroughputRPS), 1.05, 1.25), r.up(m.ArrivalRPS), r.up(m.ThroughputRPS))
	slower := maxOf(ramp(r.rel(m.TPOT), 1.1, 1.4), ramp(r.rel(m.MeanPromptTokens), 1.15, 1.5))
	full, _ := r.kvPressure()
	preempt := r.up(m.PreemptionRate)
	gpuMore := maxOf(r.up(m.TensorActive), r.bothUp(m.SMUtil), r.up(m.Power))
	return queued * (1 - more) * (1 - slower) * (1 - full) * (1 - preempt) * (1 - gpuMore)
}

// scoreUnderutilized: requests flow but the batch shrank and the SMs went
// idle against their baseline. How much traffic still flows does not
// matter: a router that sends most of it elsewhere leaves the GPUs as idle
// as a batch cap does, and both waste the compute the same way. The reference team's absolute rule (SM
// activity < 60% at > 10 req/s) only supports the finding: a GPU that was
// always that idle is a capacity-planning question, not an incident.
func scoreUnderutilized(r *reader) float64 {
	sm, ok := r.val(m.SMUtil)
	if !ok {
		return 0
	}
	thr, ok := r.val(m.ThroughputRPS)
	if !ok || thr <= 0 {
		return 0
	}
	// Idle against the baseline: a 3-sigma drop, or SM activity down to a
	// fraction of a baseline large enough for the fraction to mean
	// something (2% -> 1% is noise, 30% -> 3% is an idle GPU).
	base, _ := r.mean(m.SMUtil)
	smDown := maxOf(r.bothDown(m.SMUtil), ramp(1-r.rel(m.SMUtil), 0.5, 0.9)*ramp(base, 0.05, 0.2))
	small := r.batchSmall()
	// Requests waiting while the batch shrank, or while neither the load
	// nor the step time grew: the scheduler is capped below what the GPU
	// could take.
	capped := maxOf(small*maxOf(r.up(m.QueueDepth), r.up(m.QueueTime)), r.admissionCapped())
	if smDown == 0 && capped == 0 {
		return 0
	}
	seed := 0.0
	if thr > 10 && sm < 0.6 {
		seed = 1
	}
	// Small batches make each step cheaper, not slower: rising TPOT with a
	// batch that did not shrink is the host-overhead signature instead.
	calm := 1 - r.up(m.TPOT)
	// A batch held small by a full KV cache is memory, not idle compute:
	// the scheduler cannot admit more, so that is the eviction signature.
	full, _ := r.kvPressure()
	r.note(m.SMUtil, remarkIdle)
	r.noteIf(small, m.RunningSeqs, remarkSmallBatch)
	r.note(m.ThroughputRPS, "")
	r.noteIf(capped, m.QueueDepth, remarkCapped)
	score := 0.4*maxOf(smDown, capped) + 0.3*small + 0.1 + 0.1*calm + 0.1*seed
	return score * (1 - 0.5*(1-calm)*(1-small)) * (1 - full)
}

// scoreSpecDecode: most draft tokens rejected, so every step pays for a
// draft and keeps one token; TPOT rises and generated tokens/s fall.
func scoreSpecDecode(r *reader) float64 {
	rej, ok := r.val(m.RejectionRate)
	if !ok {
		return 0
	}
	sig := maxOf(r.up(m.RejectionRate), 0.5*ramp(rej, 0.45, 0.6))
	if sig == 0 {
		return 0
	}
	tpotUp := r.up(m.TPOT)
	if t, ok := r.val(m.TPOT); ok && t > 20 && rej > 0.5 {
		tpotUp = maxOf(tpotUp, 0.3)
	}
	genDown := r.down(m.GenerationTPS)
	r.note(m.RejectionRate, remarkRejected)
	r.noteIf(tpotUp, m.TPOT, "")
	r.noteIf(genDown, m.GenerationTPS, "")
	return 0.6*sig + 0.3*tpotUp + 0.1*genDown
}

// scoreMemoryBandwidth: decode is bound by HBM bandwidth. DRAM activity
// rose (or sits at its knee) or the memory clock dropped, TPOT follows, and
// neither a bigger batch, more traffic nor longer prompts explain the extra
// bytes. A falling SM clock points at throttling instead.
func scoreMemoryBandwidth(r *reader) float64 {
	dram := 0.0
	if d, ok := r.val(m.DRAMActive); ok {
		dram = maxOf(r.up(m.DRAMActive), 0.5*knee(d, 0.9)*ramp(r.z(m.DRAMActive), 0, 2))
	}
	clk := r.down(m.MemClock)
	tpotUp := maxOf(ramp(r.z(m.TPOT), 1, 5), ramp(r.z(m.DecodeTime), 1, 5))
	inferred := 0.0
	if !r.has(m.DRAMActive) && r.has(m.SMUtil) {
		// Without the profiling fields, a decode step that got slower on
		// GPUs that stayed at least as busy, or that draw more power for
		// each token they generate, points at memory, decode's
		// bottleneck: host stalls would idle the GPU and cut its power,
		// and throttling (discounted below) would drop the SM clock.
		// Weaker than a measured DRAM activity, so it never reaches full
		// strength.
		r.profilingMissing = true
		inferred = tpotUp * maxOf(0.6*ramp(r.z(m.SMUtil), -1, 1), 0.8*r.gpuWorkPerToken())
		r.noteIf(inferred, m.Power, remarkPowerPerToken)
	}
	// Prompts that grew with content the prefix cache serves add no
	// prefill, but every decode step reads their longer KV: the step
	// slowing with them is bandwidth, measured or not.
	cached := r.cachedGrowth()
	contexts := cached * ramp(r.rel(m.MeanPromptTokens), 1.2, 1.6) * tpotUp
	r.noteIf(contexts, m.MeanPromptTokens, remarkCachedContext)
	r.noteIf(contexts, m.KVCacheHitRate, "")
	bw := maxOf(dram, clk, inferred, contexts)
	if bw == 0 {
		return 0
	}
	notThrottled := 1 - 0.6*r.down(m.SMClock)
	// A bigger batch only explains slower steps when load made it bigger;
	// a batch that grew because each step got slower is the slow step's
	// symptom (stepsBeyondLoad).
	// Longer cached contexts are this cause's own load, not another's.
	byLoad := maxOf(r.bothUp(m.RunningSeqs), r.up(m.ThroughputRPS), r.up(m.MeanPromptTokens)) * (1 - r.stepsBeyondLoad()) * (1 - cached)
	r.noteIf(dram, m.DRAMActive, remarkBandwidth)
	r.noteIf(clk, m.MemClock, "")
	r.noteIf(tpotUp, m.TPOT, remarkDecodeBound)
	after := maxOf(r.up(m.QueueTime), r.down(m.ThroughputRPS))
	return (0.5*bw + 0.35*tpotUp + 0.15*after) * notThrottled * (1 - 0.6*byLoad)
}

// scoreLongPrompt: prompts got substantially longer (a surge: full strength
// at +50%, nothing below +15%, however steady the baseline); prefill and
// TTFT grow.
//
// Only the part of the growth that misses the prefix cache costs prefill:
// prompts that grew with content the cache already holds are longer
// contexts for decode to read (memory bandwidth), not a prefill surge.
func scoreLongPrompt(r *reader) float64 {
	uncached := 1 - r.cachedGrowth()
	pr := math.Min(r.up(m.MeanPromptTokens), ramp(r.rel(m.MeanPromptTokens), 1.15, 1.5)) * uncached
	if !r.has(m.MeanPromptTokens) {
		// Without prompt lengths, prompt tokens/s rising faster than
		// requests/s is the same signal, weaker.
		pt, tr := r.rel(m.PromptTPS), r.rel(m.ThroughputRPS)
		if tr > 0 {
			pr = 0.6 * ramp(pt/tr, 1.3, 2.5)
		}
	}
	if pr == 0 {
		return 0
	}
	prefill := maxOf(r.up(m.PrefillTime), r.up(m.TTFT))
	r.note(m.MeanPromptTokens, remarkLongPrompts)
	r.noteIf(r.up(m.PrefillTime), m.PrefillTime, "")
	r.noteIf(r.up(m.TTFT), m.TTFT, "")
	r.noteIf(r.up(m.PromptTPS), m.PromptTPS, "")
	// Slower prefill and first tokens are this cause's only insofar as
	// the prompts' uncached part grew, and of that growth only the part
	// the longer prompts account for.
	slow := (0.3*prefill + 0.15*r.up(m.PromptTPS)) * uncached * r.promptShareOfMisses()
	return (0.55*pr + slow) * (1 - 0.6*r.gpuWorkFell())
}

// promptShareOfMisses is the share (0-1) of the uncached prompt tokens'
// (log) growth, P(1-h) against its baseline, that longer prompts account
// for when prefix hits fell: the rest is hits lost, an eviction storm's or
// the traffic's doing, which longer prompts leave to those causes. 1 when
// the hit rate held or rose (cachedGrowth covers that side) or is
// unknown. Hits lost because the longer prompts filled the cache are the
// prompts' own.
func (r *reader) promptShareOfMisses() float64 {
	p, u, ok := r.promptGrowth()
	// Uncached tokens grew faster than the prompts only if hits fell.
	if !ok || p <= 1 || u <= p {
		return 1
	}
	share := clamp01(math.Log(p) / math.Log(u))
	// Prompts long enough to fill the cache evict the prefixes
	// themselves: the hits lost are theirs as far as they explain the
	// cache's growth.
	f, _ := kvGrowthFrom(m.CauseLongPromptPrefill, r)
	share += (1 - share) * kvExplained(r, f)
	// A hit rate that moved within its noise has lost nothing.
	return 1 - r.down(m.KVCacheHitRate)*(1-share)
}

// scorePrefixMiss: prefix hits fell while the KV cache is not pressed and
// nothing is preempted, so it is the traffic, not the cache size.
func scorePrefixMiss(r *reader) float64 {
	hd := r.down(m.KVCacheHitRate)
	if hd == 0 {
		return 0
	}
	pressure, ok := r.kvPressure()
	roomy := 0.5
	if ok {
		roomy = 1 - pressure
	}
	calm := roomy * (1 - r.up(m.PreemptionRate))
	slow := maxOf(r.up(m.TTFT), r.up(m.PrefillTime))
	// A cache emptied by a restart loses every hit at once and refills;
	// the restart's cause, not the traffic, is the fault.
	refilling := r.cacheRefilling()
	r.note(m.KVCacheHitRate, remarkHitsLost)
	r.noteIf(r.up(m.PrefillTime), m.PrefillTime, "")
	r.noteIf(r.up(m.TTFT), m.TTFT, "")
	r.noteIf(r.up(m.PromptTPS), m.PromptTPS, "")
	r.note(m.KVCacheUsage, remarkKVRoom)
	return (0.45*hd + 0.2*slow + 0.1*r.up(m.PromptTPS) + 0.25*calm) * (1 - 0.6*r.gpuWorkFell()) * (1 - 0.8*refilling)
}

// emptiedHits is the lowest prefix hit rate of the recent minutes and,
// with now, of the current one too, and the baseline's; ok only for a
// baseline of 15% or more, where a fall to a tenth of it means the cache
// was emptied at once (an engine restart empties it, traffic that stops
// sharing prefixes rarely reaches zero where it shared a fair part).
func (r *reader) emptiedHits(now bool) (low, base float64, ok bool) {
	base, ok = r.mean(m.KVCacheHitRate)
	if !ok || base < 0.15 {
		return 0, 0, false
	}
	low = math.Inf(1)
	if cur, has := r.in.Snapshot.Current.Get(m.KVCacheHitRate); has && now {
		low = cur
	}
	for _, p := range r.in.Recent {
		if h, has := p.Values.Get(m.KVCacheHitRate); has {
			low = math.Min(low, h)
		}
	}
	return low, base, low <= 0.1*base
}

// cacheEmptied reports whether the prefix cache was emptied at once in the
// recent minutes or now (emptiedHits).
func (r *reader) cacheEmptied() bool {
	_, _, ok := r.emptiedHits(true)
	return ok
}

// cacheRefilling is how clearly the prefix cache was emptied in the recent
// minutes (emptiedHits) and has since climbed back part of the way: a
// cache refilling after a restart, not traffic that lost its sharing.
func (r *reader) cacheRefilling() float64 {
	low, base, ok := r.emptiedHits(false)
	cur, has := r.in.Snapshot.Current.Get(m.KVCacheHitRate)
	if !ok || !has {
		return 0
	}
	return ramp((cur-low)/(base-low), 0.1, 0.3)
}

// cachedGrowth is the share (0-1) of the prompts' (log) growth that the
// prefix cache absorbed beyond its baseline hit rate. A cached block costs
// no prefill, so prefill work follows the uncached tokens, P(1-h): with
// the hit rate held they grow with the prompts (0), with the new tokens
// all served from the cache they stay flat (1). 0 unless prompts grew by
// 10% and both hit rates are known.
func (r *reader) cachedGrowth() float64 {
	p, u, ok := r.promptGrowth()
	if !ok || p < 1.1 {
		return 0
	}
	return clamp01(1 - math.Log(math.Max(u, 1))/math.Log(p))
}

// promptGrowth is the growth over the baseline of the mean prompt, p, and
// of its uncached tokens P(1-h), u (the hit rate's miss share floored at
// 2%); ok only when both are known and the baseline hit rate is under 98%.
func (r *reader) promptGrowth() (p, u float64, ok bool) {
	p1, ok1 := r.in.Snapshot.Current.Get(m.MeanPromptTokens)
	h1, ok2 := r.in.Snapshot.Current.Get(m.KVCacheHitRate)
	p0, ok3 := r.mean(m.MeanPromptTokens)
	h0, ok4 := r.mean(m.KVCacheHitRate)
	if !ok1 || !ok2 || !ok3 || !ok4 || p0 <= 0 || h0 >= 0.98 {
		return 0, 0, false
	}
	return p1 / p0, p1 * math.Max(1-h1, 0.02) / (p0 * (1 - h0)), true
}

// gpuWorkFell is how clearly the GPU computes less than at the baseline:
// tensor or SM activity or board power well below it. Causes that add
// prefill (prompts that missed the prefix cache, longer prompts) add
// compute and cannot produce it; a failing engine can. DRAM activity is
// left out: compute-bound prefill lowers its share of the time.
func (r *reader) gpuWorkFell() float64 {
	return maxOf(r.down(m.TensorActive), r.bothDown(m.SMUtil), ramp(-r.z(m.Power), 2, 5))
}

// scoreThrottling: the SM clock fell below its baseline, with heat or a
// power limit behind it, and every phase slows. Before the clocks move, a
// temperature excursion that the load does not explain (power and SM
// activity flat) is already a cooling fault on its way to throttling.
func scoreThrottling(r *reader) float64 {
	clk := r.down(m.SMClock)
	heat := r.up(m.GPUTemp)
	if t, ok := r.val(m.GPUTemp); ok {
		heat = maxOf(heat, ramp(t, 82, 90))
	}
	lat := maxOf(r.up(m.TPOT), r.up(m.PrefillTime), r.up(m.TTFT), r.up(m.E2E))
	if clk == 0 {
		unexplained := heat * (1 - maxOf(r.up(m.Power), r.bothUp(m.SMUtil)))
		if unexplained == 0 {
			return 0
		}
		r.note(m.GPUTemp, remarkHot)
		r.note(m.SMClock, "")
		r.note(m.Power, "")
		return 0.45*unexplained + 0.1*lat
	}
	power := 0.7 * ramp(math.Abs(r.z(m.Power)), 2, 6)
	r.note(m.SMClock, remarkClockDown)
	r.noteIf(heat, m.GPUTemp, remarkHot)
	r.noteIf(power, m.Power, "")
	r.noteIf(lat, m.TPOT, "")
	// A throttled GPU runs the same kernels slower and stays busy; one
	// whose activity fell to a fraction of its baseline is idling, and
	// an idle GPU lowers its own clock (and power and heat with it).
	idling := ramp(-r.z(m.SMUtil), 3, 8) * ramp(1-r.rel(m.SMUtil), 0.3, 0.6)
	return (0.5*clk + 0.25*maxOf(heat, power) + 0.25*lat) * (1 - 0.7*idling)
}

// gatewayGap is the time a request spends outside the engine.
func gatewayGap(v m.Values) (float64, bool) {
	g, ok1 := v.Get(m.GatewayE2E)
	e, ok2 := v.Get(m.E2E)
	if !ok1 || !ok2 {
		return 0, false
	}
	return g - e, true
}

// gatewayGapUp is how clearly the time spent outside the engine grew.
func (r *reader) gatewayGapUp() float64 {
	gap := deriveDeviation(r.in.Snapshot, gatewayGap, 2, m.Up)
	if !gap.ok {
		return 0
	}
	up := ramp(gap.dev.Z, 2, 6)
	if g, _ := r.val(m.GatewayE2E); g > 0 {
		up = maxOf(up, 0.5*ramp(gap.value/g, 0.2, 0.5)*ramp(gap.dev.Z, 1, 3))
	}
	return up
}

// scoreTransport: the gateway sees slower requests while the engine does
// not: the time is spent in the network, gateway or streaming path.
func scoreTransport(r *reader) float64 {
	if !r.has(m.GatewayE2E) || !r.has(m.E2E) {
		return 0
	}
	gapUp := r.gatewayGapUp()
	gwUp := r.up(m.GatewayE2E)
	engineCalm := 1 - r.up(m.E2E)
	if gapUp == 0 {
		return 0
	}
	r.note(m.GatewayE2E, remarkOutsideEngine)
	r.note(m.E2E, remarkEngineCalm)
	return 0.5*gapUp + 0.25*gwUp + 0.25*engineCalm
}

// scoreEngineErrors: the engine fails requests (OOM, crashes); a client
// cancelling (vLLM's finished_reason="abort") is not an engine error.
func scoreEngineErrors(r *reader) float64 {
	e, ok := r.val(m.ErrorRate)
	err := 0.0
	if ok {
		err = maxOf(r.up(m.ErrorRate), ramp(e, 0.02, 0.1))
	}
	// A dead engine core finishes nothing, so vLLM's finished-request
	// counter shows no errors for it; its API server answers 5xx. Read
	// only where the source has the API server's counter.
	api := 0.0
	if a, has := r.in.Snapshot.Current.Get(m.APIErrorRate); has {
		api = maxOf(r.up(m.APIErrorRate), ramp(a, 0.02, 0.1))
	}
	if err == 0 && api == 0 {
		return 0
	}
	r.noteIf(err, m.ErrorRate, remarkFailing)
	r.noteIf(api, m.APIErrorRate, remarkFailing)
	r.noteIf(r.down(m.ThroughputRPS), m.ThroughputRPS, "")
	err = maxOf(err, api)
	// Requests time out of a queue only once waiting dominates their
	// time; failures well past a healthy engine's rate while most of the
	// request is still spent being served are the engine's own, not a
	// symptom of whatever filled the queue.
	// Clients that leave a gateway grown slow while the engine is not
	// abort their requests too (residual.go weighs them).
	leaving := r.gatewayGapUp() * (1 - r.up(m.E2E))
	if sh, qok := queueShare(r.in.Snapshot.Current); ok && qok && e >= 0.03 && leaving < 0.5 {
		if ramp(e, 0.03, 0.08)*(1-ramp(sh, 0.5, 0.9)) >= 0.5 {
			r.beyondUpstream = true
		}
	}
	return 0.8*err + 0.2*r.down(m.ThroughputRPS)
}

// scoreHostOverhead: each token takes longer but the GPU is not doing more
// work (SM and DRAM activity and power flat or falling) and the batch is not
// small: the extra time is spent off the GPU, on the CPU side (tokenizer,
// scheduler, kernel launches). Measurably idler SMs or DRAM confirm it;
// without them the finding stands by elimination (clocks, bandwidth, drafts
// and batch size all ruled out), and is weaker when DRAM activity is not
// collected, because a bandwidth drop then cannot be excluded.
//
// The API server's share of the host work (tokenising, input processing)
// shows before the engine sees the request: time to first token grows
// while the engine's queue and prefill do not (frontendSlow).
func scoreHostOverhead(r *reader) float64 {
	step := scoreHostStep(r)
	fe := r.frontendSlow()
	if fe == 0 {
		return step
	}
	r.note(m.TTFT, remarkFrontend)
	r.note(m.QueueTime, "")
	r.note(m.PrefillTime, "")
	return maxOf(step, 0.1+0.75*fe)
}

// frontendTime is the time to first token spent outside the engine's queue
// and prefill. vLLM measures TTFT from the API server's arrival, so it
// holds tokenising and input processing too: TTFT = frontend + queue +
// prefill.
func frontendTime(v m.Values) (float64, bool) {
	t, ok1 := v.Get(m.TTFT)
	q, ok2 := v.Get(m.QueueTime)
	p, ok3 := v.Get(m.PrefillTime)
	if !ok1 || !ok2 || !ok3 {
		return 0, false
	}
	return t - q - p, true
}

// frontendSlow is how clearly requests wait in the API server: the
// frontend time rose out of its noise to a material share of TTFT while
// the engine's queue and prefill stayed within theirs. vLLM records TTFT
// at the first token but the queue and prefill intervals when a request
// finishes, so a queue or prefill that is growing shows in TTFT first;
// requiring both calm keeps that lag from reading as frontend time.
func (r *reader) frontendSlow() float64 {
	ttft, ok := r.in.Snapshot.Current.Get(m.TTFT)
	if !ok || ttft <= 0 {
		return 0
	}
	queueCalm, prefillCalm := 1-ramp(r.z(m.QueueTime), 1.5, 3), 1-ramp(r.z(m.PrefillTime), 1.5, 3)
	g := deriveDeviation(r.in.Snapshot, frontendTime, 2, m.Up)
	if g.ok {
		return ramp(g.dev.Z, 3, 8) * ramp(g.value/ttft, 0.2, 0.5) * queueCalm * prefillCalm
	}
	// A scrape that lost the queue or prefill interval leaves TTFT's rise
	// to be read against what stands in for the lost part: the queue's
	// depth for its time, the prompts' length and prefix hits for the
	// prefill's. A rise that none of them shows is the frontend's, read
	// with less certainty than the subtraction gives.
	switch {
	case r.has(m.QueueTime):
	case r.has(m.QueueDepth):
		queueCalm = 1 - ramp(r.z(m.QueueDepth), 1.5, 3)
	default:
		return 0
	}
	if !r.has(m.PrefillTime) {
		if !r.has(m.MeanPromptTokens) && !r.has(m.PromptTPS) {
			return 0
		}
		prefillCalm = (1 - ramp(r.z(m.MeanPromptTokens), 1.5, 3)) * (1 - ramp(r.z(m.PromptTPS), 1.5, 3)) *
			(1 - ramp(-r.z(m.KVCacheHitRate), 1.5, 3))
	}
	base, ok := r.mean(m.TTFT)
	if !ok {
		return 0
	}
	return 0.8 * ramp(r.z(m.TTFT), 3, 8) * ramp((ttft-base)/ttft, 0.2, 0.5) * queueCalm * prefillCalm
}

// scoreHostStep is host overhead read from the decode step.
func scoreHostStep(r *reader) float64 {
	if !r.has(m.SMUtil) && !r.has(m.DRAMActive) {
		return 0
	}
	lat := maxOf(r.up(m.TPOT), r.up(m.DecodeTime))
	if lat == 0 || r.z(m.SMUtil) > 1 && r.beyondBatch(m.SMUtil) > 0.5 {
		// A slower step at higher SM activity is GPU work, not host work,
		// unless the batch grew more than the activity did.
		return 0
	}
	// More GPU work for each generated token (power, or SM or DRAM
	// activity, rising faster than the token rate) means the step got
	// slower on the GPU: the host cannot make the GPU work harder. Slower
	// steps at steady arrivals grow the batch, and a bigger batch keeps
	// the GPU busier each step, so activity counts only beyond the batch.
	busier := maxOf(r.up(m.DRAMActive), r.up(m.TensorActive)*r.beyondBatch(m.TensorActive),
		r.bothUp(m.SMUtil)*r.beyondBatch(m.SMUtil), r.up(m.Power)*r.beyondBatch(m.Power), r.gpuWorkPerToken())
	if busier >= 0.5 {
		return 0
	}
	if !r.has(m.DRAMActive) {
		r.profilingMissing = true
	}
	// DRAM activity falling while the tensor cores work more is a shift
	// of the step's mix towards compute (chunked prefill), not a gap.
	dramIdle := ramp(-r.z(m.DRAMActive), 1, 4) * (1 - ramp(r.z(m.TensorActive), 1, 3)*r.beyondBatch(m.TensorActive))
	idle := maxOf(ramp(-r.z(m.SMUtil), 1, 4), dramIdle, 0.5*ramp(-r.z(m.Power), 1, 4))
	// The same kernels spread over a longer step: activity falling with
	// the step time, even inside the baseline's spread of a varying load.
	fell, rose := gpuActivity(r)
	idle = maxOf(idle, fell*(1-rose))
	dramKnown := 0.0
	if r.has(m.DRAMActive) {
		dramKnown = 1
	}
	batchOK := 1 - r.batchSmall()
	clocksOK := 1 - maxOf(r.down(m.SMClock), r.down(m.MemClock))
	// Host time per step cuts what the engine can serve; it cannot make
	// it serve more. Steps that slowed while clearly more requests
	// arrived and were served carry more work (bigger batches, prefill
	// chunks), which is load.
	notLoad := 1 - 0.6*ramp(r.rel(r.arrivalsMetric()), 1.15, 1.4)
	r.noteIf(r.up(m.TPOT), m.TPOT, remarkStarved)
	r.noteIf(r.up(m.DecodeTime), m.DecodeTime, remarkStarved)
	r.noteIf(idle, m.SMUtil, "")
	r.noteIf(idle, m.DRAMActive, "")
	r.note(m.RunningSeqs, remarkBatchFine)
	// Time spent on the host opens gaps between kernels, so the duty
	// cycle must fall; only a GPU already near 100% busy, where a gap
	// hides in rounding, leaves the finding to stand by elimination.
	// Without the profiling fields that is all there is to read.
	gaps := idle
	if sm, ok := r.val(m.SMUtil); ok && !r.has(m.DRAMActive) {
		gaps = maxOf(idle, knee(sm, 0.95))
	} else if dramKnown == 0 {
		gaps = 1
	}
	// An engine that restarted was down for part of the minute: its GPU
	// idled and its requests stretched over the downtime, the same
	// signature. A prefix cache emptied at once marks the restart, whose
	// cause (a redeploy, a crash) is the fault.
	restarted := 0.0
	if r.cacheEmptied() {
		restarted = 1
	}
	return (0.35*lat + 0.25*idle + 0.15*(1-busier) + 0.15*batchOK + 0.1*dramKnown) * clocksOK * notLoad * (0.55 + 0.45*gaps) * (1 - 0.7*restarted)
}
