package diagnose

import (
	"math"

	m "github.com/casebook/casebook/metrics"
)

// Residual ranking. Several rules fire at once when one fault cascades: a
// decode step that slows down keeps every sequence longer in the batch
// (Little's law: running = throughput x time in the engine), the bigger
// batch fills the KV cache until it preempts, and the lost capacity builds
// a queue. The rules of the downstream causes then fire too, often louder
// than the rule of the fault itself. The causal graph says which way the
// arrows point, but a graph alone cannot tell a storm that a longer prompt
// caused from one that merely coincides with it, and it has cycles once
// Little's law is in it (slow steps fill the cache; a full cache's
// recompute slows the steps).
//
// So each pair of firing causes is weighed by magnitude: explainedBy(c, d)
// is the share of c's defining anomaly that d predicts through the
// physical relation between them (KV usage = batch x tokens per sequence;
// batch = throughput x step time; capacity = batch / service time). A
// cause keeps its score for the part of its anomaly that no other firing
// cause explains better than it explains that cause back; a symptom fully
// explained by an upstream cause drops to symptomFactor of its score.
// Pairs without a physical model fall back to the graph: a cause whose
// entry point lies downstream of another's, and not the other way round,
// is fully explained by it.

// stepCauses slow the decode step itself; the batch, the cache and the
// queue follow.
var stepCauses = map[string]bool{
	m.CauseHostOverhead:          true,
	m.CauseMemoryBandwidthBound:  true,
	m.CauseGPUThrottling:         true,
	m.CauseSpecDecodeDegradation: true,
}

// capacityCauses cut what the engine serves per second: slower steps, or
// prefill work (longer or missed prompts, preempted sequences recomputed)
// taking step time from decode.
var capacityCauses = map[string]bool{
	m.CauseHostOverhead:          true,
	m.CauseMemoryBandwidthBound:  true,
	m.CauseGPUThrottling:         true,
	m.CauseSpecDecodeDegradation: true,
	m.CauseKVCacheEviction:       true,
	m.CauseLongPromptPrefill:     true,
	m.CausePrefixCacheMiss:       true,
}

// explainedBy is the share (0-1) of cause c's defining anomaly that cause d
// predicts, given path, what the graph alone says (1 when c enters
// downstream of d's anomalous entry point, else 0).
func explainedBy(c, d string, path float64, r *reader) float64 {
	switch {
	case c == m.CauseKVCacheEviction:
		// The graph misses Little's law (a slower step keeps a bigger
		// batch), and a path alone says nothing of how much of the
		// storm the upstream accounts for: the magnitude decides.
		if f, ok := kvGrowthFrom(d, r); ok {
			return kvExplained(r, f)
		}
	case c == m.CauseQueueBacklog && capacityCauses[d]:
		// Lost capacity builds a queue whichever metric the cause
		// entered through (a bandwidth fault read without the profiling
		// fields enters through nothing the graph can see).
		return math.Max(path, queueFromCapacity(r, true))
	case c == m.CauseQueueBacklog && d == m.CauseEngineErrors:
		// A failing engine (crashes, restarts, OOM) serves less without
		// any step getting slower: only the lost throughput counts.
		return math.Max(path, queueFromCapacity(r, false))
	case c == m.CauseLongPromptPrefill && d == m.CauseKVCacheEviction:
		// Only insofar as the storm is not the longer prompts' own.
		f, _ := kvGrowthFrom(m.CauseLongPromptPrefill, r)
		return prefillBeyondPrompts(r) * (1 - kvExplained(r, f))
	case c == m.CauseHostOverhead && d == m.CauseMemoryBandwidthBound:
		// Both explain the same slower step; the GPU's activity tells
		// which. Held or rising, the time is spent in kernels.
		fell, rose := gpuActivity(r)
		return rose * (1 - fell)
	case c == m.CauseMemoryBandwidthBound && d == m.CauseHostOverhead:
		// Falling, the same kernels are spread over a longer step.
		fell, rose := gpuActivity(r)
		return fell * (1 - rose)
	case c == m.CauseEngineErrors && d == m.CauseTransportLatency:
		// Clients that give up on a slow network or gateway disconnect,
		// and the engine aborts their requests (an abort counts as an
		// error); an engine failing requests on its own does not
		// lengthen the time outside it.
		return math.Max(path, r.gatewayGapUp()*(1-r.up(m.E2E)))
	case c == m.CauseEngineErrors && (d == m.CauseQueueBacklog || d == m.CauseGPUUnderutilized || capacityCauses[d]):
		// Clients time out of a queue once waiting dominates their
		// request and lasts seconds on end (client timeouts run from
		// tens of seconds up), and only then: the graph's path through
		// the queue would make every failure a symptom of whatever
		// lengthened the wait. Over-long prompts are rejected outright,
		// so longer prompts keep their path to the errors.
		sh, _ := queueShare(r.in.Snapshot.Current)
		wait, _ := r.in.Snapshot.Current.Get(m.QueueTime)
		timeouts := ramp(sh, 0.5, 0.9) * ramp(wait, 5000, 20000)
		if d == m.CauseLongPromptPrefill {
			return math.Max(path, timeouts)
		}
		return timeouts
	case c == m.CauseMemoryBandwidthBound && d == m.CauseSpecDecodeDegradation:
		// TPOT is time per token, not per step: with fewer drafts
		// accepted each step yields fewer tokens, so TPOT rises with
		// no step slower. Bandwidth that itself moved (DRAM activity
		// up, memory clock down) is no draft's doing.
		bw := maxOf(r.up(m.DRAMActive), r.down(m.MemClock))
		return math.Max(path, tpotFromDrafts(r)*(1-bw))
	case stepCauses[c] && d == m.CauseKVCacheEviction:
		// Recompute can slow the steps, but only by GPU work.
		return math.Min(path, stepsFromRecompute(r))
	}
	return path
}

// kvGrowthFrom is the factor by which cause d grows KV usage on its own:
// KV usage is the running batch times the tokens each sequence holds, so
// longer prompts scale it by the prompt growth, lost prefix sharing by
// the blocks no longer shared, and more load by the batch it adds. Every
// cause that slows the step (prefill work shares the steps with decode)
// also keeps each sequence longer in the batch: by Little's law, at the
// same throughput the batch grows with the step time. ok is false for
// causes that do not fill the cache.
func kvGrowthFrom(d string, r *reader) (float64, bool) {
	batch := math.Max(r.rel(m.RunningSeqs), 1)
	// The batch a slower step keeps, no more than the step slowed; the
	// 10% allows for the step-time noise of one minute.
	kept := math.Min(batch, 1.1*maxOf(1, r.rel(m.TPOT), r.rel(m.DecodeTime)))
	switch {
	case d == m.CauseLongPromptPrefill:
		return math.Max(r.rel(m.MeanPromptTokens), 1) * kept, true
	case d == m.CausePrefixCacheMiss:
		return hitLossFactor(r) * kept, true
	case d == m.CauseQueueBacklog:
		// The batch more arrivals bring, no more than arrivals grew;
		// but with requests waiting, the scheduler admits from the
		// queue until the cache is full, so a backlog of more
		// arrivals fills it whatever its size.
		load := maxOf(1, r.rel(m.ArrivalRPS), r.rel(m.ThroughputRPS))
		if maxOf(r.up(m.QueueDepth), r.up(m.QueueTime)) >= 0.5 && r.moreArrivals() >= 0.5 {
			return math.Inf(1), true
		}
		return math.Min(batch, load), true
	case stepCauses[d]:
		return kept, true
	}
	return 0, false
}

// hitLossFactor is how much more KV the same traffic holds once prefix
// hits are lost: blocks of a shared prefix are held once, so usage scales
// with 1 - hit rate.
func hitLossFactor(r *reader) float64 {
	hit, ok := r.in.Snapshot.Current.Get(m.KVCacheHitRate)
	base, bok := r.mean(m.KVCacheHitRate)
	if !ok || !bok || base >= 0.98 {
		return 1
	}
	return math.Max(math.Max(1-hit, 0.02)/(1-base), 1)
}

// kvExplained is the share of the KV cache's (log) growth that a growth
// factor f accounts for.
func kvExplained(r *reader, f float64) float64 {
	u, ok := r.in.Snapshot.Current.Get(m.KVCacheUsage)
	u0, bok := r.mean(m.KVCacheUsage)
	if !ok || !bok || u0 <= 0 || f <= 0 {
		return 0
	}
	pred := math.Min(1, u0*f)
	share := 1.0
	if u > u0 {
		share = clamp01(math.Log(pred/u0) / math.Log(u/u0))
	}
	return share
}

// queueFromCapacity is the share of a queue that lost capacity explains
// rather than more load; steps says whether the cause can lengthen the
// service time, else only a fall in served throughput counts. With the batch at its limit, capacity is batch /
// service time (prefill + decode of a request), so a queue grows by
// arrivals rising or service time rising; each explains its share of the
// (log) imbalance. Service time that more arrivals bring themselves
// counts as load: the scheduler fills the batch to work off a backlog,
// and a step's work grows at most in proportion to the batch (weights are
// read once per step, KV reads grow with the batch).
func queueFromCapacity(r *reader, steps bool) float64 {
	la, _ := loadLogs(r)
	lc := 0.0
	if steps {
		ls := math.Log(math.Max(serviceTimeRel(r), 1))
		lc = ls - loadDrivenStep(r, ls)
	}
	// With requests waiting the engine serves at its capacity, and at the
	// baseline it served at least what arrived: served throughput that
	// fell under a queue is capacity lost at least that much.
	if thr := r.rel(m.ThroughputRPS); thr > 0 && thr < 1 {
		lc = math.Max(lc, -math.Log(thr))
	}
	if lc+la <= 0 {
		return 0
	}
	return lc / (lc + la)
}

// loadLogs is the log growth of arrivals (served throughput without a
// gateway) and of the running batch, each at least 0.
func loadLogs(r *reader) (arrivals, batch float64) {
	a := r.rel(r.arrivalsMetric())
	return math.Log(math.Max(a, 1)), math.Log(math.Max(r.rel(m.RunningSeqs), 1))
}

// loadDrivenStep is the part of a log step or service-time growth ls that
// the batch explains when more arrivals grew it; without more arrivals a
// bigger batch is the slow step's own symptom (Little's law), not load.
func loadDrivenStep(r *reader, ls float64) float64 {
	_, lb := loadLogs(r)
	return r.moreArrivals() * math.Min(ls, lb)
}

// serviceTimeRel is a request's time in the engine outside the queue
// (prefill + decode), relative to its baseline; TPOT stands in without
// the phase times.
func serviceTimeRel(r *reader) float64 {
	p, ok1 := r.in.Snapshot.Current.Get(m.PrefillTime)
	d, ok2 := r.in.Snapshot.Current.Get(m.DecodeTime)
	p0, ok3 := r.mean(m.PrefillTime)
	d0, ok4 := r.mean(m.DecodeTime)
	if ok1 && ok2 && ok3 && ok4 && p0+d0 > 0 {
		return (p + d) / (p0 + d0)
	}
	return maxOf(1, r.rel(m.TPOT))
}

// tpotFromDrafts is the share of TPOT's (log) growth that more rejected
// drafts explain. A step with k drafts of which a share rho is rejected
// yields about 1 + k(1-rho) tokens, so at the same step time TPOT grows
// by (1 + k(1-rho0)) / (1 + k(1-rho1)). k is not in the catalog; four
// drafts, mid-way in the usual two to five, moves the prediction by under
// a tenth either way.
func tpotFromDrafts(r *reader) float64 {
	rho1, ok := r.in.Snapshot.Current.Get(m.RejectionRate)
	rho0, bok := r.mean(m.RejectionRate)
	lt := math.Log(r.rel(m.TPOT))
	if !ok || !bok || lt <= 0 {
		return 0
	}
	const k = 4.0
	pred := (1 + k*(1-clamp01(rho0))) / (1 + k*(1-clamp01(rho1)))
	if pred <= 1 {
		return 0
	}
	return clamp01(math.Log(pred) / lt)
}

// stepsFromRecompute is the share of a slower decode step that preempted
// sequences being recomputed explain. Recompute is prefill work on the
// GPU: it makes the GPU busier per step, not idler. A step that slowed
// while the GPU did less (SM, DRAM or tensor activity or power falling)
// with a batch that did not shrink spends the time off the GPU, which no
// recompute explains.
func stepsFromRecompute(r *reader) float64 {
	less := maxOf(ramp(-r.z(m.SMUtil), 1, 3), ramp(-r.z(m.DRAMActive), 1, 3), ramp(-r.z(m.TensorActive), 1, 3), ramp(-r.z(m.Power), 1, 3))
	return 1 - less*(1-r.batchSmall())
}

// prefillBeyondPrompts is the share of a long-prompt finding that an
// eviction storm explains: not the longer prompts themselves, which no
// storm makes, but the prefill and TTFT growth beyond what they cost.
// Prefill work grows at most with the square of the prompt (attention);
// the rest is recompute of preempted sequences and the wait behind it.
// The slowdown is at most longPromptSlowShare of the finding.
func prefillBeyondPrompts(r *reader) float64 {
	lp := 2 * math.Log(math.Max(r.rel(m.MeanPromptTokens), 1))
	ls := math.Log(maxOf(1, r.rel(m.PrefillTime), r.rel(m.TTFT)))
	if ls <= 0 {
		return 0
	}
	return longPromptSlowShare * (1 - clamp01(lp/ls))
}

// longPromptSlowShare is the weight of the slowdown (prefill, TTFT, prompt
// tokens/s) in the long-prompt rule's score; the rest is the prompt
// growth itself.
const longPromptSlowShare = 0.45

// gpuActivity is how clearly the GPU's activity per unit time fell and
// rose with the slower step: SM duty cycle, DRAM and tensor activity and
// board power. A step slowed on the GPU (bandwidth, clocks) keeps the GPU
// at least as busy, since its kernels take longer (elasticity to the step
// time >= 0); a step slowed off the GPU runs the same kernels over a
// longer step, so activity per unit time falls with it (elasticity -1 for
// the duty cycle, less for power, which has an idle floor). A move counts
// once its elasticity is half-way to that, or its z leaves the noise.
func gpuActivity(r *reader) (fell, rose float64) {
	lt := math.Log(maxOf(1, r.rel(m.TPOT), r.rel(m.DecodeTime)))
	for _, id := range []string{m.SMUtil, m.DRAMActive, m.TensorActive, m.Power} {
		if !r.has(id) {
			continue
		}
		z := r.z(id)
		f, u := ramp(-z, 1, 3), ramp(z, 1, 3)
		if lt >= math.Log(1.2) {
			// Elasticity only once the step moved beyond a minute's noise.
			e := math.Log(math.Max(r.rel(id), 1e-3)) / lt
			f, u = math.Max(f, ramp(-e, 0, 0.5)), math.Max(u, ramp(e, 0, 0.5))
		}
		fell, rose = math.Max(fell, f), math.Max(rose, u)
	}
	return fell, rose
}

// clamp01 clamps x to 0-1; NaN gives 0.
func clamp01(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
