package secondworld

import (
	"math"
	"math/rand/v2"

	"github.com/casebook/casebook/metrics"
)

// measure turns a minute's true state into the values a scrape would give:
// means over the requests that finished in the minute (so their noise
// shrinks with traffic), instantaneous gauges, DCGM samples, and only the
// fields this deployment's telemetry exposes.
func (d *deployment) measure(r *rand.Rand, m minuteOut) metrics.Values {
	v := metrics.Values{}
	op, c := m.op, m.c
	n := math.Max(1, (m.served+m.aborts)*60) // requests finished in the minute
	noisy := func(x, cv float64) float64 {
		return math.Max(0, x*(1+r.NormFloat64()*cv/math.Sqrt(n)))
	}
	poissonRate := func(rate float64) float64 {
		k := rate * 60
		return math.Max(0, k+r.NormFloat64()*math.Sqrt(k)) / 60
	}

	// errors: engine failures, client aborts and the background rate
	errShare := clamp(c.errFrac+c.abortFrac+d.baseErr, 0, 1)
	finished := m.served + m.aborts
	errRate := 0.0
	if finished > 0 {
		errRate = (m.served*errShare + m.aborts) / finished
	}

	// latency of one request: frontend + queue + prefill + decode
	frontend := (c.frontendMs + c.promptMean*0.004) / 1000
	queue := noisy(m.waitS, 1.8)
	prefill := noisy(op.prefillS, 1.0)
	decode := noisy(op.decodeS, 0.9)
	ttft := noisy(frontend, 0.3) + queue + prefill
	tpot := 0.0
	if c.outMean > 1 {
		tpot = decode / (c.outMean - 1)
	}
	ok := 1 - errShare
	// failed requests end early, around their first token
	e2eOK := ttft + decode + 0.001
	e2e := ok*e2eOK + (1-ok)*ttft
	promptTail := math.Exp(2.326*d.promptSigma - d.promptSigma*d.promptSigma/2)
	outSigma := math.Sqrt(math.Log(1 + d.outCV2))
	outTail := math.Exp(2.326*outSigma - outSigma*outSigma/2)
	ttftP99 := frontend*2 + m.waitP99S + op.prefillS*math.Max(1.5, promptTail)*(1+0.5*op.rhoP)
	tpotP99 := tpot * (1.2 + 0.9*op.rhoP + 4*op.preempt)
	e2eP99 := ttft + decode*outTail*(1+2*op.preempt)
	p99 := func(x, mean float64) float64 {
		return math.Max(mean*1.05, x*math.Max(0.5, 1+r.NormFloat64()*2.5/math.Sqrt(n)))
	}

	ms := 1000.0
	v[metrics.E2E] = e2e * ms
	v[metrics.E2EP99] = p99(e2eP99, e2e) * ms
	v[metrics.TTFT] = ttft * ms
	v[metrics.TTFTP99] = p99(ttftP99, ttft) * ms
	v[metrics.TPOT] = tpot * ms
	v[metrics.TPOTP99] = p99(tpotP99, tpot) * ms
	v[metrics.QueueTime] = queue * ms
	if d.phases {
		v[metrics.PrefillTime] = prefill * ms
		v[metrics.DecodeTime] = decode * ms
	}
	if d.gateway {
		transport := c.transportMs / 1000 * (1 + r.NormFloat64()*0.4/math.Sqrt(n))
		v[metrics.GatewayE2E] = (e2e + math.Max(0, transport)) * ms
		v[metrics.ArrivalRPS] = poissonRate(c.arrival)
	}

	thr := poissonRate(finished)
	v[metrics.ThroughputRPS] = thr
	promptCV := math.Sqrt(math.Exp(d.promptSigma*d.promptSigma) - 1)
	meanPrompt := noisy(c.promptMean, promptCV)
	v[metrics.MeanPromptTokens] = meanPrompt
	v[metrics.PromptTPS] = thr * meanPrompt * m.served / math.Max(finished, 1e-9)
	genPerReq := c.outMean * (ok + (1-ok)*0.3)
	v[metrics.GenerationTPS] = noisy(m.served*genPerReq, math.Sqrt(d.outCV2))
	running := op.running() * (1 - c.downFrac)
	zRun := r.NormFloat64()
	v[metrics.RunningSeqs] = math.Round(math.Max(0, running+zRun*math.Sqrt(running)*0.8))
	v[metrics.QueueDepth] = math.Round(math.Max(0, m.queueAvg+r.NormFloat64()*math.Sqrt(m.queueAvg)*1.5))
	v[metrics.KVCacheUsage] = clamp(m.kvUse*(1+zRun*0.6/math.Sqrt(running+1)), 0, 1)
	if d.prefixCaching {
		v[metrics.KVCacheHitRate] = clamp(op.hit+r.NormFloat64()*0.012, 0, 1)
	}
	if d.specK > 0 {
		v[metrics.RejectionRate] = clamp(rejectionRate(c.alpha, d.specK)+r.NormFloat64()*0.012, 0, 1)
	}
	v[metrics.ErrorRate] = clamp(errRate+r.NormFloat64()*math.Sqrt(errRate*(1-errRate)/n), 0, 1)
	v[metrics.PreemptionRate] = poissonRate(op.preempt * m.served)

	// GPU: activity averaged over the group, clocks the minimum, power and
	// temperature the maximum (DESIGN's aggregation for a TP group).
	a := m.act
	switch d.profiling {
	case 0:
		v[metrics.SMUtil] = math.Round(clamp(a.busy+r.NormFloat64()*0.015, 0, 1)*100) / 100
	case 1:
		v[metrics.SMUtil] = math.Round(clamp(a.busy+r.NormFloat64()*0.015, 0, 1)*100) / 100
		v[metrics.TensorActive] = clamp(a.tensor+r.NormFloat64()*0.012, 0, 1)
		v[metrics.DRAMActive] = clamp(a.dram+r.NormFloat64()*0.015, 0, 1)
	default:
		v[metrics.SMUtil] = clamp(a.smActive+r.NormFloat64()*0.02, 0, 1)
		v[metrics.TensorActive] = clamp(a.tensor+r.NormFloat64()*0.012, 0, 1)
		v[metrics.DRAMActive] = clamp(a.dram+r.NormFloat64()*0.015, 0, 1)
	}
	memUsed := d.memUsedBase + c.neighbourMem + c.memUsedDelta
	memUsed = memUsed*(1-c.downFrac) + 0.01*c.downFrac
	v[metrics.GPUMemUsedFrac] = clamp(memUsed+r.NormFloat64()*0.001, 0, 1)
	minClk, maxP, maxT := math.Inf(1), 0.0, 0.0
	for j := range m.clocks {
		clk := d.clockMHz * m.clocks[j]
		if a.busy < 0.5 { // mostly idle GPUs drop towards idle clocks
			clk = d.gpu.idleSMMHz + (clk-d.gpu.idleSMMHz)*a.busy*2
		}
		clk += float64(r.IntN(3)-1) * 15 * 0.5
		minClk = math.Min(minClk, clk)
		maxP = math.Max(maxP, m.powerW[j]*(1+r.NormFloat64()*0.02))
		maxT = math.Max(maxT, m.temp[j]+r.NormFloat64()*0.6)
	}
	v[metrics.SMClock] = math.Round(minClk/15) * 15
	v[metrics.MemClock] = math.Round(d.gpu.memMHz * c.memClockScale)
	v[metrics.Power] = math.Round(maxP*10) / 10
	v[metrics.GPUTemp] = math.Round(maxT)
	return v
}

var (
	engineIDs = []string{metrics.E2E, metrics.E2EP99, metrics.TTFT, metrics.TTFTP99, metrics.TPOT, metrics.TPOTP99,
		metrics.QueueTime, metrics.PrefillTime, metrics.DecodeTime, metrics.ThroughputRPS, metrics.PromptTPS,
		metrics.GenerationTPS, metrics.RunningSeqs, metrics.QueueDepth, metrics.MeanPromptTokens,
		metrics.KVCacheUsage, metrics.KVCacheHitRate, metrics.RejectionRate, metrics.ErrorRate, metrics.PreemptionRate}
	gpuIDs = []string{metrics.SMUtil, metrics.TensorActive, metrics.DRAMActive, metrics.GPUMemUsedFrac,
		metrics.SMClock, metrics.MemClock, metrics.Power, metrics.GPUTemp}
)

// dropSome removes values the way scrapes lose them: a whole source now
// and then (a failed scrape), single fields rarely, and in the current
// point at most one field.
func dropSome(r *rand.Rand, points []metrics.Values) {
	last := len(points) - 1
	for i, p := range points[:last] {
		if r.Float64() < 0.004 {
			for _, id := range engineIDs {
				delete(p, id)
			}
		}
		if r.Float64() < 0.004 {
			for _, id := range gpuIDs {
				delete(p, id)
			}
		}
		for _, id := range metrics.IDs() { // catalog order keeps the random stream deterministic
			if _, ok := p[id]; ok && r.Float64() < 0.002 {
				delete(p, id)
			}
		}
		points[i] = p
	}
	if r.Float64() < 0.03 {
		cur := points[last]
		ids := make([]string, 0, len(cur))
		for _, id := range metrics.IDs() { // catalog order keeps this deterministic
			if _, ok := cur[id]; ok {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			delete(cur, ids[r.IntN(len(ids))])
		}
	}
}
