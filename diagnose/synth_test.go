package diagnose

import (
	"math/rand"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// testAt is the fixed instant of every synthetic snapshot: tests never read
// the clock.
var testAt = time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)

// healthy is a steady state of an 8B model on one H100-class GPU, derived
// from first principles: 12 req/s, 1,000-token prompts, 130-token outputs
// at 18 ms per token, so E2E ~ TTFT + 130 x TPOT and the batch holds
// throughput x E2E ~ 30 sequences (Little's law).
func healthy() m.Values {
	return m.Values{
		m.GatewayE2E: 2620, m.E2E: 2560, m.E2EP99: 6000, m.TTFT: 180, m.TTFTP99: 600,
		m.TPOT: 18, m.TPOTP99: 30, m.QueueTime: 10, m.PrefillTime: 120, m.DecodeTime: 2340,
		m.ThroughputRPS: 12, m.ArrivalRPS: 12, m.PromptTPS: 12000, m.GenerationTPS: 1560,
		m.RunningSeqs: 30, m.QueueDepth: 0.5, m.MeanPromptTokens: 1000,
		m.SMUtil: 0.72, m.TensorActive: 0.45, m.DRAMActive: 0.6, m.GPUMemUsedFrac: 0.9,
		m.KVCacheUsage: 0.45, m.SMClock: 1980, m.MemClock: 2619, m.Power: 520, m.GPUTemp: 65,
		m.KVCacheHitRate: 0.55, m.RejectionRate: 0.3, m.ErrorRate: 0.002, m.PreemptionRate: 0,
	}
}

// jitter returns v with multiplicative noise of relative size rel, kept in
// each metric's valid range.
func jitter(v m.Values, rng *rand.Rand, rel float64) m.Values {
	out := make(m.Values, len(v))
	for _, mt := range m.Catalog { // catalog order: map order would make the noise vary between runs
		x, ok := v[mt.ID]
		if !ok {
			continue
		}
		id := mt.ID
		y := x * (1 + rel*rng.NormFloat64())
		if y < mt.Min {
			y = mt.Min
		}
		if mt.Max > 0 && y > mt.Max {
			y = mt.Max
		}
		out[id] = y
	}
	return out
}

// synth builds a snapshot: 60 history points of the healthy state at a
// 1-minute step over [at-65m, at-6m] with 3% noise, and a current value of
// the healthy state with the fault's values laid over it.
func synth(seed int64, fault m.Values) m.Snapshot {
	rng := rand.New(rand.NewSource(seed))
	base := healthy()
	s := m.Snapshot{At: testAt, Scope: m.Scope{Model: "llama-8b", Instance: "llama-8b-0"}}
	for i := 0; i < 60; i++ {
		s.History = append(s.History, m.Point{
			At:     testAt.Add(-65*time.Minute + time.Duration(i)*time.Minute),
			Values: jitter(base, rng, 0.03),
		})
	}
	s.Current = jitter(base, rng, 0.03)
	for id, x := range fault {
		s.Current[id] = x
	}
	return s
}

// synthWithout is synth with the given metrics missing everywhere, as
// when an exporter does not serve them (DCGM's profiling fields are off
// by default in many deployments).
func synthWithout(seed int64, fault m.Values, missing ...string) m.Snapshot {
	s := synth(seed, fault)
	for _, id := range missing {
		delete(s.Current, id)
		for _, p := range s.History {
			delete(p.Values, id)
		}
	}
	return s
}

// faults are hand-made signatures of every root cause, written from how
// each fault propagates in a vLLM service, not from any simulator.
var faults = map[string]m.Values{
	m.CauseNone: {},
	m.CauseKVCacheEviction: {
		m.KVCacheUsage: 0.99, m.PreemptionRate: 3, m.KVCacheHitRate: 0.3, m.TTFT: 900, m.TTFTP99: 3000,
		m.PrefillTime: 400, m.QueueTime: 200, m.QueueDepth: 12, m.E2E: 3400, m.GatewayE2E: 3460, m.TPOT: 20,
	},
	m.CauseQueueBacklog: {
		m.ArrivalRPS: 20, m.ThroughputRPS: 15.5, m.QueueDepth: 150, m.QueueTime: 4000, m.TTFT: 4200,
		m.E2E: 6900, m.GatewayE2E: 6960, m.RunningSeqs: 64, m.SMUtil: 0.93, m.TPOT: 21, m.KVCacheUsage: 0.8,
		m.DRAMActive: 0.75, m.GenerationTPS: 2000, m.PromptTPS: 15500,
	},
	m.CauseGPUUnderutilized: {
		m.RunningSeqs: 8, m.SMUtil: 0.35, m.TensorActive: 0.15, m.ThroughputRPS: 11, m.ArrivalRPS: 11,
		m.TPOT: 15, m.DRAMActive: 0.35, m.KVCacheUsage: 0.15,
	},
	m.CauseSpecDecodeDegradation: {
		m.RejectionRate: 0.75, m.TPOT: 30, m.TPOTP99: 50, m.DecodeTime: 3900, m.E2E: 4100,
		m.GatewayE2E: 4160, m.GenerationTPS: 1150,
	},
	m.CauseMemoryBandwidthBound: {
		m.DRAMActive: 0.95, m.TPOT: 28, m.TPOTP99: 45, m.DecodeTime: 3640, m.E2E: 3830, m.GatewayE2E: 3890,
		m.QueueTime: 90, m.ThroughputRPS: 10.5, m.GenerationTPS: 1300,
	},
	m.CauseLongPromptPrefill: {
		m.MeanPromptTokens: 4000, m.PrefillTime: 520, m.TTFT: 650, m.TTFTP99: 2000, m.PromptTPS: 46000,
		m.KVCacheUsage: 0.7, m.E2E: 3050, m.GatewayE2E: 3110,
	},
	m.CausePrefixCacheMiss: {
		m.KVCacheHitRate: 0.08, m.TTFT: 420, m.TTFTP99: 1300, m.PrefillTime: 340, m.E2E: 2800, m.GatewayE2E: 2860,
	},
	m.CauseGPUThrottling: {
		m.SMClock: 1350, m.GPUTemp: 89, m.TPOT: 25, m.PrefillTime: 170, m.TTFT: 250, m.DecodeTime: 3250,
		m.E2E: 3500, m.GatewayE2E: 3560, m.ThroughputRPS: 11,
	},
	m.CauseTransportLatency: {
		m.GatewayE2E: 3900,
	},
	m.CauseEngineErrors: {
		m.ErrorRate: 0.15, m.ThroughputRPS: 10.2,
	},
	m.CauseHostOverhead: {
		m.SMUtil: 0.45, m.TensorActive: 0.25, m.TPOT: 28, m.DecodeTime: 3640, m.E2E: 3850,
		m.GatewayE2E: 3910, m.RunningSeqs: 44, m.ThroughputRPS: 11.2,
	},
	// Board power up by a third and the tensor pipes half as busy, with
	// clocks, temperature, SM activity and latency unchanged: anomalous,
	// but no cause in the taxonomy produces it.
	m.CauseUnknown: {
		m.Power: 700, m.TensorActive: 0.2, m.E2EP99: 14000,
	},
}
