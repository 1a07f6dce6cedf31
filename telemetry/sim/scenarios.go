package sim

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// ScenarioOptions configure the labelled corpus.
type ScenarioOptions struct {
	N    int   // number of cases
	Seed int64 // the same seed gives the same corpus
	// DCGMFields is the counter file the GPUs are read with: DCGMDefault
	// leaves out the profiling fields in every case (gpu_sm_util is then
	// DCGM_FI_DEV_GPU_UTIL, the kernel duty cycle); empty or DCGMProfiling
	// reads them, except in about 12% of cases that lack them.
	DCGMFields DCGMFields
}

// scenarioStep is the physics step of corpus runs: coarser than live
// serving, which keeps 2,000 cases to seconds.
const scenarioStep = 15 * time.Second

// scenarioWeek is the Monday the corpus's simulated week starts on.
var scenarioWeek = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// Scenarios builds a labelled corpus: every fault cause plus "none", on
// varied models, accelerators and physical constants (each case draws its
// own GPU type, tensor-parallel degree, bandwidth and compute efficiency,
// per-step host and draft cost, KV block size, memory share, batch limits
// and load against capacity; see drawDeployment), scopes, severities (mild cases near the detection limit
// included), times of day and week, about 10% with a second concurrent
// fault (the label is the one that started first and is the stronger;
// Secondary names the other), and some cases without the DCGM profiling or the gateway fields.
// Values are computed from the simulated exposition the way the catalog's
// PromQL computes them. The result is deterministic for a seed.
func Scenarios(opts ScenarioOptions) []metrics.Case {
	if opts.N <= 0 {
		return nil
	}
	out := make([]metrics.Case, opts.N)
	workers := max(1, min(runtime.GOMAXPROCS(0), opts.N/16+1))
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = scenario(opts.Seed, i, opts.DCGMFields == DCGMDefault)
			}
		}()
	}
	for i := range opts.N {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// scenarioPlan is what one case simulates.
type scenarioPlan struct {
	label     string
	model     int
	instance  bool // the fault hits one instance
	caseScope bool // the case looks at that one instance, not the model
	at        time.Time
	severity  float64
	onset     time.Time
	second    string
	sev2      float64
	onset2    time.Time
	noProf    bool
	noGateway bool
}

func planScenario(seed int64, i int) scenarioPlan {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)*0x9e3779b97f4a7c15+1))
	labels := append(metrics.FaultCauses(), metrics.CauseNone)
	p := scenarioPlan{label: labels[i%len(labels)], model: rng.IntN(len(Models))}

	// When: a weekday peak, a night trough, or anywhere in the week.
	day := rng.IntN(7)
	var hour float64
	switch r := rng.Float64(); {
	case r < 0.3:
		hour = 12 + 5*rng.Float64()
	case r < 0.5:
		hour = 5 * rng.Float64()
	default:
		hour = 24 * rng.Float64()
	}
	if (p.label == metrics.CauseGPUUnderutilized || p.label == metrics.CauseKVCacheEviction) && (hour < 8 || hour > 21) {
		// A routing skew only shows while traffic flows, and an eviction
		// storm needs concurrent sequences to outgrow the cache.
		hour = 8 + 13*rng.Float64()
	}
	p.at = scenarioWeek.AddDate(0, 0, day).Add(time.Duration(hour * float64(time.Hour))).Truncate(time.Minute)

	if p.label == metrics.CauseNone {
		p.noProf = rng.Float64() < 0.12
		p.noGateway = rng.Float64() < 0.12
		return p
	}
	if rng.Float64() < 0.2 {
		p.severity = 0.1 + 0.2*rng.Float64() // mild: near the detection limit
	} else {
		p.severity = 0.3 + 0.7*rng.Float64()
	}
	p.instance = rng.Float64() < 0.4
	p.caseScope = p.instance && rng.Float64() < 0.6
	p.onset = p.at.Add(-time.Duration((1.5 + 3.5*rng.Float64()) * float64(time.Minute)))
	if rng.Float64() < 0.1 {
		others := slices.DeleteFunc(metrics.FaultCauses(), func(c string) bool { return c == p.label || masks(p.label, c) })
		p.second = others[rng.IntN(len(others))]
		// The second fault is the weaker one: it adds symptoms to the
		// labelled cause's signature rather than replacing it.
		p.sev2 = p.severity * (0.3 + 0.5*rng.Float64())
		room := p.at.Add(-time.Minute).Sub(p.onset) - 30*time.Second
		p.onset2 = p.onset.Add(30*time.Second + time.Duration(rng.Float64()*float64(max(room, 0))))
	}
	p.noProf = rng.Float64() < 0.12
	p.noGateway = rng.Float64() < 0.12 && p.label != metrics.CauseTransportLatency && p.second != metrics.CauseTransportLatency
	return p
}

// masks reports whether a second fault would cancel or swamp the first
// one's signature, so the pair is not a case of the first: a surge beyond
// capacity fills the GPUs a routing change has just emptied, and the other
// way round.
func masks(first, second string) bool {
	pair := [2]string{first, second}
	return pair == [2]string{metrics.CauseGPUUnderutilized, metrics.CauseQueueBacklog} ||
		pair == [2]string{metrics.CauseQueueBacklog, metrics.CauseGPUUnderutilized}
}

// deployment is the hardware and configuration one corpus case runs on.
type deployment struct {
	spec   ModelSpec
	consts Constants
	cfg    EngineConfig
}

// drawDeployment draws a case's accelerator, physical constants and engine
// configuration, and sizes its traffic to the capacity they give. The
// ranges span what real deployments show, so that rules cannot lean on
// one GPU's bandwidth, one engine's step overhead or one cache size.
func drawDeployment(seed int64, i int, spec ModelSpec) deployment {
	rng := rand.New(rand.NewPCG(uint64(seed)^0x5bd1e995, uint64(i)*0xbf58476d1ce4e5b9+7))
	uni := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	gpus := []GPUSpec{H100, H200, A100, L40S}
	hw := Constants{
		GPU:             gpus[rng.IntN(len(gpus))],
		BWEfficiency:    uni(0.6, 0.9),
		FLOPSEfficiency: uni(0.35, 0.7),
		HostStepMs:      uni(0.5, 3),
		SyncMsPerLayer:  uni(0.004, 0.02),
		DraftMsPerToken: uni(0.15, 0.6),
	}
	cfg := defaultConfig(spec, 1, 2)
	cfg.BlockSize = []int{8, 16, 32}[rng.IntN(3)]
	cfg.GPUMemoryUtilization = uni(0.82, 0.95)
	cfg.MaxNumSeqs = []int{128, 256, 512}[rng.IntN(3)]
	cfg.MaxNumBatchedTokens = []int{2048, 4096, 8192, 16384}[rng.IntN(4)]
	// The smallest tensor-parallel degree whose KV pool holds a working
	// set, sometimes one step larger, as operators size for latency.
	for cfg.TensorParallelSize < 8 && kvPoolTokensOn(hw.GPU, spec, cfg, 0) < 60000 {
		cfg.TensorParallelSize *= 2
	}
	if cfg.TensorParallelSize < 8 && rng.Float64() < 0.3 {
		cfg.TensorParallelSize *= 2
	}
	// Traffic: the weekday peak lands anywhere from a third of the
	// capacity these constants give to near saturation.
	spec.PeakRPS = capacityOf(spec, hw, cfg) * uni(0.3, 0.9)
	return deployment{spec: spec, consts: hw, cfg: cfg}
}

// capacityOf is the request rate one instance of spec serves at its batch
// limit on hw with cfg, as the engine physics computes it with an empty
// cache and no fault.
func capacityOf(spec ModelSpec, hw Constants, cfg EngineConfig) float64 {
	m := &model{spec: spec, cfg: cfg}
	in := &instance{model: m, cfg: cfg, consts: &hw, rng: rand.New(rand.NewPCG(1, 2)),
		hist: newHistograms(cfg.MaxModelLen), gpus: make([]gpuState, cfg.TensorParallelSize)}
	for i := range in.gpus {
		in.gpus[i] = gpuState{clock: 1, throttle: 1}
	}
	in.step(scenarioStep.Seconds(), 1, neutral())
	return in.capacity
}

func scenario(seed int64, i int, noProfiling bool) metrics.Case {
	p := planScenario(seed, i)
	if noProfiling {
		p.noProf = true
	}
	caseSeed := seed*7919 + int64(i)
	c := &Cluster{seed: caseSeed, now: p.at.Add(-68 * time.Minute), step: scenarioStep}
	dep := drawDeployment(seed, i, modelSpec(p.model))
	c.addModel(dep.spec, 2, dep.cfg.TensorParallelSize)
	m := c.models[0]
	m.cfg = dep.cfg
	for _, in := range m.instances {
		in.cfg = dep.cfg
		in.consts = &dep.consts
		in.setGPUs(c)
	}
	faultScope := metrics.Scope{Model: m.spec.Name}
	if p.instance {
		faultScope.Instance = m.instances[int(uint64(caseSeed)%2)].name
	}
	if p.label != metrics.CauseNone {
		c.faults = append(c.faults, faultEntry{id: "a", Fault: Fault{Cause: p.label, Scope: faultScope, Severity: p.severity, Start: p.onset}})
	}
	if p.second != "" {
		c.faults = append(c.faults, faultEntry{id: "b", Fault: Fault{Cause: p.second, Scope: faultScope, Severity: p.sev2, Start: p.onset2}})
	}
	scope := metrics.Scope{Model: m.spec.Name}
	insts := m.instances
	if p.caseScope {
		scope.Instance = faultScope.Instance
		insts = []*instance{m.instances[0]}
		if m.instances[1].name == scope.Instance {
			insts = []*instance{m.instances[1]}
		}
	}

	// One capture a minute from at-66m to at.
	caps := make([][]capture, 0, 67)
	for t := p.at.Add(-66 * time.Minute); !t.After(p.at); t = t.Add(time.Minute) {
		c.advance(t)
		row := make([]capture, len(insts))
		for j, in := range insts {
			row[j] = captureOf(in)
		}
		caps = append(caps, row)
	}
	drop := func(v metrics.Values) metrics.Values {
		if p.noProf {
			delete(v, metrics.TensorActive)
			delete(v, metrics.DRAMActive)
		}
		if p.noGateway {
			delete(v, metrics.GatewayE2E)
			delete(v, metrics.ArrivalRPS)
		}
		return v
	}
	cs := metrics.Case{Label: p.label}
	cs.At = p.at
	cs.Scope = scope
	n := len(caps)
	cs.Current = drop(catalogValues(caps[n-2], caps[n-1], !p.noProf))
	for k := 1; k <= 65; k++ { // points at at-65m .. at-1m
		cs.History = append(cs.History, metrics.Point{
			At:     p.at.Add(time.Duration(k-66) * time.Minute),
			Values: drop(catalogValues(caps[k-1], caps[k], !p.noProf)),
		})
	}
	if p.second != "" {
		cs.Secondary = []string{p.second}
	}
	return cs
}

// capture is what one scrape of an instance shows, as exposed.
type capture struct {
	cnt     counters
	hist    histograms
	running float64
	waiting float64
	kvUsage float64
	gpus    []gpuState
	gpu     GPUSpec
}

func captureOf(in *instance) capture {
	c := capture{cnt: in.cnt, hist: in.hist.catalogClone(), running: in.running,
		waiting: in.waiting, kvUsage: math.Round(in.kvUsage*1e6) / 1e6,
		gpus: append([]gpuState(nil), in.gpus...), gpu: in.constants().GPU}
	c.cnt.acceptedPos = nil
	return c
}

// catalogValues computes the catalog over one minute from two captures of
// the same instances, as the catalog's PromQL does over the exposition:
// rates of floored counters, means from histogram sums and counts,
// histogram_quantile over the summed bucket increases, and instant gauges
// aggregated with sum, avg, min or max.
func catalogValues(prev, cur []capture, profiling bool) metrics.Values {
	v := metrics.Values{}
	const window = 60.0
	delta := func(f func(c *capture) float64) float64 {
		s := 0.0
		for i := range cur {
			s += math.Floor(f(&cur[i])) - math.Floor(f(&prev[i]))
		}
		return s
	}
	set := func(id string, num, den, scale float64) {
		if den > 0 && !math.IsNaN(num) {
			v[id] = scale * num / den
		}
	}
	hmean := func(id string, pick func(h *histograms) *histogram) {
		set(id, delta(func(c *capture) float64 { return pick(&c.hist).sum * 1e6 })/1e6,
			delta(func(c *capture) float64 { return pick(&c.hist).count }), 1000)
	}
	hp99 := func(id string, pick func(h *histograms) *histogram) {
		bounds := pick(&cur[0].hist).bounds
		sum := &histogram{bounds: bounds, counts: make([]float64, len(bounds))}
		old := &histogram{bounds: bounds, counts: make([]float64, len(bounds))}
		for i := range cur {
			a, b := pick(&cur[i].hist), pick(&prev[i].hist)
			if len(a.counts) != len(sum.counts) || len(b.counts) != len(sum.counts) {
				return
			}
			for j := range a.counts {
				sum.counts[j] += a.counts[j]
				old.counts[j] += b.counts[j]
			}
			sum.count += a.count
			old.count += b.count
		}
		if q := sum.quantileDelta(old, 0.99); !math.IsNaN(q) {
			v[id] = 1000 * q
		}
	}
	hmean(metrics.GatewayE2E, func(h *histograms) *histogram { return h.gateway })
	hmean(metrics.E2E, func(h *histograms) *histogram { return h.e2e })
	hp99(metrics.E2EP99, func(h *histograms) *histogram { return h.e2e })
	hmean(metrics.TTFT, func(h *histograms) *histogram { return h.ttft })
	hp99(metrics.TTFTP99, func(h *histograms) *histogram { return h.ttft })
	// TPOT is per output token, from the per-request histogram
	// (vllm:request_time_per_output_token_seconds), as the catalog reads it.
	hmean(metrics.TPOT, func(h *histograms) *histogram { return h.tpot })
	hp99(metrics.TPOTP99, func(h *histograms) *histogram { return h.tpot })
	hmean(metrics.QueueTime, func(h *histograms) *histogram { return h.queue })
	hmean(metrics.PrefillTime, func(h *histograms) *histogram { return h.prefill })
	hmean(metrics.DecodeTime, func(h *histograms) *histogram { return h.decode })

	finished := delta(func(c *capture) float64 {
		s := 0.0
		for _, x := range c.cnt.success {
			s += math.Floor(x)
		}
		return s
	})
	set(metrics.ThroughputRPS, finished, window, 1)
	set(metrics.ArrivalRPS, delta(func(c *capture) float64 { return c.cnt.gatewayRequests }), window, 1)
	set(metrics.PromptTPS, delta(func(c *capture) float64 { return c.cnt.prompt }), window, 1)
	set(metrics.GenerationTPS, delta(func(c *capture) float64 { return c.cnt.generation }), window, 1)
	set(metrics.MeanPromptTokens, delta(func(c *capture) float64 { return c.hist.prompt.sum }),
		delta(func(c *capture) float64 { return c.hist.prompt.count }), 1)
	set(metrics.KVCacheHitRate, delta(func(c *capture) float64 { return c.cnt.prefixHits }),
		delta(func(c *capture) float64 { return c.cnt.prefixQueries }), 1)
	if dt := delta(func(c *capture) float64 { return c.cnt.draftTokens }); dt > 0 {
		v[metrics.RejectionRate] = clamp(1-delta(func(c *capture) float64 { return c.cnt.accepted })/dt, 0, 1)
	}
	// As the catalog reads vLLM: errors are finished_reason="error" only;
	// client aborts are their own share, and the API server's 5xx include
	// the requests a dead engine core never finished.
	set(metrics.ErrorRate, delta(func(c *capture) float64 { return c.cnt.success[3] }), finished, 1)
	set(metrics.AbortRate, delta(func(c *capture) float64 { return c.cnt.success[2] }), finished, 1)
	http5xx := delta(func(c *capture) float64 { return c.cnt.success[3] + c.cnt.api5xx })
	http2xx := delta(func(c *capture) float64 {
		return c.cnt.success[0] + c.cnt.success[1] + c.cnt.success[2] + c.cnt.success[4]
	})
	set(metrics.APIErrorRate, http5xx, http2xx+http5xx, 1)
	set(metrics.PreemptionRate, delta(func(c *capture) float64 { return c.cnt.preemptions }), window, 1)

	var running, waiting, kv float64
	var sm, util, tensor, dram, used, free, n float64
	clock, memClock, power, temp := math.Inf(1), math.Inf(1), 0.0, 0.0
	for i := range cur {
		running += cur[i].running
		waiting += cur[i].waiting
		kv += cur[i].kvUsage
		for _, g := range cur[i].gpus {
			n++
			sm += round6(g.smActive)
			util += g.util
			tensor += round6(g.tensor)
			dram += round6(g.dram)
			used += g.fbUsedMiB
			free += g.fbFreeMiB
			clock = math.Min(clock, math.Round(g.clock*cur[i].gpu.MaxSMClockMHz))
			memClock = math.Min(memClock, cur[i].gpu.MemClockMHz)
			power = math.Max(power, round6(g.powerW))
			temp = math.Max(temp, math.Round(g.tempC))
		}
	}
	v[metrics.RunningSeqs] = running
	v[metrics.QueueDepth] = waiting
	v[metrics.KVCacheUsage] = kv / float64(len(cur))
	if n > 0 {
		if profiling {
			v[metrics.SMUtil] = sm / n
			v[metrics.TensorActive] = tensor / n
			v[metrics.DRAMActive] = dram / n
		} else {
			v[metrics.SMUtil] = util / n / 100
		}
		v[metrics.GPUMemUsedFrac] = used / (used + free)
		v[metrics.SMClock] = clock
		v[metrics.MemClock] = memClock
		v[metrics.Power] = power
		v[metrics.GPUTemp] = temp
	}
	for id, x := range v {
		v[id] = significant(x, 5)
	}
	return v
}

// significant rounds x to n significant digits, as a dashboard would show
// it; it keeps the corpus compact.
func significant(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	e := n - 1 - int(math.Floor(math.Log10(math.Abs(x))))
	if e < 0 || e > 22 {
		return x
	}
	p := math.Pow10(e)
	return math.Round(x*p) / p
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
