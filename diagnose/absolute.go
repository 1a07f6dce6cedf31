package diagnose

import (
	"math"

	m "github.com/casebook/casebook/metrics"
)

// Absolute physics. A baseline needs history, and a fresh deployment, a new
// Prometheus or a scope that just appeared has none; yet 9% of requests
// failing is an incident whatever came before. Each signature below reads
// the current values alone and scores, in 0-1, how clearly they show a
// cause by limits that hold for any vLLM service on NVIDIA GPUs (they are
// properties of the engine and the hardware, not of a workload):
//
//   - engine_errors: a healthy engine fails well under 1% of requests; from
//     1% it is a signal, from 5% a certainty;
//   - kv_cache_eviction: KV usage inside its ~90% knee while sequences are
//     preempted (vLLM preempts only when it runs out of blocks, so any
//     sustained preemption is abnormal), TTFT far above TPOT as support;
//   - queue_backlog: the queue far deeper than the running batch (the
//     scheduler cannot admit it) with the SMs at their saturation knee,
//     and waiting a large share of E2E;
//   - gpu_underutilized: requests waiting while the batch is small and the
//     SMs idle (the scheduler admits fewer sequences than the GPU could
//     take); low SM activity alone is light load, and only the reference
//     team's seed (SM < 60% at > 10 req/s) supports it weakly;
//   - gpu_throttling: an SM clock far below the lowest boost clock of
//     current data-centre GPUs (~1,400 MHz) while the GPU is busy, or a
//     temperature at the slowdown threshold (~85-90 C);
//   - transport_latency: gateway E2E far above engine E2E (more than a
//     fifth of the request and more than tens of milliseconds outside the
//     engine, where a healthy gateway adds a few);
//   - spec_decode_degradation: more than half of the draft tokens rejected
//     (a useful draft model keeps most of them);
//   - memory_bandwidth_bound: DRAM activity at its saturation knee;
//   - host_overhead: a large running batch that leaves the SMs mostly idle.
//
// Long prompts and prefix misses have no absolute signature: prompt
// lengths and hit rates are properties of the workload, and only their
// change is a fault.
//
// Blending (see blendAbsolute): with history, an absolute signature counts
// only by how much more it holds now than at the baseline means, so a
// deployment that always runs its cache at 95% is not an eviction storm;
// without history it counts in full. The finding keeps the larger of the
// deviation score and that absolute score, and the confidence is lowered
// by the share of metrics that had no baseline (see footing).
type absSignature func(v m.Values) (score float64, cited []string)

// absSignatures maps a root cause to its absolute signature.
var absSignatures = map[string]absSignature{
	m.CauseEngineErrors:          absEngineErrors,
	m.CauseKVCacheEviction:       absEviction,
	m.CauseQueueBacklog:          absQueueBacklog,
	m.CauseGPUUnderutilized:      absUnderutilized,
	m.CauseGPUThrottling:         absThrottling,
	m.CauseTransportLatency:      absTransport,
	m.CauseSpecDecodeDegradation: absSpecDecode,
	m.CauseMemoryBandwidthBound:  absMemoryBandwidth,
	m.CauseHostOverhead:          absHostOverhead,
}

// Physical limits of the absolute signatures.
const (
	// errSignal and errCertain bound the error-rate ramp.
	errSignal, errCertain = 0.01, 0.05
	// kvKnee is where KV usage starts forcing preemptions.
	kvKnee = 0.92
	// preemptSteady is the preemption rate (per second) at full strength.
	preemptSteady = 0.5
	// smKnee is the SM activity at which queueing grows non-linearly.
	smKnee = 0.85
	// minBoostMHz is the lowest boost SM clock of current data-centre GPUs
	// (A100 1,410; H100/H200 1,755-1,980; L4 2,040; L40S 2,520); a busy GPU
	// well below it is held back by a thermal or power limit.
	minBoostMHz = 1400
	// slowdownC is where data-centre GPUs begin thermal slowdown.
	slowdownLoC, slowdownHiC = 82.0, 90.0
	// gatewayGapMs is the time outside the engine at full strength; a
	// healthy gateway adds a few milliseconds.
	gatewayGapLoMs, gatewayGapHiMs = 50.0, 250.0
	// dramKnee is where HBM bandwidth saturates.
	dramKnee = 0.9
)

func absEngineErrors(v m.Values) (float64, []string) {
	e, ok := v.Get(m.ErrorRate)
	if !ok {
		return 0, nil
	}
	return ramp(e, errSignal, errCertain), []string{m.ErrorRate}
}

func absEviction(v m.Values) (float64, []string) {
	kv, okKV := v.Get(m.KVCacheUsage)
	pre, okP := v.Get(m.PreemptionRate)
	if !okP {
		return 0, nil
	}
	preempting := ramp(pre, 0.02, preemptSteady)
	if preempting == 0 {
		return 0, nil
	}
	full := 0.5 // usage unknown: preemption alone says the cache ran out
	if okKV {
		full = knee(kv, kvKnee)
	}
	recompute := 0.0
	ttft, ok1 := v.Get(m.TTFT)
	tpot, ok2 := v.Get(m.TPOT)
	if ok1 && ok2 && tpot > 0 {
		recompute = ramp(ttft/tpot, 3, 10)
	}
	return 0.45*preempting + 0.4*full + 0.15*recompute, []string{m.KVCacheUsage, m.PreemptionRate, m.TTFT}
}

func absQueueBacklog(v m.Values) (float64, []string) {
	qd, ok := v.Get(m.QueueDepth)
	if !ok {
		return 0, nil
	}
	run, _ := v.Get(m.RunningSeqs)
	deep := ramp(qd/math.Max(run, 1), 0.5, 2)
	share := 0.0
	if sh, ok := queueShare(v); ok {
		share = ramp(sh, 0.2, 0.5)
	}
	if deep == 0 && share == 0 {
		return 0, nil
	}
	busy := 0.5 // SM activity unknown
	if sm, ok := v.Get(m.SMUtil); ok {
		busy = knee(sm, smKnee)
		if busy == 0 {
			// A queue behind idle SMs is not a capacity problem.
			return 0, nil
		}
	}
	return 0.45*deep + 0.25*share + 0.3*busy, []string{m.QueueDepth, m.RunningSeqs, m.QueueTime, m.SMUtil}
}

func absUnderutilized(v m.Values) (float64, []string) {
	sm, ok := v.Get(m.SMUtil)
	if !ok {
		return 0, nil
	}
	thr, ok := v.Get(m.ThroughputRPS)
	if !ok || thr <= 0 {
		return 0, nil
	}
	idle := ramp(0.6-sm, 0, 0.3)
	if idle == 0 {
		return 0, nil
	}
	waiting := 0.0
	if qd, ok := v.Get(m.QueueDepth); ok {
		run, _ := v.Get(m.RunningSeqs)
		small := 1 - ramp(run, 4, 16)
		waiting = ramp(qd, 0.5, 4) * small
	}
	seed := 0.0
	if thr > 10 && sm < 0.6 {
		seed = 1
	}
	return 0.7*idle*waiting + 0.3*seed*idle, []string{m.SMUtil, m.RunningSeqs, m.QueueDepth, m.ThroughputRPS}
}

func absThrottling(v m.Values) (float64, []string) {
	hot := 0.0
	if t, ok := v.Get(m.GPUTemp); ok {
		hot = ramp(t, slowdownLoC, slowdownHiC)
	}
	slow := 0.0
	if c, ok := v.Get(m.SMClock); ok && c > 0 {
		slow = ramp(minBoostMHz-c, 0, 500)
		// Idle GPUs lower their clocks to save power: only a busy GPU's
		// low clock is a limit.
		if sm, ok := v.Get(m.SMUtil); ok {
			slow *= ramp(sm, 0.1, 0.3)
		}
	}
	if slow == 0 && hot < 0.5 {
		return 0, nil
	}
	// Either signal alone is a limit being approached; both together (a
	// clock below every boost clock on a GPU at its slowdown temperature)
	// are the limit acting.
	both := math.Min(1, 4*math.Min(slow, hot))
	return 0.6*math.Max(slow, hot) + 0.4*both, []string{m.SMClock, m.GPUTemp, m.Power}
}

func absTransport(v m.Values) (float64, []string) {
	gap, ok := gatewayGap(v)
	if !ok || gap <= 0 {
		return 0, nil
	}
	g, _ := v.Get(m.GatewayE2E)
	if g <= 0 {
		return 0, nil
	}
	return ramp(gap/g, 0.05, 0.2) * ramp(gap, gatewayGapLoMs, gatewayGapHiMs), []string{m.GatewayE2E, m.E2E}
}

func absSpecDecode(v m.Values) (float64, []string) {
	rej, ok := v.Get(m.RejectionRate)
	if !ok {
		return 0, nil
	}
	bad := ramp(rej, 0.45, 0.6)
	if bad == 0 {
		return 0, nil
	}
	slow := 0.0
	if t, ok := v.Get(m.TPOT); ok {
		slow = ramp(t, 15, 30)
	}
	return 0.8*bad + 0.2*slow, []string{m.RejectionRate, m.TPOT}
}

func absMemoryBandwidth(v m.Values) (float64, []string) {
	d, ok := v.Get(m.DRAMActive)
	if !ok {
		return 0, nil
	}
	// Decode is memory-bound by nature, so a saturated HBM alone is a
	// weak finding: it reaches the incident bar only at the knee's top.
	return 0.65 * knee(d, dramKnee), []string{m.DRAMActive, m.TPOT}
}

func absHostOverhead(v m.Values) (float64, []string) {
	sm, ok := v.Get(m.SMUtil)
	if !ok {
		return 0, nil
	}
	run, ok := v.Get(m.RunningSeqs)
	if !ok {
		return 0, nil
	}
	big := ramp(run, 16, 48)
	idle := ramp(0.45-sm, 0, 0.25)
	if d, ok := v.Get(m.DRAMActive); ok {
		idle *= 1 - ramp(d, 0.4, 0.7)
	}
	// Absolute idleness under a big batch is suggestive, not proof: a
	// small model on a large GPU can look the same. It stays below the
	// incident bar on its own.
	return 0.55 * big * idle, []string{m.SMUtil, m.RunningSeqs, m.DRAMActive}
}

// footing is the share of the present catalog metrics with a usable
// baseline (at least minHistory points): 1 with a full history, 0 with
// none.
func footing(s m.Snapshot, counts map[string]int) float64 {
	n, based := 0, 0
	for _, mt := range m.Catalog {
		if _, ok := s.Current.Get(mt.ID); !ok {
			continue
		}
		n++
		if counts[mt.ID] >= minHistory {
			based++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(based) / float64(n)
}

// baselineValues are the baseline means of the metrics with a usable
// baseline: the state the absolute signatures are compared against.
func baselineValues(base map[string]Deviation, counts map[string]int) m.Values {
	out := make(m.Values, len(base))
	for id, d := range base {
		if counts[id] >= minHistory {
			out[id] = d.Mean
		}
	}
	return out
}

// blendAbsolute folds a cause's absolute signature into its rule finding.
// The absolute score counts by how much more it holds now than at the
// baseline (in full where there is no baseline); the finding keeps the
// larger of the two scores, and cites the absolute readings when they
// carried it.
func blendAbsolute(f Finding, s m.Snapshot, base map[string]Deviation, baseVals m.Values) Finding {
	sig, ok := absSignatures[f.RootCause]
	if !ok {
		return f
	}
	now, cited := sig(s.Current)
	if now <= 0 || math.IsNaN(now) {
		return f
	}
	was := 0.0
	if len(baseVals) > 0 {
		was, _ = sig(baseVals)
		if math.IsNaN(was) {
			was = 0
		}
	}
	fresh := math.Min(1, math.Max(0, now-was)) * (1 - math.Min(1, math.Max(0, f.absDiscount)))
	if fresh <= f.Score {
		return f
	}
	f.Score = fresh
	have := map[string]bool{}
	for _, e := range f.Evidence {
		have[e.Metric] = true
	}
	for i, id := range cited {
		x, ok := s.Current.Get(id)
		if !ok || have[id] {
			continue
		}
		remark := ""
		if i == 0 {
			remark = absRemark[f.RootCause]
		}
		d := base[id]
		f.Evidence = append(f.Evidence, Evidence{Metric: id, Value: x, BaselineMean: d.Mean, Z: d.Z, Text: evidenceText(id, x, d, remark)})
	}
	return f
}
