package secondworld

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Options configure a corpus.
type Options struct {
	// N is the number of cases, 0..MaxCases.
	N int
	// Seed makes the corpus reproducible: the same seed gives the same cases.
	Seed int64
	// Start is the earliest snapshot time; zero means 2026-01-05T00:00Z.
	Start time.Time
}

// MaxCases bounds Options.N.
const MaxCases = 1_000_000

// HistoryPoints is the number of one-minute history points per case
// (at-65m .. at-1m), as the live console captures them.
const HistoryPoints = 65

// ErrOptions marks invalid options.
var ErrOptions = errors.New("secondworld: invalid options")

// Validate reports what is wrong with o.
func (o Options) Validate() error {
	switch {
	case o.N < 0:
		return fmt.Errorf("%w: N is %d, it must not be negative", ErrOptions, o.N)
	case o.N > MaxCases:
		return fmt.Errorf("%w: N is %d, above the limit %d", ErrOptions, o.N, MaxCases)
	case !o.Start.IsZero() && (o.Start.Year() < 2000 || o.Start.Year() > 2200):
		return fmt.Errorf("%w: Start %s is outside the years 2000..2200", ErrOptions, o.Start.Format(time.RFC3339))
	}
	return nil
}

// Generate returns opts.N labelled cases. Each case is drawn from its own
// random stream (seed, index), so a corpus is deterministic for a seed and a
// longer corpus extends a shorter one.
func Generate(opts Options) ([]metrics.Case, error) {
	traces, err := generate(opts)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.Case, len(traces))
	for i, t := range traces {
		out[i] = t.c
	}
	return out, nil
}

// trace is a case plus the physics behind it, for tests.
type trace struct {
	c         metrics.Case
	d         *deployment
	primary   *fault
	secondary *fault
	capacity  []float64 // completions/s the engine could sustain, per point (history then current)
	served    []float64 // completions/s it delivered (before measurement noise)
	clock     []float64 // SM clock ratio of the slowest GPU
	kvUse     []float64
}

// causeWeights: the label mix of a corpus. "none" is over-represented a
// little because false alarms are common in practice.
var causeWeights = []struct {
	id string
	w  float64
}{
	{metrics.CauseNone, 14},
	{metrics.CauseKVCacheEviction, 8},
	{metrics.CauseQueueBacklog, 8},
	{metrics.CauseGPUUnderutilized, 7.5},
	{metrics.CauseSpecDecodeDegradation, 7},
	{metrics.CauseMemoryBandwidthBound, 8},
	{metrics.CauseLongPromptPrefill, 8},
	{metrics.CausePrefixCacheMiss, 8},
	{metrics.CauseGPUThrottling, 8},
	{metrics.CauseTransportLatency, 7.5},
	{metrics.CauseEngineErrors, 8},
	{metrics.CauseHostOverhead, 8},
}

func pickCause(r *rand.Rand, exclude string) string {
	total := 0.0
	for _, c := range causeWeights {
		if c.id != exclude {
			total += c.w
		}
	}
	x := r.Float64() * total
	for _, c := range causeWeights {
		if c.id == exclude {
			continue
		}
		if x < c.w {
			return c.id
		}
		x -= c.w
	}
	return causeWeights[len(causeWeights)-1].id
}

func generate(opts Options) ([]trace, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	start := opts.Start
	if start.IsZero() {
		start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	}
	out := make([]trace, opts.N)
	// Cases are independent streams, so workers can fill them in any order
	// without changing the result.
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)+0x9e3779b97f4a7c15))
				out[i] = oneCase(r, start)
			}
		}()
	}
	for i := range out {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, nil
}

func oneCase(r *rand.Rand, start time.Time) trace {
	label := pickCause(r, "")
	d := drawDeployment(r, label)
	at := start.Add(time.Duration(r.IntN(300*24*60)) * time.Minute).UTC()

	healthy := d.healthyConditions()
	g := d.gpuEnvAt(1, 1)
	capOp := d.capacity(&healthy, g)
	tr := trace{d: d}

	// Load: a fraction of capacity, with diurnal drift and bursts over the
	// hour, scaled so the healthy hour stays below 95% of capacity.
	rho := uniform(r, 0.2, 0.95)
	amp := uniform(r, 0.05, 0.3)
	phase := uniform(r, 0, 2*math.Pi)
	mult := make([]float64, HistoryPoints+1)
	ar := 0.0
	peak := 0.0
	for i := range mult {
		tod := float64(at.Hour()*60+at.Minute()+i-HistoryPoints) / 1440
		ar = 0.8*ar + r.NormFloat64()*0.035
		mult[i] = (1 + amp*math.Sin(2*math.Pi*tod+phase)) * math.Exp(ar)
		peak = math.Max(peak, mult[i])
	}
	// Minutes with longer prompts and outputs than usual have less
	// capacity; the healthy hour must stay below it too.
	heavy := healthy
	heavy.promptMean *= 1.12
	heavy.outMean *= 1.12
	heavyCap := d.capacity(&heavy, g).x
	lambda0 := rho * capOp.x
	if lambda0*peak > 0.93*heavyCap {
		lambda0 = 0.93 * heavyCap / peak
	}
	healthy.arrival = lambda0
	b := baseline{capacity: capOp.x, op: d.solve(&healthy, g, lambda0), arrival: lambda0}
	b.powerW = d.power(activityOf(d, b.op, g, &healthy), 1)

	var faults []*fault
	var benign benignSwing
	if label == metrics.CauseNone {
		benign = drawBenign(r, lambda0, lambda0*peak, heavyCap)
	} else {
		sev := uniform(r, 0.03, 1)
		f := drawFault(r, label, sev, d, b)
		tr.primary = &f
		faults = append(faults, &f)
		if r.Float64() < 0.25 {
			second := pickCause(r, label)
			if second != metrics.CauseNone {
				if second == metrics.CauseSpecDecodeDegradation && d.specK == 0 {
					second = metrics.CauseHostOverhead
				}
				if second != label {
					s := drawFault(r, second, uniform(r, 0.1, 0.45), d, b)
					tr.secondary = &s
					faults = append(faults, &s)
				}
			}
		}
	}

	// Noise streams per minute, drawn up front so every case consumes the
	// same amount of randomness whatever its physics does.
	promptNoise := make([]float64, HistoryPoints+1)
	outNoise := make([]float64, HistoryPoints+1)
	pa, oa := 0.0, 0.0
	for i := range promptNoise {
		pa = 0.7*pa + r.NormFloat64()*0.03
		oa = 0.7*oa + r.NormFloat64()*0.03
		// the hour's mix wanders, within bounds the healthy load was sized for
		promptNoise[i], outNoise[i] = clamp(pa, -0.09, 0.09), clamp(oa, -0.09, 0.09)
	}

	st := newGPUState(d)
	queue := 0.0
	points := make([]metrics.Values, HistoryPoints+1)
	for i := 0; i <= HistoryPoints; i++ {
		t := float64(i - HistoryPoints) // the window (t-1, t] in minutes relative to at
		c := d.healthyConditions()
		c.arrival = lambda0 * mult[i]
		c.promptMean *= math.Exp(promptNoise[i])
		c.outMean *= math.Exp(outNoise[i])
		benign.apply(&c, t, lambda0)
		for _, f := range faults {
			f.apply(&c, f.level(t), d, b)
			f.restartEffect(&c, t)
		}
		if i == 0 {
			for k := 0; k < 4; k++ { // settle clocks and temperatures
				st.warm(d, &c, b)
			}
		}
		m := d.minute(&c, st, &queue)
		tr.capacity = append(tr.capacity, m.capacity)
		tr.served = append(tr.served, m.served)
		tr.clock = append(tr.clock, m.clockRatio)
		tr.kvUse = append(tr.kvUse, m.kvUse)
		points[i] = d.measure(r, m)
	}
	dropSome(r, points)

	c := metrics.Case{Label: label}
	c.At = at
	c.Scope = metrics.Scope{Model: d.model.name, Instance: instanceName(r, d)}
	for i := 0; i < HistoryPoints; i++ {
		c.History = append(c.History, metrics.Point{
			At:     at.Add(time.Duration(i-HistoryPoints) * time.Minute),
			Values: points[i],
		})
	}
	c.Current = points[HistoryPoints]
	if tr.secondary != nil {
		c.Secondary = []string{tr.secondary.cause}
	}
	tr.c = c
	return tr
}

func instanceName(r *rand.Rand, d *deployment) string {
	return fmt.Sprintf("vllm-%s-%05x-%d", shortGPU(d.gpu.name), r.Uint32()&0xfffff, r.IntN(4))
}

func shortGPU(name string) string {
	switch name[:4] {
	case "A100":
		return "a100"
	case "H100":
		return "h100"
	case "H200":
		return "h200"
	default:
		return "l40s"
	}
}

// benignSwing is how a healthy case moves: nothing, a load step, a load
// drop, a short burst, or a drift in prompt lengths.
type benignSwing struct {
	kind  int
	onset float64
	size  float64
	dur   float64
}

// Load swings stay below 88% of the capacity left on a heavy-mix minute,
// on top of the hour's own peak.
func drawBenign(r *rand.Rand, lambda0, peakLoad, capacity float64) benignSwing {
	room := math.Max(0, 0.88*capacity-peakLoad)
	b := benignSwing{onset: uniform(r, 0.5, 20), dur: uniform(r, 1, 3)}
	switch x := r.Float64(); {
	case x < 0.4:
		b.kind = 0
	case x < 0.6:
		b.kind = 1
		b.size = math.Min(uniform(r, 0.15, 0.6)*lambda0, room)
	case x < 0.8:
		b.kind = 2
		b.size = -uniform(r, 0.2, 0.6) * lambda0
	case x < 0.9:
		b.kind = 3
		b.size = room * uniform(r, 0.5, 1)
	default:
		b.kind = 4
		b.size = uniform(r, -0.25, 0.04) // longer prompts would eat the headroom: that is a fault, not a swing
	}
	return b
}

func (b benignSwing) apply(c *conditions, t, lambda0 float64) {
	since := t + b.onset
	if since <= 0 || b.kind == 0 {
		return
	}
	x := math.Min(1, since)
	switch b.kind {
	case 1, 2:
		c.arrival += x * b.size
	case 3:
		if since <= b.dur+1 {
			c.arrival += x * b.size
		}
	case 4:
		c.promptMean *= 1 + x*b.size
	}
	c.arrival = math.Max(0.01*lambda0, c.arrival)
}

// drawDeployment picks hardware, model, engine configuration, traffic and
// telemetry for one instance.
func drawDeployment(r *rand.Rand, label string) *deployment {
	d := &deployment{}
	d.gpu = gpus[weighted(r, len(gpus), func(i int) float64 { return gpus[i].shareCount })]
	d.model = models[weighted(r, len(models), func(i int) float64 { return models[i].shareCount })]
	d.wBytes = 2
	if d.gpu.fp8 && r.Float64() < 0.3 {
		d.wBytes, d.fp8Compute = 1, true
	} else if !d.gpu.fp8 && r.Float64() < 0.1 {
		d.wBytes = 1 // weight-only FP8 on Ampere: less to read, BF16 math
	}
	memBytes := d.gpu.memGiB * (1 << 30)
	weights := d.model.paramsB * 1e9 * d.wBytes
	d.tp = 1
	for d.tp < 8 && weights/float64(d.tp) > 0.6*memBytes {
		d.tp *= 2
	}
	if d.tp < 8 && r.Float64() < 0.25 {
		d.tp *= 2
	}
	kvDtype := 2.0
	if r.Float64() < 0.2 {
		kvDtype = 1
	}
	d.kvTok = d.model.kvBytesPerToken(kvDtype, d.tp)
	d.blockSize = 16
	if r.Float64() < 0.2 {
		d.blockSize = 32
	}
	d.memUtil = uniform(r, 0.85, 0.95)
	reserve := uniform(r, 2, 5) * (1 << 30) // activations, CUDA graphs, NCCL buffers
	pool := d.memUtil*memBytes - weights/float64(d.tp) - reserve
	for pool < 4*(1<<30) && d.tp < 8 {
		d.tp *= 2
		d.kvTok = d.model.kvBytesPerToken(kvDtype, d.tp)
		pool = d.memUtil*memBytes - weights/float64(d.tp) - reserve
	}
	pool = math.Max(pool, 2*(1<<30))
	d.kvBlocks = math.Floor(pool / (d.kvTok * d.blockSize))
	d.memUsedBase = d.memUtil + uniform(r, 0.003, 0.012)
	d.maxSeqs = []float64{64, 128, 256, 256, 512}[r.IntN(5)]
	d.maxBatchTokens = []float64{2048, 4096, 8192, 8192, 16384}[r.IntN(5)]
	d.prefixCaching = r.Float64() < 0.9 || label == metrics.CausePrefixCacheMiss || label == metrics.CauseKVCacheEviction
	if r.Float64() < 0.25 || label == metrics.CauseSpecDecodeDegradation {
		d.specK = 2 + r.IntN(4)
		d.specDraftCost = uniform(r, 0.02, 0.08)
		d.alpha = uniform(r, 0.55, 0.85)
	}
	d.hostBase = uniform(r, 0.8e-3, 2.5e-3)
	if d.tp > 1 {
		d.hostBase += 0.4e-3
	}
	d.hostPerSeq = uniform(r, 4e-6, 15e-6)
	d.hostPerTok = uniform(r, 0.1e-6, 0.6e-6)
	d.hostOverlap = uniform(r, 0.5, 0.85)
	d.frontendMs = uniform(r, 2, 10)
	d.transportMs = uniform(r, 8, 60)
	d.clockMHz = math.Round(d.gpu.maxSMMHz*uniform(r, 0.93, 1)/15) * 15
	d.tin = uniform(r, 22, 32)
	d.gpuRth = make([]float64, d.tp)
	for i := range d.gpuRth {
		d.gpuRth[i] = d.gpu.rth * uniform(r, 0.92, 1.08)
	}

	// traffic mix
	type mix struct{ p0, p1, o0, o1, s0, s1, w0, w1 float64 }
	mixes := []mix{
		{400, 1500, 150, 450, 0.4, 0.75, 0.1, 0.5},    // chat with multi-turn history
		{1500, 6000, 120, 350, 0.05, 0.3, 0.05, 0.2},  // retrieval-augmented
		{800, 3000, 150, 600, 0.3, 0.7, 0.1, 0.4},     // code assistant
		{2000, 8000, 60, 300, 0.6, 0.9, 0.2, 0.8},     // agents: long shared contexts
		{2000, 7000, 100, 300, 0.02, 0.15, 0.05, 0.2}, // summarisation
	}
	mx := mixes[r.IntN(len(mixes))]
	d.promptMean = math.Exp(uniform(r, math.Log(mx.p0), math.Log(mx.p1)))
	d.promptMean = math.Min(d.promptMean, float64(d.model.maxLen)/6)
	d.outMean = uniform(r, mx.o0, mx.o1)
	// one request at its p99 must fit in an eighth of the pool
	for (d.promptMean*4+d.outMean*3)/d.blockSize > d.kvBlocks/8 && d.promptMean > 100 {
		d.promptMean *= 0.8
		d.outMean *= 0.9
	}
	d.sharedFrac = uniform(r, mx.s0, mx.s1)
	d.workingFrac = uniform(r, mx.w0, mx.w1)
	d.prefixGroups = uniform(r, 2, 30)
	d.outCV2 = uniform(r, 0.6, 1.4)
	d.promptSigma = uniform(r, 0.5, 1.1)
	d.clientTimeoutS = uniform(r, 30, 180)
	d.baseErr = uniform(r, 0.0005, 0.004)

	switch x := r.Float64(); {
	case x < 0.35:
		d.profiling = 0
	case x < 0.7:
		d.profiling = 1
	default:
		d.profiling = 2
	}
	d.gateway = r.Float64() < 0.72 || label == metrics.CauseTransportLatency
	d.phases = r.Float64() < 0.9
	return d
}

func weighted(r *rand.Rand, n int, w func(int) float64) int {
	total := 0.0
	for i := 0; i < n; i++ {
		total += w(i)
	}
	x := r.Float64() * total
	for i := 0; i < n; i++ {
		if x < w(i) {
			return i
		}
		x -= w(i)
	}
	return n - 1
}

func (d *deployment) healthyConditions() conditions {
	c := conditions{
		promptMean:      d.promptMean,
		outMean:         d.outMean,
		sharedFrac:      d.sharedFrac,
		workingFrac:     d.workingFrac,
		kvBlocks:        d.kvBlocks,
		maxSeqs:         d.maxSeqs,
		maxBatchTokens:  d.maxBatchTokens,
		hostScale:       1,
		hostPerSeqScale: 1,
		frontendMs:      d.frontendMs,
		memClockScale:   1,
		alpha:           d.alpha,
		transportMs:     d.transportMs,
		rthScale:        make([]float64, d.tp),
		tinDelta:        make([]float64, d.tp),
		powerCap:        make([]float64, d.tp),
		hwSlow:          make([]float64, d.tp),
	}
	for i := 0; i < d.tp; i++ {
		c.rthScale[i], c.powerCap[i], c.hwSlow[i] = 1, d.gpu.tdpW, 1
	}
	if !d.prefixCaching {
		c.sharedFrac = 0
	}
	return c
}

func (d *deployment) gpuEnvAt(clock, memScale float64) gpuEnv {
	peak := d.gpu.tflops * 1e12 * d.clockMHz / d.gpu.maxSMMHz
	if d.fp8Compute {
		peak *= 2
	}
	return gpuEnv{clock: clock, bw: d.gpu.bwGBs * 1e9 * 0.82 * memScale, peak: peak, bwScale: memScale}
}
