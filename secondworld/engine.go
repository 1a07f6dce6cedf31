package secondworld

import "math"

func pow(x, y float64) float64 { return math.Pow(x, y) }

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// deployment is one engine instance: hardware, model, engine configuration
// and the traffic it normally serves. It does not change during a case;
// faults change the per-minute conditions instead.
type deployment struct {
	gpu        gpu
	model      model
	tp         int
	wBytes     float64 // bytes per weight (2 BF16, 1 FP8)
	fp8Compute bool
	kvTok      float64 // KV bytes per token per GPU
	blockSize  float64
	kvBlocks   float64 // KV blocks in the pool
	memUtil    float64 // gpu_memory_utilization

	maxSeqs, maxBatchTokens float64

	prefixCaching bool
	specK         int     // 0: no speculative decoding
	specDraftCost float64 // per proposed token, as a fraction of the target's weight-read time

	hostBase, hostPerSeq, hostPerTok, hostOverlap float64 // seconds; overlap in 0..1
	frontendMs                                    float64
	transportMs                                   float64
	clockMHz                                      float64 // loaded SM clock of a healthy GPU
	tin                                           float64
	gpuRth                                        []float64 // per-GPU thermal resistance spread

	// traffic
	promptMean, outMean float64
	outCV2              float64 // squared coefficient of variation of output length
	promptSigma         float64 // lognormal sigma of prompt length (p99 tails)
	sharedFrac          float64 // fraction of prompt tokens that are a reusable prefix
	workingFrac         float64 // reusable-prefix working set / KV pool
	prefixGroups        float64 // distinct prefixes alive at once
	alpha               float64 // speculative per-token acceptance
	clientTimeoutS      float64
	baseErr             float64

	// telemetry
	profiling   int // 0: no DCGM profiling fields, 1: default counters (no SM_ACTIVE), 2: SM_ACTIVE too
	gateway     bool
	phases      bool
	memUsedBase float64
}

// conditions are the physical inputs for one minute: the healthy values
// with the active faults applied.
type conditions struct {
	arrival             float64 // req/s reaching the engine
	promptMean, outMean float64
	sharedFrac          float64
	workingFrac         float64
	kvBlocks            float64
	maxSeqs             float64
	maxBatchTokens      float64
	hostScale           float64
	hostPerSeqScale     float64
	frontendMs          float64
	memClockScale       float64
	neighbourBW         float64 // fraction of peak DRAM bandwidth taken by a co-located process
	neighbourMem        float64 // framebuffer fraction held by it
	alpha               float64
	errFrac             float64
	downFrac            float64
	coldCache           float64 // 0..1: how much of the prefix cache was just wiped
	transportMs         float64
	abortFrac           float64
	rthScale            []float64
	tinDelta            []float64
	powerCap            []float64 // W, per GPU
	hwSlow              []float64 // forced clock ratio (1 = none)
	memUsedDelta        float64
}

// gpuEnv is what the GPUs deliver in a minute.
type gpuEnv struct {
	clock   float64 // SM clock ratio of the slowest GPU, relative to the healthy loaded clock
	bw      float64 // usable DRAM bandwidth per GPU, bytes/s
	peak    float64 // usable tensor FLOP/s per GPU at full clock
	bwScale float64 // memory clock scale
}

// stepCost is the cost of one engine step.
type stepCost struct {
	tGPU, tComm, tStep, flops, bytes, tokens float64
}

// step is the roofline of one engine step with n decoding sequences and p
// prefill tokens; ctx is the mean context of a decoding sequence.
func (d *deployment) step(c *conditions, g gpuEnv, n, p, ctx, prefillCtx float64) stepCost {
	m := d.model
	q := 1.0
	if d.specK > 0 {
		q = float64(d.specK + 1)
	}
	t := n*q + p
	if t < 1 {
		t = 1
	}
	wRead := m.weightBytesRead(t, d.wBytes, d.tp)
	kvRead := n * ctx * d.kvTok
	bytes := wRead + kvRead + t*float64(m.hidden)*2*float64(m.layers)*6/float64(d.tp)
	flops := (2*m.activeB*1e9*t + 4*float64(m.layers*m.qDim)*(n*q*ctx+p*prefillCtx)) / float64(d.tp)
	bw := g.bw * (1 - c.neighbourBW)
	tMem := bytes / bw
	if g.clock < 0.7 { // memory-bound kernels need SM issue rate too
		tMem /= g.clock / 0.7
	}
	eff := 0.72 * t / (t + 48)
	tCmp := flops / (g.peak * eff * g.clock)
	tGPU := math.Max(tMem, tCmp) + 0.25*math.Min(tMem, tCmp) + float64(m.layers)*4e-6/g.clock
	if d.specK > 0 {
		tGPU += float64(d.specK) * d.specDraftCost * wRead / bw
	}
	var tComm float64
	if d.tp > 1 {
		msg := t * float64(m.hidden) * 2
		per := d.gpu.linkLatUs*1e-6 + 2*float64(d.tp-1)/float64(d.tp)*msg/(d.gpu.linkGBs*1e9)
		tComm = 2 * float64(m.layers) * per
	}
	tGPU += tComm
	host := (d.hostBase + d.hostPerSeq*c.hostPerSeqScale*(n+1) + d.hostPerTok*t) * c.hostScale
	o := d.hostOverlap
	tStep := math.Max(tGPU, host) + (1-o)*math.Min(tGPU, host)
	return stepCost{tGPU: tGPU, tComm: tComm, tStep: tStep, flops: flops, bytes: bytes, tokens: t}
}

// operating is the engine's steady state at a given completion rate.
type operating struct {
	x                float64 // completions/s
	cost             stepCost
	beta             float64 // tokens emitted per sequence per step
	nDec, nPre       float64
	prefillS         float64
	decodeS          float64
	rhoP             float64 // share of the step's spare token budget used by prefill
	hit              float64
	used             float64 // KV blocks in use
	preempt          float64 // fraction of requests preempted once
	recomputeTok     float64 // prefill tokens recomputed per request (average)
	feasible         bool
	limitedBy        string
	prefillTokPerReq float64
}

func (o operating) running() float64 { return o.nDec + o.nPre }

// acceptedPerStep is the expected tokens one sequence emits per verification
// step with k drafts of per-token acceptance a (the bonus token included).
func acceptedPerStep(a float64, k int) float64 {
	if k == 0 {
		return 1
	}
	if a >= 0.999 {
		return float64(k + 1)
	}
	return (1 - pow(a, float64(k+1))) / (1 - a)
}

// rejectionRate is 1 - accepted/proposed draft tokens.
func rejectionRate(a float64, k int) float64 {
	if k == 0 {
		return 0
	}
	acc := 0.0
	p := 1.0
	for i := 0; i < k; i++ {
		p *= a
		acc += p
	}
	return 1 - acc/float64(k)
}

// solve finds the steady state at completion rate x by fixed-point iteration
// over step time, prefix hits and KV occupancy.
func (d *deployment) solve(c *conditions, g gpuEnv, x float64) operating {
	beta := acceptedPerStep(c.alpha, d.specK)
	q := 1.0
	if d.specK > 0 {
		q = float64(d.specK + 1)
	}
	o := operating{x: x, beta: beta, feasible: true}
	tau := 0.01
	hit := 0.0
	if d.prefixCaching {
		hit = c.sharedFrac * 0.9
	}
	preempt := 0.0
	bs := d.blockSize
	workingBlocks := math.Max(1, c.workingFrac*c.kvBlocks)
	for it := 0; it < 30; it++ {
		u := math.Max(1, c.promptMean*(1-hit))
		recompute := preempt * (c.promptMean*(1-0.5*hit) + c.outMean/2)
		rp := x * (u + recompute)
		budgetLeft := c.maxBatchTokens - o.nDec*q
		if budgetLeft < 16 {
			budgetLeft = 16
		}
		rhoP := rp * tau / budgetLeft
		steps := (u+recompute)/budgetLeft + 1
		wait := 1.0
		if rhoP < 0.97 {
			wait += rhoP / (2 * (1 - rhoP))
		} else {
			wait += 0.97 / 0.06
		}
		prefillS := steps * tau * wait
		decodeS := math.Max(0, c.outMean-1) / beta * tau * (1 + 1.5*preempt)
		nDec := x * decodeS
		nPre := x * prefillS
		ctx := c.promptMean + c.outMean*(1+d.outCV2)/2
		cost := d.step(c, g, nDec, math.Min(rp*tau, budgetLeft), ctx, c.promptMean/2)
		prev := tau
		tau = 0.5*tau + 0.5*cost.tStep

		// KV blocks: private tokens per decoding sequence, half a prompt per
		// prefilling one, shared prefixes once per live prefix group.
		shared := 0.0
		if d.prefixCaching {
			shared = c.sharedFrac
		}
		privDec := (c.promptMean*(1-shared)+c.outMean*(1+d.outCV2)/2)/bs + 0.5
		privPre := c.promptMean*(1-shared)/2/bs + 0.5
		groups := math.Min(nDec+nPre, d.prefixGroups)
		used := nDec*privDec + nPre*privPre + groups*shared*c.promptMean/bs
		free := math.Max(0, c.kvBlocks-used)
		if d.prefixCaching {
			r := 1 - math.Exp(-2*free/workingBlocks)
			live := math.Min(1, groups/d.prefixGroups) // prefixes of running requests always hit
			r = math.Max(r, 0.6*live)
			tail := 1 - bs/(2*math.Max(bs, shared*c.promptMean))
			hit = shared * r * tail * (1 - c.coldCache)
		}
		sigma := math.Sqrt(nDec+nPre+1) * privDec * 1.2
		over := 0.5 * math.Erfc(-(used-c.kvBlocks)/(sigma*math.Sqrt2))
		preempt = 0.5*preempt + 0.5*0.8*over

		o.cost, o.nDec, o.nPre, o.prefillS, o.decodeS = cost, nDec, nPre, prefillS, decodeS
		o.rhoP, o.hit, o.used, o.preempt, o.recomputeTok = rhoP, hit, used, preempt, recompute
		o.prefillTokPerReq = u
		if it > 6 && math.Abs(tau-prev) < 1e-4*tau {
			break
		}
	}
	switch {
	case o.nDec+o.nPre > c.maxSeqs:
		o.feasible, o.limitedBy = false, "max_num_seqs"
	case o.used > 0.985*c.kvBlocks:
		o.feasible, o.limitedBy = false, "kv_cache"
	case o.rhoP > 0.97:
		o.feasible, o.limitedBy = false, "token_budget"
	case math.IsNaN(o.cost.tStep) || o.cost.tStep > 5:
		o.feasible, o.limitedBy = false, "step_time"
	}
	return o
}

// capacity is the largest completion rate the engine sustains under c: the
// knee where running sequences, KV blocks or the token budget run out.
func (d *deployment) capacity(c *conditions, g gpuEnv) operating {
	return d.capacityNear(c, g, 0)
}

// capacityNear is capacity with a guess (0: none) that narrows the search.
func (d *deployment) capacityNear(c *conditions, g gpuEnv, guess float64) operating {
	lo, hi := 0.0, 1.0
	if guess > 0 {
		hi = guess * 1.1
		for !d.solve(c, g, hi/1.2).feasible && hi > 1e-4 {
			hi /= 1.2
		}
		lo = hi / 1.2
	}
	for d.solve(c, g, hi).feasible && hi < 1e5 {
		lo, hi = hi, hi*1.5
	}
	for hi-lo > 0.002*hi {
		mid := (lo + hi) / 2
		if d.solve(c, g, mid).feasible {
			lo = mid
		} else {
			hi = mid
		}
	}
	op := d.solve(c, g, lo)
	op.limitedBy = d.solve(c, g, hi).limitedBy
	return op
}

// erlangC is the probability that an arrival waits in an M/M/c queue with
// offered load a = c*rho.
func erlangC(c int, rho float64) float64 {
	if rho >= 1 {
		return 1
	}
	if c < 1 {
		c = 1
	}
	a := rho * float64(c)
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b / (1 - rho*(1-b))
}
