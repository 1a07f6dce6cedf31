package diagnose

import (
	"testing"

	m "github.com/casebook/casebook/metrics"
)

func TestRuleFindings(t *testing.T) {
	rules := map[string]Rule{}
	for _, r := range Rules() {
		rules[r.ID()] = r
	}
	tests := []struct {
		name      string
		snap      m.Snapshot
		rule      string
		wantFire  bool
		wantCited []string // metrics the evidence must cite
	}{
		{"eviction fires on KV storm", synth(1, faults[m.CauseKVCacheEviction]), m.CauseKVCacheEviction, true, []string{m.KVCacheUsage, m.PreemptionRate}},
		{"eviction silent when healthy", synth(1, nil), m.CauseKVCacheEviction, false, nil},
		{"eviction silent on prefix miss", synth(2, faults[m.CausePrefixCacheMiss]), m.CauseKVCacheEviction, false, nil},
		{"queue fires on backlog", synth(3, faults[m.CauseQueueBacklog]), m.CauseQueueBacklog, true, []string{m.QueueDepth, m.QueueTime}},
		{"queue silent when healthy", synth(3, nil), m.CauseQueueBacklog, false, nil},
		{"underutilised fires on small batches", synth(4, faults[m.CauseGPUUnderutilized]), m.CauseGPUUnderutilized, true, []string{m.SMUtil, m.RunningSeqs}},
		{"underutilised silent on backlog", synth(4, faults[m.CauseQueueBacklog]), m.CauseGPUUnderutilized, false, nil},
		{"spec fires on rejections", synth(5, faults[m.CauseSpecDecodeDegradation]), m.CauseSpecDecodeDegradation, true, []string{m.RejectionRate, m.TPOT}},
		{"spec silent without rejection rate", synth(5, m.Values{m.TPOT: 30}), m.CauseSpecDecodeDegradation, false, nil},
		{"bandwidth fires on DRAM saturation", synth(6, faults[m.CauseMemoryBandwidthBound]), m.CauseMemoryBandwidthBound, true, []string{m.DRAMActive, m.TPOT}},
		{"bandwidth silent when DRAM falls", synth(6, m.Values{m.DRAMActive: 0.3, m.TPOT: 28}), m.CauseMemoryBandwidthBound, false, nil},
		{"bandwidth silent when a bigger batch explains DRAM", synth(6, m.Values{m.DRAMActive: 0.8, m.RunningSeqs: 60, m.ThroughputRPS: 20, m.TPOT: 22}), m.CauseMemoryBandwidthBound, false, nil},
		{"long prompt fires on prompt surge", synth(7, faults[m.CauseLongPromptPrefill]), m.CauseLongPromptPrefill, true, []string{m.MeanPromptTokens, m.PrefillTime}},
		{"prefix miss fires on hit collapse", synth(8, faults[m.CausePrefixCacheMiss]), m.CausePrefixCacheMiss, true, []string{m.KVCacheHitRate}},
		{"throttling fires on clock drop", synth(9, faults[m.CauseGPUThrottling]), m.CauseGPUThrottling, true, []string{m.SMClock, m.GPUTemp}},
		{"throttling silent when clocks hold", synth(9, faults[m.CauseMemoryBandwidthBound]), m.CauseGPUThrottling, false, nil},
		{"transport fires on gateway gap", synth(10, faults[m.CauseTransportLatency]), m.CauseTransportLatency, true, []string{m.GatewayE2E, m.E2E}},
		{"transport silent when engine explains gateway", synth(10, faults[m.CauseGPUThrottling]), m.CauseTransportLatency, false, nil},
		{"errors fire on error rate", synth(11, faults[m.CauseEngineErrors]), m.CauseEngineErrors, true, []string{m.ErrorRate}},
		{"errors fire on the API server's 5xx when the engine finishes nothing", synthWithout(11, m.Values{m.APIErrorRate: 0.6, m.ThroughputRPS: 2}, m.ErrorRate),
			m.CauseEngineErrors, true, []string{m.APIErrorRate}},
		{"errors silent when clients cancel", synth(11, m.Values{m.AbortRate: 0.2}), m.CauseEngineErrors, false, nil},
		{"host fires on starved GPU", synth(12, faults[m.CauseHostOverhead]), m.CauseHostOverhead, true, []string{m.SMUtil, m.RunningSeqs}},
		{"host silent on small batches", synth(12, faults[m.CauseGPUUnderutilized]), m.CauseHostOverhead, false, nil},
		{"underutilised fires when traffic is routed away", synth(13, m.Values{
			m.ThroughputRPS: 1.2, m.ArrivalRPS: 1.2, m.RunningSeqs: 3, m.SMUtil: 0.08, m.TensorActive: 0.04,
			m.DRAMActive: 0.07, m.TPOT: 15, m.GenerationTPS: 156, m.PromptTPS: 1200,
		}), m.CauseGPUUnderutilized, true, []string{m.SMUtil, m.ThroughputRPS}},
		{"underutilised silent when a full KV cache holds the batch small", synth(14, m.Values{
			m.RunningSeqs: 8, m.SMUtil: 0.35, m.KVCacheUsage: 0.99, m.PreemptionRate: 3, m.QueueDepth: 12, m.QueueTime: 200,
		}), m.CauseGPUUnderutilized, false, nil},
		{"bandwidth fires without DRAM activity on a busy GPU", synthWithout(15, faults[m.CauseMemoryBandwidthBound], m.DRAMActive),
			m.CauseMemoryBandwidthBound, true, []string{m.TPOT}},
		{"bandwidth silent without DRAM activity when the SMs idle", synthWithout(16, m.Values{m.TPOT: 28, m.DecodeTime: 3640, m.SMUtil: 0.4}, m.DRAMActive),
			m.CauseMemoryBandwidthBound, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := rules[tc.rule]
			if !ok {
				t.Fatalf("no rule %q", tc.rule)
			}
			f := r.Evaluate(Input{Snapshot: tc.snap, Baseline: Deviations(tc.snap)})
			if f.RootCause != tc.rule {
				t.Errorf("finding names %q, want %q", f.RootCause, tc.rule)
			}
			fired := f.Score >= 0.3
			if fired != tc.wantFire {
				t.Fatalf("score %.3f, want fired=%v", f.Score, tc.wantFire)
			}
			cited := map[string]bool{}
			for _, e := range f.Evidence {
				cited[e.Metric] = true
				if e.Text == "" {
					t.Errorf("evidence for %s has no text", e.Metric)
				}
			}
			for _, id := range tc.wantCited {
				if !cited[id] {
					t.Errorf("evidence does not cite %s; got %v", id, f.Evidence)
				}
			}
		})
	}
}

// TestEveryCauseHasARule keeps the rule table and the taxonomy in step.
func TestEveryCauseHasARule(t *testing.T) {
	have := map[string]bool{}
	for _, r := range Rules() {
		have[r.ID()] = true
		if r.Title() == "" || r.Title() == r.ID() {
			t.Errorf("rule %s has no title", r.ID())
		}
	}
	for _, id := range m.FaultCauses() {
		if !have[id] {
			t.Errorf("cause %s has no rule", id)
		}
		if n := len(causeActions[id]); n < 3 || n > 5 {
			t.Errorf("cause %s has %d actions, want 3-5", id, n)
		}
		if _, ok := causeRoots[id]; !ok {
			t.Errorf("cause %s has no entry in the causal graph", id)
		}
	}
}

func TestEngineNamesEachSyntheticFault(t *testing.T) {
	e := New(Options{})
	for cause, fault := range faults {
		for seed := int64(1); seed <= 5; seed++ {
			d := e.Diagnose(synth(100+seed, fault))
			if d.RootCause != cause {
				t.Errorf("%s (seed %d): diagnosed %s (conf %.2f), candidates %v", cause, seed, d.RootCause, d.Confidence, d.Candidates)
			}
		}
	}
}

// Gaps names the rules a missing metric weakens, with the same metrics a
// diagnosis of such a snapshot reports missing.
func TestGaps(t *testing.T) {
	gaps := Gaps([]string{m.DRAMActive, m.TensorActive, "not_a_metric"})
	got := map[string][]string{}
	for _, g := range gaps {
		got[g.Cause] = g.Missing
	}
	for _, cause := range []string{m.CauseMemoryBandwidthBound, m.CauseHostOverhead} {
		if len(got[cause]) != 1 || got[cause][0] != m.DRAMActive {
			t.Errorf("%s: gaps %v, want DRAM activity", cause, got[cause])
		}
	}
	if _, ok := got[m.CauseKVCacheEviction]; ok {
		t.Errorf("eviction reads no profiling field, gaps %v", got[m.CauseKVCacheEviction])
	}
	if g := Gaps(nil); len(g) != 0 {
		t.Errorf("nothing missing, gaps %v", g)
	}
	// What a rule evaluated without DRAM activity reports missing agrees.
	snap := synthWithout(6, faults[m.CauseMemoryBandwidthBound], m.DRAMActive)
	for _, r := range Rules() {
		if r.ID() != m.CauseMemoryBandwidthBound {
			continue
		}
		f := r.Evaluate(Input{Snapshot: snap, Baseline: Deviations(snap)})
		if len(f.Missing) != 1 || f.Missing[0] != m.DRAMActive {
			t.Errorf("bandwidth rule without DRAM activity reports missing %v", f.Missing)
		}
	}
}

// TestStepsBeyondLoad: a step that slowed more than the load grew is
// named by the bandwidth rule even though the batch grew with it (Little's
// law: slower steps keep sequences running longer), and a slowdown the
// load accounts for is not.
func TestStepsBeyondLoad(t *testing.T) {
	tests := []struct {
		name   string
		fault  m.Values
		lo, hi float64
	}{
		{"slower steps at flat throughput", m.Values{m.TPOT: 28, m.DecodeTime: 3640, m.RunningSeqs: 47}, 0.9, 1},
		{"throughput grew as much as the step time", m.Values{m.TPOT: 28, m.DecodeTime: 3640, m.RunningSeqs: 75, m.ThroughputRPS: 19}, 0, 0},
		{"prompts four times longer, step time up half", m.Values{m.TPOT: 27, m.DecodeTime: 3510, m.MeanPromptTokens: 4000}, 0, 0},
		{"faster steps", m.Values{m.TPOT: 12, m.DecodeTime: 1560}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(21, tc.fault)
			r := &reader{in: Input{Snapshot: s, Baseline: Deviations(s)}}
			if got := r.stepsBeyondLoad(); got < tc.lo || got > tc.hi {
				t.Errorf("stepsBeyondLoad = %.2f, want %.2f-%.2f", got, tc.lo, tc.hi)
			}
		})
	}
	s := synth(22, m.Values{m.DRAMActive: 0.95, m.TPOT: 28, m.TPOTP99: 45, m.DecodeTime: 3640, m.RunningSeqs: 47})
	f := ruleFunc{m.CauseMemoryBandwidthBound, scoreMemoryBandwidth, nil}.Evaluate(Input{Snapshot: s, Baseline: Deviations(s)})
	if f.Score < 0.6 {
		t.Errorf("bandwidth score %.2f with a batch that slower steps grew, want at least 0.6", f.Score)
	}
}

// TestAbsoluteQueueDiscounted: a queue far deeper than the running batch
// reads as a backlog from the current values alone; when the batch shrank
// at flat throughput (the scheduler admits fewer sequences), the rule's
// physical checks discount that absolute reading too, and a real backlog
// keeps it.
func TestAbsoluteQueueDiscounted(t *testing.T) {
	queue := ruleFunc{m.CauseQueueBacklog, scoreQueueBacklog, nil}
	tests := []struct {
		name   string
		fault  m.Values
		lo, hi float64
	}{
		{"backlog of load", faults[m.CauseQueueBacklog], 0.6, 1},
		{"queue behind a shrunk batch", m.Values{m.QueueDepth: 40, m.QueueTime: 30000, m.E2E: 33000, m.RunningSeqs: 4, m.SMUtil: 0.95, m.TensorActive: 0.07}, 0, 0.45},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(23, tc.fault)
			base, counts := deviationsAndCounts(s)
			f := blendAbsolute(queue.Evaluate(Input{Snapshot: s, Baseline: base}), s, base, baselineValues(base, counts))
			if f.Score < tc.lo || f.Score > tc.hi {
				t.Errorf("queue backlog score %.2f, want %.2f-%.2f", f.Score, tc.lo, tc.hi)
			}
		})
	}
}
