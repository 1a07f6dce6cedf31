package forecast

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/casebook/casebook/metrics"
)

// SimOptions configures Simulate. The zero value means the defaults
// documented on each field.
type SimOptions struct {
	// Weeks is the number of evaluated weeks (default 2).
	Weeks int
	// Warmup is the history before the evaluated weeks (default 14 days).
	Warmup time.Duration
	// Step is the sampling interval (default 1 minute).
	Step time.Duration
	// Seed makes the series reproducible.
	Seed int64
	// Start is the first sample time (default 2026-01-05 00:00 UTC, a
	// Monday).
	Start time.Time
	// Metrics are the catalog ids to simulate (default the whole catalog).
	Metrics []string
	// AnomaliesPerDay is the mean rate of anomaly windows per metric
	// (default 1).
	AnomaliesPerDay float64
	// BurstsPerDay is the mean rate of benign one- or two-sample bursts
	// per metric (default 12).
	BurstsPerDay float64
}

func (o SimOptions) withDefaults() SimOptions {
	if o.Weeks <= 0 {
		o.Weeks = 2
	}
	if o.Warmup <= 0 {
		o.Warmup = 14 * Day
	}
	if o.Step <= 0 {
		o.Step = time.Minute
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	}
	if len(o.Metrics) == 0 {
		o.Metrics = metrics.IDs()
	}
	if o.AnomaliesPerDay <= 0 {
		o.AnomaliesPerDay = 1
	}
	if o.BurstsPerDay <= 0 {
		o.BurstsPerDay = 12
	}
	return o
}

// Window is a labelled anomaly: the series is anomalous in [Start, End).
type Window struct {
	Start, End time.Time
	// Size is the relative change at full effect (0.3 = 30%).
	Size float64
	// Direction is the side the series moved to.
	Direction metrics.Direction
}

// SimSeries is one simulated metric with its labelled windows.
type SimSeries struct {
	Metric   metrics.Metric
	Samples  []metrics.Sample
	Windows  []Window  // every window, warm-up included
	EvalFrom time.Time // start of the evaluated weeks
}

// loadElasticity is how each catalog metric follows traffic: the metric
// scales as load^e. Traffic itself (arrivals, completions, tokens) and
// what Little's law ties to it (running sequences, KV blocks in use) scale
// one to one; queues grow faster than load; GPU activity grows more slowly
// because batching amortises steps; power rises from an idle floor and
// temperature from the room's; latencies rise mildly with batch size;
// prompt length, memory reservation, hit rate and error ratio do not care
// about traffic, and clocks barely.
var loadElasticity = map[string]float64{
	metrics.ArrivalRPS: 1, metrics.ThroughputRPS: 1, metrics.PromptTPS: 1, metrics.GenerationTPS: 1,
	metrics.RunningSeqs: 1, metrics.KVCacheUsage: 1,
	metrics.QueueDepth: 2, metrics.QueueTime: 1.5, metrics.RejectionRate: 1.5, metrics.PreemptionRate: 1.5,
	metrics.SMUtil: 0.7, metrics.TensorActive: 0.7, metrics.DRAMActive: 0.7,
	metrics.Power: 0.4, metrics.GPUTemp: 0.15,
	metrics.TTFT: 0.5, metrics.TTFTP99: 0.5, metrics.PrefillTime: 0.3,
	metrics.TPOT: 0.25, metrics.TPOTP99: 0.25, metrics.DecodeTime: 0.25,
	metrics.E2E: 0.3, metrics.E2EP99: 0.3, metrics.GatewayE2E: 0.3,
	metrics.SMClock: -0.03, metrics.MemClock: 0, metrics.GPUMemUsedFrac: 0,
	metrics.MeanPromptTokens: 0, metrics.KVCacheHitRate: 0, metrics.ErrorRate: 0,
}

// typical levels of catalog metrics for one healthy instance.
var simLevels = map[string]float64{
	metrics.GatewayE2E: 3200, metrics.E2E: 3000, metrics.E2EP99: 9000,
	metrics.TTFT: 250, metrics.TTFTP99: 900, metrics.TPOT: 25, metrics.TPOTP99: 45,
	metrics.QueueTime: 40, metrics.PrefillTime: 180, metrics.DecodeTime: 2700,
	metrics.ThroughputRPS: 12, metrics.ArrivalRPS: 12, metrics.PromptTPS: 18000,
	metrics.GenerationTPS: 2400, metrics.RunningSeqs: 48, metrics.QueueDepth: 6,
	metrics.MeanPromptTokens: 1500, metrics.SMUtil: 0.62, metrics.TensorActive: 0.35,
	metrics.DRAMActive: 0.45, metrics.GPUMemUsedFrac: 0.9, metrics.KVCacheUsage: 0.55,
	metrics.SMClock: 1750, metrics.MemClock: 2600, metrics.Power: 480, metrics.GPUTemp: 66,
	metrics.KVCacheHitRate: 0.7, metrics.RejectionRate: 0.3, metrics.ErrorRate: 0.01,
	metrics.PreemptionRate: 0.2,
}

// load is the traffic level at t in about [0.3, 1]: a business-day bump
// (peak mid-afternoon UTC, a smaller evening shoulder), lower on weekends.
func load(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	d := 0.35 + 0.55*math.Exp(-sq((h-14)/4.0)) + 0.15*math.Exp(-sq((h-20)/2.0))
	if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
		d *= 0.65
	}
	return d
}

func sq(x float64) float64 { return x * x }

// Simulate generates catalog metrics from a documented generative model:
//
//	v(t) = L * (load(t)/0.6)^a * (1 + trend(t)) * (1 + e(t)) * anomaly(t)
//
// with L a typical level per metric, a its elasticity to load (see
// loadElasticity, jittered per series), load the daily and weekly traffic
// cycle, a piecewise-linear trend (a few percent a week,
// one slope change), e an AR(1) process (phi 0.6) with Student-t (5 degrees
// of freedom) innovations of 1.5..4% marginal spread, and benign bursts of
// one or two samples (20..60%, either way). Anomaly windows arrive as a
// Poisson process (AnomaliesPerDay), last 5..120 minutes (log-uniform),
// ramp in over 0..10 minutes, and move the metric in its bad direction
// (either way for Both) by a relative size of 15..100% (log-uniform; a
// fall of size s divides by 1+s). Ratios are clamped to [0, 1], counts,
// temperatures and clocks are quantised.
func Simulate(opts SimOptions) []SimSeries {
	opts = opts.withDefaults()
	evalFrom := opts.Start.Add(opts.Warmup)
	end := evalFrom.Add(time.Duration(opts.Weeks) * Week)
	n := int(end.Sub(opts.Start) / opts.Step)
	var out []SimSeries
	for mi, id := range opts.Metrics {
		m, ok := metrics.Lookup(id)
		if !ok {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(mi)+1))
		out = append(out, simulateOne(m, rng, opts, evalFrom, n))
	}
	return out
}

func simulateOne(m metrics.Metric, rng *rand.Rand, opts SimOptions, evalFrom time.Time, n int) SimSeries {
	level := simLevels[m.ID]
	if level == 0 {
		level = 10
	}
	// The elasticity to load is physical per metric, jittered by +-25%
	// so that no two series share one shape.
	elast := loadElasticity[m.ID] * (0.75 + 0.5*rng.Float64())
	noise := 0.015 + 0.025*rng.Float64()
	slope0 := (rng.Float64()*0.08 - 0.03) / float64(Week/opts.Step) // per step
	slope1 := (rng.Float64()*0.08 - 0.03) / float64(Week/opts.Step)
	cp := rng.IntN(n)
	const phi = 0.6
	innov := noise * math.Sqrt(1-phi*phi) * math.Sqrt(3.0/5.0) // t5 has variance 5/3

	s := SimSeries{Metric: m, EvalFrom: evalFrom, Samples: make([]metrics.Sample, n)}
	// Anomaly windows and bursts as Poisson processes over the whole span.
	perStep := float64(opts.Step) / float64(Day)
	effect := make([]float64, n) // multiplicative anomaly factor - 1
	for i := 0; i < n; {
		i += int(rng.ExpFloat64() / (opts.AnomaliesPerDay * perStep))
		if i >= n {
			break
		}
		dur := time.Duration(math.Exp(math.Log(5)+rng.Float64()*(math.Log(120)-math.Log(5))) * float64(time.Minute))
		steps := max(1, int(dur/opts.Step))
		size := math.Exp(math.Log(0.15) + rng.Float64()*(math.Log(1)-math.Log(0.15)))
		dir := m.Bad
		if dir == metrics.Both {
			dir = metrics.Up
			if rng.IntN(2) == 0 {
				dir = metrics.Down
			}
		}
		factor := 1 + size
		if dir == metrics.Down {
			factor = 1 / (1 + size)
		}
		ramp := rng.IntN(int(10*time.Minute/opts.Step) + 1)
		for k := 0; k < steps && i+k < n; k++ {
			f := 1.0
			if ramp > 0 && k < ramp {
				f = float64(k+1) / float64(ramp+1)
			}
			effect[i+k] = (factor - 1) * f
		}
		start := opts.Start.Add(time.Duration(i) * opts.Step)
		s.Windows = append(s.Windows, Window{Start: start, End: start.Add(time.Duration(steps) * opts.Step), Size: size, Direction: dir})
		i += steps + int(30*time.Minute/opts.Step) // windows do not overlap
	}
	burst := make([]float64, n)
	for i := 0; i < n; {
		i += 3 + int(rng.ExpFloat64()/(opts.BurstsPerDay*perStep)) // bursts do not touch
		if i >= n {
			break
		}
		b := 0.2 + 0.4*rng.Float64()
		if rng.IntN(2) == 0 {
			b = 1/(1+b) - 1
		}
		burst[i] = b
		if rng.IntN(2) == 0 && i+1 < n {
			burst[i+1] = b
		}
	}

	e := 0.0
	for i := 0; i < n; i++ {
		t := opts.Start.Add(time.Duration(i) * opts.Step)
		e = phi*e + innov*studentT5(rng)
		trend := slope0 * float64(i)
		if i > cp {
			trend += (slope1 - slope0) * float64(i-cp)
		}
		v := level * math.Pow(load(t)/0.6, elast) * (1 + trend) * (1 + e) * (1 + effect[i]) * (1 + burst[i])
		s.Samples[i] = metrics.Sample{T: t, V: quantise(m, v)}
	}
	return s
}

// studentT5 draws from a Student-t distribution with 5 degrees of freedom.
func studentT5(rng *rand.Rand) float64 {
	var chi float64
	for k := 0; k < 5; k++ {
		g := rng.NormFloat64()
		chi += g * g
	}
	return rng.NormFloat64() / math.Sqrt(chi/5)
}

func quantise(m metrics.Metric, v float64) float64 {
	if v < 0 {
		v = 0
	}
	switch m.Unit {
	case "ratio":
		v = math.Min(v, 1)
	case "count", "C", "tokens":
		v = math.Round(v)
	case "MHz":
		v = 15 * math.Round(v/15)
	}
	return v
}
