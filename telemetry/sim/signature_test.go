package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// zScore is the deviation of a case's current value of id from its own
// history, in standard deviations of that history (floored at 0.1% of the
// mean so a flat series does not divide by zero).
func zScore(c metrics.Case, id string) (float64, bool) {
	cur, ok := c.Current[id]
	if !ok {
		return 0, false
	}
	hist := c.Series(id)
	var xs []float64
	for _, x := range hist {
		if !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) < 10 {
		return 0, false
	}
	mean, ss := 0.0, 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Max(math.Sqrt(ss/float64(len(xs)-1)), math.Max(1e-3*math.Abs(mean), 1e-9))
	return (cur - mean) / sd, true
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)/2]
}

func TestLabelledCasesShowTheirCause(t *testing.T) {
	// Each cause's signature (metrics.Causes) as catalog ids and the
	// direction the cause moves them in.
	type move struct {
		id  string
		dir float64 // +1 up, -1 down
	}
	signatures := map[string][]move{
		metrics.CauseKVCacheEviction:       {{metrics.KVCacheUsage, 1}, {metrics.PreemptionRate, 1}, {metrics.KVCacheHitRate, -1}, {metrics.TTFT, 1}},
		metrics.CauseQueueBacklog:          {{metrics.QueueDepth, 1}, {metrics.QueueTime, 1}},
		metrics.CauseGPUUnderutilized:      {{metrics.SMUtil, -1}, {metrics.RunningSeqs, -1}},
		metrics.CauseSpecDecodeDegradation: {{metrics.RejectionRate, 1}, {metrics.TPOT, 1}},
		metrics.CauseMemoryBandwidthBound:  {{metrics.DRAMActive, 1}, {metrics.TPOT, 1}},
		metrics.CauseLongPromptPrefill:     {{metrics.MeanPromptTokens, 1}, {metrics.PrefillTime, 1}, {metrics.TTFT, 1}},
		metrics.CausePrefixCacheMiss:       {{metrics.KVCacheHitRate, -1}, {metrics.TTFT, 1}},
		metrics.CauseGPUThrottling:         {{metrics.SMClock, -1}, {metrics.GPUTemp, 1}},
		metrics.CauseTransportLatency:      {{metrics.GatewayE2E, 1}},
		metrics.CauseEngineErrors:          {{metrics.ErrorRate, 1}},
		metrics.CauseHostOverhead:          {{metrics.TPOT, 1}, {metrics.SMUtil, -1}},
	}
	n := 12 * 30
	if testing.Short() {
		n = 12 * 10
	}
	cases := Scenarios(ScenarioOptions{N: n, Seed: 3})
	maxZ := map[string][]float64{}
	for _, c := range cases {
		best := 0.0
		for _, mv := range signatures[c.Label] {
			if z, ok := zScore(c, mv.id); ok {
				best = math.Max(best, z*mv.dir)
			}
		}
		maxZ[c.Label] = append(maxZ[c.Label], best)
	}
	for _, cause := range metrics.FaultCauses() {
		t.Run(cause, func(t *testing.T) {
			if _, ok := signatures[cause]; !ok {
				t.Fatalf("no signature for %s", cause)
			}
			zs := maxZ[cause]
			if len(zs) == 0 {
				t.Fatalf("no case labelled %s", cause)
			}
			if m := median(zs); !(m > 3) {
				t.Errorf("median over %d cases of the largest signature z in the cause's direction is %.2f, want > 3", len(zs), m)
			}
		})
	}
}

func TestNoneCasesStayWithinTheirHistory(t *testing.T) {
	n := 12 * 30
	if testing.Short() {
		n = 12 * 10
	}
	within, total := 0, 0
	for _, c := range Scenarios(ScenarioOptions{N: n, Seed: 5}) {
		if c.Label != metrics.CauseNone {
			continue
		}
		for id := range c.Current {
			z, ok := zScore(c, id)
			if !ok {
				continue
			}
			total++
			if math.Abs(z) <= 3 {
				within++
			}
		}
	}
	if total == 0 {
		t.Fatal("no metric values in the none cases")
	}
	if share := float64(within) / float64(total); share < 0.95 {
		t.Errorf("%.1f%% of the none cases' metric values are within 3 sigma of their history, want at least 95%%", 100*share)
	}
}

func TestFaultOnsetInsideTheLastMinutes(t *testing.T) {
	for i := range 600 {
		p := planScenario(1, i)
		if p.label == metrics.CauseNone {
			continue
		}
		before := p.at.Sub(p.onset)
		if before < 60e9 || before > 300e9 {
			t.Errorf("case %d (%s): onset %s before at, want 1..5 minutes", i, p.label, before)
		}
		if p.second != "" && (p.onset2.Before(p.onset) || p.at.Sub(p.onset2) < 60e9) {
			t.Errorf("case %d: second fault at %s, want after the first and at least a minute before at", i, p.at.Sub(p.onset2))
		}
	}
}

func TestRequestTimesAgree(t *testing.T) {
	// Per request, E2E = TTFT + TPOT x (tokens-1) and decode = TPOT x
	// (tokens-1); over a minute's means the identities hold up to the
	// spread of request sizes.
	var decodeRatio, e2eRatio []float64
	for _, c := range Scenarios(ScenarioOptions{N: 120, Seed: 9}) {
		v := c.Current
		if v[metrics.ThroughputRPS] <= 0 || v[metrics.TPOT] <= 0 {
			continue
		}
		gen := v[metrics.GenerationTPS]/v[metrics.ThroughputRPS] - 1
		decodeRatio = append(decodeRatio, v[metrics.DecodeTime]/(v[metrics.TPOT]*gen))
		e2eRatio = append(e2eRatio, v[metrics.E2E]/(v[metrics.TTFT]+v[metrics.TPOT]*gen))
	}
	for name, rs := range map[string][]float64{"decode / (TPOT x (tokens-1))": decodeRatio, "E2E / (TTFT + TPOT x (tokens-1))": e2eRatio} {
		if len(rs) < 100 {
			t.Fatalf("%s: only %d cases with traffic", name, len(rs))
		}
		if m := median(rs); math.Abs(m-1) > 0.05 {
			t.Errorf("%s: median %.3f, want 1 within 5%%", name, m)
		}
	}
}

func TestKVPoolTokens(t *testing.T) {
	llama, qwen := Models[0], Models[1]
	tests := []struct {
		name string
		m    ModelSpec
		cfg  EngineConfig
		want float64 // tokens, from the sizes worked by hand
	}{
		// Llama 3.1 8B, TP 2, 0.9: per GPU 0.9 x 81559 MiB - 8.03 GB - 3.5 GiB
		// = 65.18 GB; a token takes 32 x 8 x 128 x 2 x 2 / 2 = 65536 bytes.
		{"llama tp2", llama, defaultConfig(llama, 2, 2), 994_578},
		// The same on one GPU: 57.15 GB (the whole 16.06 GB of weights) at 131072 bytes a token.
		{"llama tp1", llama, defaultConfig(llama, 1, 2), 436_025},
		// Qwen2.5 32B, TP 2: 0.9 x 81559 MiB - 32.8 GB - 3.5 GiB = 40.41 GB
		// at 64 x 8 x 128 x 4 / 2 = 131072 bytes a token.
		{"qwen tp2", qwen, defaultConfig(qwen, 2, 2), 308_309},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := kvPoolTokens(tc.m, tc.cfg)
			if math.Abs(got/tc.want-1) > 0.0002 {
				t.Errorf("kvPoolTokens = %.0f, want %.0f within 0.02%%", got, tc.want)
			}
			if math.Mod(got, float64(tc.cfg.BlockSize)) != 0 {
				t.Errorf("kvPoolTokens = %.0f is not whole blocks of %d", got, tc.cfg.BlockSize)
			}
		})
	}
	low := defaultConfig(llama, 2, 2)
	low.GPUMemoryUtilization = 0.12 // less than the weights and the reserve
	if got := kvPoolTokens(llama, low); got != 0 {
		t.Errorf("kvPoolTokens with no room = %.0f, want 0", got)
	}
}

func TestThrottlingCapsPowerAndSetsTheReason(t *testing.T) {
	// A mild fault is a power cap below the draw: the clock drops with the
	// power at the cap. A severe one also overheats the boards: the thermal
	// controller holds them at the slowdown temperature, below the cap.
	for _, tc := range []struct {
		severity float64
		reason   int
	}{{0.1, clockReasonSWPowerCap}, {1, clockReasonSWThermal}} {
		c := New(Options{Seed: 2, Start: monday})
		scope := metrics.Scope{Model: Models[0].Name}
		c.Advance(monday.Add(10 * time.Minute))
		if _, err := c.Inject(Fault{Cause: metrics.CauseGPUThrottling, Scope: scope, Severity: tc.severity}); err != nil {
			t.Fatal(err)
		}
		c.Advance(monday.Add(14 * time.Minute))
		for _, in := range c.models[0].instances {
			caps := in.onset["f1"].powerW
			for i, g := range in.gpus {
				cap := math.Max(H100.IdlePowerW+40, caps[i]*(1-0.45*effectSize(tc.severity)))
				if g.limitW != math.Round(cap) {
					t.Errorf("severity %g, %s gpu %d: power limit %.0f W, want the cap %.0f W", tc.severity, in.name, i, g.limitW, cap)
				}
				if int(g.clockReasons)&tc.reason == 0 {
					t.Errorf("severity %g, %s gpu %d: clock reasons %#x lack %#x", tc.severity, in.name, i, int(g.clockReasons), tc.reason)
				}
				if g.clock >= 0.95 {
					t.Errorf("severity %g, %s gpu %d: SM clock at %.2f of max", tc.severity, in.name, i, g.clock)
				}
				atCap := math.Abs(g.powerW/cap-1) < 0.05
				atSlowdown := math.Abs(g.tempC-H100.SlowdownC) < 4
				if !atCap && !atSlowdown {
					t.Errorf("severity %g, %s gpu %d: %.0f W and %.1f C, want at the cap (%.0f W) or at the slowdown temperature (%.0f C)",
						tc.severity, in.name, i, g.powerW, g.tempC, cap, H100.SlowdownC)
				}
			}
		}
	}
}
