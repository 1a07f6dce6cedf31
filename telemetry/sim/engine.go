package sim

import (
	"math"
	"math/rand/v2"
)

// physics holds the physical parameters faults act on. The zero fault is
// neutral(): every multiplier 1, every addition 0.
type physics struct {
	bwFactor      float64   // effective HBM bandwidth available to the engine
	neighbourDRAM float64   // share of HBM bandwidth a co-tenant consumes
	hostMs        float64   // extra CPU-side time per engine step, ms
	thermalR      float64   // multiplier on the thermal resistance (cooling)
	ambientC      float64   // added inlet temperature
	kvClaimBytes  float64   // per-GPU memory a co-tenant process holds, bytes
	powerCapW     []float64 // per-GPU power cap below the board limit (nil: none)
	keep          float64   // share of the instance's routed traffic that still reaches it
	promptScale   float64   // multiplier on prompt length
	ctxGrowth     float64   // multiplier on context length from diverse long sessions
	prefixShare   float64   // multiplier on the shared-prefix share
	acceptance    float64   // multiplier on the draft acceptance probability
	surgeRPS      float64   // arrivals of a client surge at this instance, req/s (0: none)
	maxSeqs       int       // cap on max_num_seqs from a misconfiguration (0: none)
	netDelayS     float64   // added gateway/network delay, seconds
	gwBaseS       float64   // the healthy path's own time outside the engine, seconds
	errorProb     float64   // added probability that the engine fails a request (finished_reason="error")
	apiFail       float64   // share of arrivals the API server answers 5xx itself: the engine core is down
	xid           float64   // last XID error raised
	hotGPU        int       // GPU index that takes the full thermal fault (-1: all)
}

func neutral() physics {
	return physics{bwFactor: 1, thermalR: 1, keep: 1, promptScale: 1, gwBaseS: 0.006,
		ctxGrowth: 1, prefixShare: 1, acceptance: 1, hotGPU: -1}
}

// DCGM clocks-event-reason bits (DCGM_CLOCKS_EVENT_REASON_*).
const (
	clockReasonIdle       = 0x1
	clockReasonSWPowerCap = 0x4
	clockReasonSWThermal  = 0x20
)

// gpuState is one GPU of an instance's tensor-parallel group.
type gpuState struct {
	index     int
	uuid, bus string
	offsetC   float64 // board-to-board thermal variation
	tempC     float64
	memTempC  float64
	clock     float64 // SM clock ratio to the max clock
	// clockReasons is the DCGM clocks-event-reason bitmask: why the clock
	// is below its maximum (clockReason* bits).
	clockReasons float64
	throttle     float64 // thermal controller state, 1 = no slowdown
	powerW       float64
	limitW       float64 // enforced power limit
	energyMJ     float64
	util         float64 // GPU_UTIL, percent
	copyUtil     float64
	grActive     float64
	smActive     float64
	tensor       float64
	dram         float64
	fbUsedMiB    float64
	fbFreeMiB    float64
	pcieTX       float64
	pcieRX       float64
	xid          float64
}

// counters are the cumulative vLLM and gateway counters of an instance.
type counters struct {
	prompt, generation, preemptions float64
	success                         [5]float64 // stop, length, abort, error, repetition
	prefixQueries, prefixHits       float64
	drafts, draftTokens, accepted   float64
	acceptedPos                     []float64
	gatewayRequests                 float64
	// api5xx counts requests the API server answered 5xx without the
	// engine finishing them (a dead engine core): they reach no
	// finished_reason, only http_requests_total.
	api5xx float64
	// decodeSeconds and prefillSeconds are the summed per-request decode
	// and prefill times (llama-server's tokens_predicted_seconds_total
	// and prompt_seconds_total).
	decodeSeconds, prefillSeconds float64
}

var finishReasons = [5]string{"stop", "length", "abort", "error", "repetition"}

// interval accumulates one histogram flush interval: request counts and
// request-weighted sums of per-request times.
type interval struct {
	span                                                 float64
	fin, itlEvents, steps, stepTokens                    float64
	ttft, itl, tpot, e2e, queue, prefill, decode, gw, lp float64
	lo                                                   float64
}

// histograms are the vLLM histograms of an instance plus the gateway's.
type histograms struct {
	ttft, itl, tpot, e2e, queue, prefill, decode, inference *histogram
	prompt, generation, iteration, gateway                  *histogram
}

func newHistograms(maxModelLen int) histograms {
	b125 := buckets125(maxModelLen)
	return histograms{
		ttft: newHistogram(ttftBuckets), itl: newHistogram(itlBuckets), tpot: newHistogram(itlBuckets),
		e2e: newHistogram(requestLatencyBuckets), queue: newHistogram(requestLatencyBuckets),
		prefill: newHistogram(requestLatencyBuckets), decode: newHistogram(requestLatencyBuckets),
		inference: newHistogram(requestLatencyBuckets),
		prompt:    newHistogram(b125), generation: newHistogram(b125),
		iteration: newHistogram(iterationTokenBuckets), gateway: newHistogram(gatewayBuckets),
	}
}

// catalogClone copies the histograms the catalog reads (the rest stay nil).
func (h histograms) catalogClone() histograms {
	return histograms{ttft: h.ttft.clone(), itl: h.itl.clone(), tpot: h.tpot.clone(), e2e: h.e2e.clone(), queue: h.queue.clone(),
		prefill: h.prefill.clone(), decode: h.decode.clone(), prompt: h.prompt.clone(), gateway: h.gateway.clone()}
}

// instance is one vLLM engine replica (a pod) on a tensor-parallel group.
type instance struct {
	model *model
	name  string
	host  string // the node the instance's GPUs are on
	// weight is the instance's share of the model's traffic at the
	// router, relative to the other instances (1 by default, 0: cordoned).
	weight float64
	cfg    EngineConfig
	gpus   []gpuState
	rng    *rand.Rand

	queue    float64 // fluid backlog of requests beyond capacity
	running  float64 // sequences in the batch (instant gauge, whole)
	waiting  float64 // requests waiting (instant gauge, whole)
	kvUsage  float64
	hitRate  float64
	capacity float64 // requests per second at the batch limit
	lpAvg    float64 // mean prompt tokens of the requests in flight
	loAvg    float64 // mean generated tokens of the requests in flight
	lamAvg   float64 // arrival rate the batch has caught up with
	svc      float64 // last mean service time, seconds
	// wStat is the queueing wait the engine has built up towards its
	// stationary value; wSet says it has been set.
	wStat  float64
	wSet   bool
	kvNeed float64 // unique KV tokens the running batch needs
	// consts are the deployment's physical constants; nil means
	// DefaultConstants (the live cluster).
	consts *Constants
	ctxSeq float64               // unique KV tokens of one running sequence
	onset  map[string]onsetState // per fault id, the state it started from

	layouts  [3]*page     // series layout per page kind, rebuilt after a config change
	histFams []histFamily // the engine page's histograms, rebuilt after a config change

	// specRate and specLen are the last step's draft acceptance (accepted
	// / proposed) and tokens per step, which SGLang and TensorRT-LLM
	// export as gauges.
	specRate, specLen float64

	cnt   counters
	hist  histograms
	acc   interval
	carry struct{ fin, itl, steps float64 }
}

// abandonAfter is the mean time a queued client waits before giving up.
const abandonAfter = 120.0

// gatewayQueueS bounds the engine's waiting queue: the gateway rejects
// requests once the queue holds this many seconds of work at the engine's
// capacity (and at least gatewayQueueMin requests).
const (
	gatewayQueueS   = 60.0
	gatewayQueueMin = 32.0
)

// stepResult are the request-level quantities of one step, for tests.
type stepResult struct {
	arrival, thr, batch, ttft, itl, tpot, e2e, queue, prefill, gateway float64
}

// fano interpolates the trace's index of dispersion of arrival counts for
// a window of dt seconds (log-linear between 5 s and 60 s).
func fanoAt(tr TraceStats, dt float64) float64 {
	switch {
	case dt <= 5:
		return 1 + (tr.Fano5s-1)*dt/5
	case dt >= 60:
		return tr.Fano60s
	}
	f := math.Log(dt/5) / math.Log(12)
	return math.Exp(math.Log(tr.Fano5s)*(1-f) + math.Log(tr.Fano60s)*f)
}

// constants are the instance's physical constants.
func (in *instance) constants() Constants {
	if in.consts != nil {
		return *in.consts
	}
	return DefaultConstants()
}

// poolTokens is the instance's KV pool in tokens with its configuration.
func (in *instance) poolTokens() float64 {
	return kvPoolTokensOn(in.constants().GPU, in.model.spec, in.cfg, 0)
}

// step advances the instance by dt seconds with a mean arrival rate of
// lambda requests per second under the physical parameters ph.
func (in *instance) step(dt, lambda float64, ph physics) stepResult {
	hw := in.constants()
	spec, gpu, cfg := in.model.spec, hw.GPU, in.cfg
	tr := traceTables[spec.Trace]
	g := float64(cfg.TensorParallelSize)

	// Request shape.
	// Request shape. The mean size of one step's finished requests varies
	// as a sample mean does (lpObs, loObs); the requests in flight, which
	// the engine physics sees, average over about half a minute (lp, lo).
	sampleCV := math.Min(0.5, 1/math.Sqrt(math.Max(1, lambda*dt)))
	lpObs := math.Min(tr.MeanCtx*ph.promptScale*ph.ctxGrowth*math.Exp(sampleCV*in.rng.NormFloat64()), 0.9*float64(cfg.MaxModelLen))
	loObs := math.Max(2, tr.MeanGen*math.Exp(sampleCV*in.rng.NormFloat64()))
	if in.lpAvg == 0 {
		in.lpAvg, in.loAvg = lpObs, loObs
	}
	shapeRelax := 1 - math.Exp(-dt/30)
	in.lpAvg += (lpObs - in.lpAvg) * shapeRelax
	in.loAvg += (loObs - in.loAvg) * shapeRelax
	lp, lo := in.lpAvg, in.loAvg
	share := spec.SharedPrefix * ph.prefixShare / (ph.promptScale * ph.ctxGrowth) * (1 + 0.04*in.rng.NormFloat64())

	// Hardware as the engine sees it now.
	clock := 1.0
	for _, gs := range in.gpus {
		clock = math.Min(clock, gs.clock)
	}
	bw := gpu.HBMBytesPerS * hw.BWEfficiency * ph.bwFactor * (0.55 + 0.45*clock)
	flops := gpu.PeakFLOPS * hw.FLOPSEfficiency * clock
	kvTok := spec.KVBytesPerToken()
	wGPU := spec.WeightBytes() / g
	kvTokens := kvPoolTokensOn(gpu, spec, cfg, ph.kvClaimBytes)
	kvTokens = math.Max(kvTokens, 64*float64(cfg.BlockSize))

	// Prefix cache: shared prefixes stay resident unless the cache is full.
	residency := 1 - 0.8*clamp((in.kvUsage-0.85)/0.15, 0, 1)
	hit := 0.0
	if cfg.EnablePrefixCaching {
		hit = math.Min(0.95, (share+0.05)*residency)
	}
	in.hitRate = hit
	lpUnc := lp * (1 - hit)
	ctxSeq := lp*(1-share*residency) + lo/2 // unique KV per running sequence
	ctxRead := lp + lo/2                    // KV read per sequence per step
	nkv := kvTokens / ctxSeq
	maxSeqs := float64(cfg.MaxNumSeqs)
	if ph.maxSeqs > 0 {
		maxSeqs = math.Min(maxSeqs, float64(ph.maxSeqs))
	}
	nmax := math.Max(1, math.Min(maxSeqs, nkv))

	// Speculative decoding: expected accepted drafts per step.
	k := float64(cfg.NumSpeculativeTokens)
	alpha := clamp(spec.Acceptance*ph.acceptance*(1+0.02*in.rng.NormFloat64()), 0.01, 0.99)
	accepted := 0.0
	if k > 0 {
		accepted = alpha * (1 - math.Pow(alpha, k)) / (1 - alpha)
	}
	perStep := 1 + accepted
	if k > 0 {
		in.specRate, in.specLen = accepted/k, perStep // SGLang's and TensorRT-LLM's per-step gauges
	}

	hostS := (hw.HostStepMs+ph.hostMs)/1000 + hw.SyncMsPerLayer/1000*float64(spec.Layers)*boolf(g > 1)
	draftS := k * hw.DraftMsPerToken / 1000
	stepGPU := func(b float64) float64 {
		mem := (wGPU + b*ctxRead*kvTok/g) / bw
		cmp := 2 * spec.Params * b * (k + 1) / (g * flops)
		return math.Max(mem, cmp) + draftS
	}
	stepT := func(b float64) float64 { return hostS + stepGPU(b) }
	cp := 2 * spec.Params / (g * flops) * (1 + lp/16384) // s per prefill token

	preempt := 0.0 // probability that a request is preempted once
	if in.kvUsage > 0.9 {
		preempt = 0.6 * math.Pow((in.kvUsage-0.9)/0.1, 2)
	}
	recompute := preempt * ctxSeq
	prefillFrac := func(thr float64) float64 { return math.Min(0.95, thr*(lpUnc+recompute)*cp) }
	budget := math.Max(256, float64(cfg.MaxNumBatchedTokens))
	tPre := func(b float64) float64 {
		avail := math.Max(64, budget-b*(k+1))
		chunks := math.Ceil(math.Max(1, lpUnc) / avail)
		return chunks * (stepT(b) + math.Min(lpUnc, avail)*cp)
	}
	// Inter-token time: prefill takes a share fp of the engine's steps.
	// With chunked prefill a step carries the decodes plus at most the
	// rest of the token budget in prompt chunks, so a prompt burst slows
	// decoding to at most one full-budget step; prompts beyond that wait.
	itlAt := func(b, fp float64) float64 {
		return math.Min(stepT(b)/(1-fp), stepT(b)+math.Max(0, budget-b*(k+1))*cp)
	}
	service := func(b, thr float64) float64 {
		return tPre(b) + (lo-1)/perStep*itlAt(b, prefillFrac(thr))
	}

	// Capacity: the throughput at which the batch limit is reached. With
	// the batch at nmax, thr*(A + n*D/(1-c*thr)) = nmax is a quadratic in thr.
	A, D, cc := tPre(nmax), (lo-1)/perStep*stepT(nmax), (lpUnc+recompute)*cp
	mu := nmax / (A + D)
	if cc > 0 && A > 0 {
		bq := A + D + nmax*cc
		mu = (bq - math.Sqrt(math.Max(0, bq*bq-4*A*cc*nmax))) / (2 * A * cc)
		mu = math.Min(mu, 0.95/cc)
	}
	mu = math.Max(mu, 1e-6)
	in.capacity = mu

	// Arrivals with the trace's burstiness.
	// A surge is client traffic beyond capacity at the gateway; the part
	// the router sends elsewhere (keep < 1) never arrives here.
	if ph.surgeRPS > 0 {
		lambda = math.Max(lambda, ph.surgeRPS*ph.keep)
	}
	arr := 0.0
	if lambda > 0 {
		mean := lambda * dt
		s2 := math.Log(1 + (1+spec.Burstiness*(fanoAt(tr, dt)-1))/mean)
		arr = lambda * math.Exp(math.Sqrt(s2)*in.rng.NormFloat64()-s2/2)
	}
	// While the engine core is down, the API server fails requests at
	// once (vLLM's EngineDeadError answers 500); the engine never sees them.
	arrived := arr
	arr *= 1 - ph.apiFail
	in.cnt.api5xx += (arrived - arr) * dt

	// The running batch follows arrivals with a lag of about one service
	// time, so short steps do not turn every burst into a batch spike.
	tau := clamp(in.svc, 1, 60)
	if in.lamAvg == 0 {
		in.lamAvg = arr
	}
	in.lamAvg += (arr - in.lamAvg) * (1 - math.Exp(-dt/tau))
	lam := in.lamAvg

	// Fluid queue: what exceeds capacity waits.
	offered := lam + in.queue/dt
	thr := offered
	if offered > mu {
		thr = mu
	}
	// Clients give up on requests that wait too long; vLLM counts them
	// as aborted.
	abandoned := in.queue * (1 - math.Exp(-dt/abandonAfter))
	in.queue = math.Max(0, in.queue+(lam-thr)*dt-abandoned)
	in.cnt.success[2] += abandoned
	// The gateway stops admitting once the engine holds more than
	// gatewayQueueS of work; it answers the rest 429 itself, so they never
	// reach vLLM's counters.
	in.queue = math.Min(in.queue, math.Max(gatewayQueueMin, mu*gatewayQueueS))

	// Little's law for the running batch, B = thr*S(B), solved by Newton
	// steps on the locally linear service time.
	b := thr * service(0, thr)
	for range 4 {
		s0 := service(b, thr)
		beta := service(b+1, thr) - s0
		den := 1 - thr*beta
		if den <= 0 {
			b = nmax
			break
		}
		b = thr * (s0 - beta*b) / den
		if b >= nmax {
			break
		}
	}
	b = clamp(b, 0, nmax)
	rho := math.Min(thr/mu, 0.985)
	fp := prefillFrac(thr)
	st := stepT(b)
	svc := service(b, thr)

	// Queueing: a many-server wait with a knee near capacity
	// (Allen-Cunneen with Sakasegawa's approximation), plus the fluid backlog.
	ca2 := math.Min(tr.Fano5s, 3)
	c := math.Max(1, nmax)
	// Requests also queue for the prefill token budget, one chunk per
	// step: a single server busy a fraction fp of the time.
	fpq := math.Min(fp, 0.97)
	wStat := (ca2 + 1) / 2 * (math.Pow(rho, math.Sqrt(2*(c+1))-1)/(c*(1-rho))*svc + fpq/(1-fpq)*tPre(b)/2)
	// A stationary queue takes time to build: near capacity a queue
	// relaxes over about 1/(mu(1-sqrt(rho))^2) (Morse's relaxation time),
	// minutes at rho 0.98 against a burst of a few seconds. The wait
	// follows its stationary value with that lag; arrivals beyond
	// capacity wait in the fluid backlog at once.
	relax := math.Max(1/(mu*math.Pow(1-math.Sqrt(rho), 2)), tPre(b)/math.Pow(1-math.Sqrt(fpq), 2))
	if !in.wSet {
		in.wStat, in.wSet = wStat, true
	}
	in.wStat += (wStat - in.wStat) * (1 - math.Exp(-dt/relax))
	wq := in.wStat + st/2 + in.queue/mu + preempt*tPre(b)
	// The gauges count whole requests; rounding at random keeps their
	// expectation equal to the fluid values.
	in.running = math.Floor(b + in.rng.Float64())
	in.waiting = math.Floor(math.Max(0, in.queue+lam*(wq-st/2)) + in.rng.Float64())
	in.svc = svc
	in.kvUsage = math.Min(1, b*ctxSeq/kvTokens)
	in.kvNeed, in.ctxSeq = b*ctxSeq, ctxSeq

	// Request latencies.
	pre := tPre(b) * (1 + preempt)
	itl := itlAt(b, fp)
	decode := (lo - 1) / perStep * itl
	ttft := 0.003 + lp*0.4e-6 + wq + pre
	e2e := ttft + decode + 0.002
	gw := e2e + ph.gwBaseS + ph.netDelayS

	// Counters.
	fin := thr * dt
	// vLLM's finish reasons: "error" is the engine's own request-level
	// failure (answered 500); "abort" is the client cancelling (a closed
	// stream or a stop button), a small share whatever the engine does.
	errP := clamp(0.0002+ph.errorProb, 0, 1)
	abortP := clamp(0.001, 0, 1-errP)
	lengthP := 0.06
	if spec.Trace == "code" {
		lengthP = 0.02
	}
	in.cnt.success[0] += fin * (1 - errP - abortP - lengthP)
	in.cnt.success[1] += fin * lengthP
	in.cnt.success[2] += fin * abortP
	in.cnt.success[3] += fin * errP
	in.cnt.prompt += fin * lpObs
	in.cnt.generation += fin * loObs
	in.cnt.decodeSeconds += fin * decode
	in.cnt.prefillSeconds += fin * pre
	in.cnt.preemptions += fin * preempt
	if cfg.EnablePrefixCaching {
		in.cnt.prefixQueries += fin * lpObs
		in.cnt.prefixHits += fin * lpObs * hit
	}
	busy := 1 - math.Exp(-b)
	decodeSteps := busy * (1 - fp) / st
	if k > 0 {
		drafts := decodeSteps * b * dt
		in.cnt.drafts += drafts
		in.cnt.draftTokens += drafts * k
		in.cnt.accepted += drafts * accepted
		for i := range in.cnt.acceptedPos {
			in.cnt.acceptedPos[i] += drafts * math.Pow(alpha, float64(i+1))
		}
	}
	in.cnt.gatewayRequests += arrived * dt

	// Interval sums for the histograms.
	a := &in.acc
	a.span += dt
	a.fin += fin
	a.itlEvents += fin * (lo - 1) / perStep
	a.steps += decodeSteps * dt
	a.stepTokens += (thr*lpUnc + decodeSteps*b*(k+1)) * dt
	a.ttft += fin * ttft
	a.itl += fin * itl
	a.tpot += fin * decode / (lo - 1)
	a.e2e += fin * e2e
	a.queue += fin * wq
	a.prefill += fin * pre
	a.decode += fin * decode
	a.gw += fin * gw
	a.lp += fin * lpObs
	a.lo += fin * loObs

	// GPUs: activity, power, temperature and clocks.
	gpuFrac := stepGPU(b) / st
	busyDec := busy * (1 - fp) * gpuFrac
	occ := 0.3 + 0.65*(1-math.Exp(-b*(k+1)/40))
	sm := busyDec*occ + fp*0.93
	gr := math.Min(1, busyDec+fp)
	flopsDone := (thr*lpUnc + decodeSteps*b*(k+1)) * 2 * spec.Params / g
	// Every engine step streams the weight shard and the running batch's
	// KV; with chunked prefill a prompt chunk rides in a step with the
	// decodes, and its KV is written once. A bigger batch therefore moves
	// more bytes per step whether the step is decoding or prefilling.
	prefillSteps := thr * math.Ceil(math.Max(1, lpUnc+recompute)/math.Max(64, budget-b*(k+1)))
	bytesRead := (decodeSteps+prefillSteps)*(wGPU+b*ctxRead*kvTok/g) + thr*(lpUnc+recompute)*kvTok/g
	for i := range in.gpus {
		gs := &in.gpus[i]
		jit := func(s float64) float64 { return 1 + s*in.rng.NormFloat64() }
		gs.smActive = clamp(sm*jit(0.015), 0, 1)
		gs.grActive = clamp(gr*jit(0.01), 0, 1)
		gs.tensor = clamp(flopsDone/(gpu.PeakFLOPS*gs.clock)*jit(0.02), 0, 0.95)
		gs.dram = clamp((bytesRead/gpu.HBMBytesPerS+ph.neighbourDRAM)*jit(0.015), 0, 0.98)
		gs.util = math.Round(100 * clamp(1.15*gr+0.02*in.rng.NormFloat64(), 0, 1))
		gs.copyUtil = math.Round(100 * clamp(gs.dram*0.85, 0, 1))

		sev := 1.0
		if ph.hotGPU >= 0 && ph.hotGPU != i {
			sev = 0.5
		}
		thermalR := gpu.ThermalCPerW * (1 + (ph.thermalR-1)*sev)
		ambient := gpu.AmbientC + ph.ambientC*sev + gs.offsetC
		limit := gpu.PowerLimitW
		if i < len(ph.powerCapW) {
			limit = math.Min(limit, gpu.PowerLimitW-(gpu.PowerLimitW-ph.powerCapW[i])*sev)
		}
		demand := (gpu.PowerLimitW - gpu.IdlePowerW) * (0.55*gs.smActive + 0.3*gs.dram + 0.35*gs.tensor)
		powerClock := 1.0
		if gpu.IdlePowerW+demand > limit {
			powerClock = math.Sqrt((limit - gpu.IdlePowerW) / demand)
		}
		// Thermal slowdown: an integral controller holds the die near
		// the slowdown temperature.
		if gs.tempC > gpu.SlowdownC {
			gs.throttle -= dt / 30 * (gs.tempC - gpu.SlowdownC) / 8
		} else {
			gs.throttle += dt / 60 * 0.5
		}
		gs.throttle = clamp(gs.throttle, 0.35, 1)
		gs.clock = math.Min(powerClock, gs.throttle)
		gs.clockReasons = 0
		if gs.smActive < 0.01 {
			gs.clockReasons += clockReasonIdle
		}
		if powerClock < 1 {
			gs.clockReasons += clockReasonSWPowerCap
		}
		if gs.throttle < 1 {
			gs.clockReasons += clockReasonSWThermal
		}
		gs.clock = math.Floor(gs.clock*gpu.MaxSMClockMHz/15) * 15 / gpu.MaxSMClockMHz
		gs.powerW = math.Min(limit, gpu.IdlePowerW+demand*gs.clock*gs.clock) * jit(0.01)
		gs.limitW = math.Round(limit)
		steady := ambient + thermalR*gs.powerW
		gs.tempC += (steady - gs.tempC) * (1 - math.Exp(-dt/gpu.ThermalTauS))
		gs.memTempC = gs.tempC + 3 + 6*gs.dram
		gs.energyMJ += gs.powerW * dt * 1000
		gs.fbUsedMiB = math.Round(cfg.GPUMemoryUtilization*gpu.MemoryMiB - 310)
		gs.fbFreeMiB = gpu.MemoryMiB - gs.fbUsedMiB - gpu.ReservedMiB
		gs.pcieTX = (thr*(lo*4+2000) + 1.5e6) * jit(0.1)
		gs.pcieRX = (thr*(lp*4+4000) + 2.0e6) * jit(0.1)
		gs.xid = ph.xid
	}
	return stepResult{arrival: arr, thr: thr, batch: b, ttft: ttft, itl: itl, tpot: decode / (lo - 1),
		e2e: e2e, queue: wq, prefill: pre, gateway: gw}
}

// flush moves the interval's requests into the histograms.
func (in *instance) flush() {
	a := in.acc
	in.acc = interval{}
	if a.fin <= 0 {
		return
	}
	tr := traceTables[in.model.spec.Trace]
	whole := func(x float64, carry *float64) int {
		x += *carry
		n := math.Floor(x)
		*carry = x - n
		return int(n)
	}
	n := whole(a.fin, &in.carry.fin)
	ne := whole(a.itlEvents, &in.carry.itl)
	ns := whole(a.steps, &in.carry.steps)
	m := func(x float64) float64 { return x / a.fin }
	h := in.hist
	h.ttft.observeLognormal(n, m(a.ttft), 0.6)
	h.itl.observeLognormal(ne, m(a.itl), 0.3)
	h.tpot.observeLognormal(n, m(a.tpot), 0.25)
	h.e2e.observeLognormal(n, m(a.e2e), 0.75)
	h.queue.observeLognormal(n, m(a.queue), 1.1)
	h.prefill.observeLognormal(n, m(a.prefill), 0.7)
	h.decode.observeLognormal(n, m(a.decode), 0.8)
	h.inference.observeLognormal(n, m(a.prefill)+m(a.decode), 0.8)
	h.gateway.observeLognormal(n, m(a.gw), 0.75)
	if ns > 0 {
		h.iteration.observeLognormal(ns, a.stepTokens/a.steps, 0.5)
	}
	lpScale, loScale := m(a.lp)/tr.MeanCtx, m(a.lo)/tr.MeanGen
	h.prompt.observeCDF(n, float64(n)*m(a.lp), func(x float64) float64 { return quantileCDF(tr.Context, lpScale, x) })
	h.generation.observeCDF(n, float64(n)*m(a.lo), func(x float64) float64 { return quantileCDF(tr.Generated, loScale, x) })
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
