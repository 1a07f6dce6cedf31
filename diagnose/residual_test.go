package diagnose

import (
	"testing"

	m "github.com/casebook/casebook/metrics"
)

// TestResidualRankingNamesTheRootOfACascade: when one fault cascades, the
// rules of its symptoms fire too, often louder; the cause that explains
// the rest is named. The healthy state holds 30 sequences at 18 ms a step
// with the cache 45% full (synth_test.go).
func TestResidualRankingNamesTheRootOfACascade(t *testing.T) {
	tests := []struct {
		name  string
		fault m.Values
		want  string
	}{
		{
			// Steps twice as slow with the GPU idler: at the same
			// throughput the batch doubles (Little's law), the cache
			// fills to its knee and preempts. The full cache is the
			// slow step's symptom.
			name: "host overhead fills the cache",
			fault: m.Values{m.TPOT: 36, m.DecodeTime: 4700, m.E2E: 5300, m.GatewayE2E: 5360, m.TTFT: 450,
				m.RunningSeqs: 60, m.KVCacheUsage: 0.95, m.PreemptionRate: 1.5, m.KVCacheHitRate: 0.48,
				m.PrefillTime: 160, m.QueueTime: 150, m.QueueDepth: 4, m.GenerationTPS: 1560,
				m.SMUtil: 0.5, m.TensorActive: 0.3, m.DRAMActive: 0.42, m.Power: 430},
			want: m.CauseHostOverhead,
		},
		{
			// The cache runs full and preempts with the batch unchanged,
			// while prompts grew 30%: 30% more tokens a sequence takes
			// a 45% cache to 59%, not to preemption. The longer prompt
			// is the storm's context, not its cause.
			name: "eviction storm with moderately longer prompts",
			fault: m.Values{m.KVCacheUsage: 0.98, m.PreemptionRate: 3, m.KVCacheHitRate: 0.2,
				m.MeanPromptTokens: 1300, m.PromptTPS: 15600, m.RunningSeqs: 29,
				m.TTFT: 1100, m.TTFTP99: 3000, m.PrefillTime: 330, m.QueueTime: 600, m.QueueDepth: 8,
				m.E2E: 3500, m.GatewayE2E: 3560, m.TPOT: 19},
			want: m.CauseKVCacheEviction,
		},
		{
			// The memory clock fell and every step slowed while no more
			// requests arrive: the queue and the bigger batch are the
			// capacity it cost.
			name: "bandwidth-bound decode behind a queue",
			fault: m.Values{m.MemClock: 1700, m.DRAMActive: 0.68, m.TPOT: 30, m.TPOTP99: 50, m.DecodeTime: 3900,
				m.RunningSeqs: 48, m.KVCacheUsage: 0.7, m.ThroughputRPS: 11, m.ArrivalRPS: 12,
				m.QueueDepth: 40, m.QueueTime: 3500, m.TTFT: 3700, m.E2E: 7600, m.GatewayE2E: 7660,
				m.GenerationTPS: 1430, m.SMUtil: 0.78},
			want: m.CauseMemoryBandwidthBound,
		},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(1); seed <= 3; seed++ {
				if d := e.Diagnose(synth(seed, tc.fault)); d.RootCause != tc.want {
					t.Errorf("seed %d: diagnosed %s, want %s (candidates %v)", seed, d.RootCause, tc.want, d.Candidates)
				}
			}
		})
	}
}

// TestExplainedByMagnitude: the share of a symptom an upstream cause
// explains follows the physical relation, not just the path.
func TestExplainedByMagnitude(t *testing.T) {
	tests := []struct {
		name   string
		fault  m.Values
		c, d   string
		lo, hi float64
		// path is the graph's verdict passed in: 0 for the queue, whose
		// physical model adds to it, 1 for the step, which it caps.
		path float64
	}{
		// KV usage 0.45 -> 0.9 (x2): prompts x2 explain all of it,
		// prompts x1.19 a quarter (log 1.19 / log 2).
		{"prompts x2 fill the cache", m.Values{m.MeanPromptTokens: 2000, m.KVCacheUsage: 0.9}, m.CauseKVCacheEviction, m.CauseLongPromptPrefill, 0.95, 1, 0},
		{"prompts x1.19 fill a quarter", m.Values{m.MeanPromptTokens: 1190, m.KVCacheUsage: 0.9}, m.CauseKVCacheEviction, m.CauseLongPromptPrefill, 0.2, 0.3, 0},
		// A batch grown x2 behind steps x2 is the slow step's; behind
		// steady steps it is not.
		{"batch kept by slower steps", m.Values{m.TPOT: 36, m.DecodeTime: 4680, m.RunningSeqs: 60, m.KVCacheUsage: 0.9}, m.CauseKVCacheEviction, m.CauseHostOverhead, 0.95, 1, 0},
		{"batch without slower steps", m.Values{m.RunningSeqs: 60, m.KVCacheUsage: 0.9}, m.CauseKVCacheEviction, m.CauseHostOverhead, 0, 0.15, 0},
		// A queue with arrivals flat and service time doubled is all
		// capacity; with arrivals doubled and service flat, none.
		{"queue from slower service", m.Values{m.DecodeTime: 4680, m.QueueDepth: 40}, m.CauseQueueBacklog, m.CauseMemoryBandwidthBound, 0.9, 1, 0},
		{"queue from more arrivals", m.Values{m.ArrivalRPS: 24, m.ThroughputRPS: 14, m.QueueDepth: 40}, m.CauseQueueBacklog, m.CauseMemoryBandwidthBound, 0, 0.1, 0},
		// A storm explains the prefill growth beyond what 30% longer
		// prompts cost (x1.69 at most), unless the prompts explain the
		// storm too.
		{"prefill beyond longer prompts", m.Values{m.MeanPromptTokens: 1300, m.PrefillTime: 600, m.TTFT: 1500, m.KVCacheUsage: 0.98}, m.CauseLongPromptPrefill, m.CauseKVCacheEviction, 0.2, longPromptSlowShare, 0},
		{"prefill of a storm the prompts made", m.Values{m.MeanPromptTokens: 2300, m.PrefillTime: 600, m.TTFT: 1500, m.KVCacheUsage: 0.98}, m.CauseLongPromptPrefill, m.CauseKVCacheEviction, 0, 0.02, 0},
		// Recompute is GPU work: a slower step with an idler GPU is not
		// explained by it, one with a busier GPU is.
		{"slow step, idle GPU", m.Values{m.TPOT: 36, m.SMUtil: 0.4, m.Power: 380}, m.CauseHostOverhead, m.CauseKVCacheEviction, 0, 0.05, 1},
		{"slow step, busy GPU", m.Values{m.TPOT: 36, m.SMUtil: 0.9, m.Power: 640}, m.CauseHostOverhead, m.CauseKVCacheEviction, 0.95, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(1, tc.fault)
			base, _ := deviationsAndCounts(s)
			r := &reader{in: Input{Snapshot: s, Baseline: base}}
			if got := explainedBy(tc.c, tc.d, tc.path, r); got < tc.lo || got > tc.hi {
				t.Errorf("explainedBy(%s, %s) = %.3f, want %.2f-%.2f", tc.c, tc.d, got, tc.lo, tc.hi)
			}
		})
	}
}
