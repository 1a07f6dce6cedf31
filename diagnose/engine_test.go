package diagnose

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

func TestDiagnoseShape(t *testing.T) {
	e := New(Options{})
	for cause, f := range faults {
		d := e.Diagnose(synth(3, f))
		if d.Title == "" || d.EngineVersion == "" {
			t.Errorf("%s: missing title or version", cause)
		}
		if d.Confidence < 0 || d.Confidence > 1 {
			t.Errorf("%s: confidence %v outside 0-1", cause, d.Confidence)
		}
		switch d.Severity {
		case SeverityCritical, SeverityWarning, SeverityInfo:
		default:
			t.Errorf("%s: severity %q", cause, d.Severity)
		}
		if n := len(d.Actions); n < 3 || n > 5 {
			t.Errorf("%s: %d actions, want 3-5", cause, n)
		}
		for _, a := range d.Actions {
			if a.ID == "" || a.Title == "" || a.Why == "" || a.Risk == "" || a.Rollback == "" {
				t.Errorf("%s: incomplete action %+v", cause, a)
			}
			for _, ef := range a.Effects {
				if ef.Direction != "up" && ef.Direction != "down" {
					t.Errorf("%s: action %s effect direction %q", cause, a.ID, ef.Direction)
				}
				if _, ok := m.Lookup(ef.Metric); !ok {
					t.Errorf("%s: action %s effect on unknown metric %q", cause, a.ID, ef.Metric)
				}
			}
		}
		if len(d.Candidates) == 0 || d.Candidates[0].RootCause != d.RootCause {
			t.Errorf("%s: candidates %v do not start with the root cause", cause, d.Candidates)
		}
		if cause != m.CauseNone && cause != m.CauseUnknown {
			if len(d.CausalChain) == 0 || len(d.Evidence) == 0 {
				t.Errorf("%s: empty chain %v or evidence", cause, d.CausalChain)
			}
		}
		if _, err := json.Marshal(d); err != nil {
			t.Errorf("%s: marshal: %v", cause, err)
		}
	}
}

// TestCausalRanking checks cause-vs-symptom decisions when several rules
// fire at once: the upstream anomaly must win.
func TestCausalRanking(t *testing.T) {
	tests := []struct {
		name  string
		fault m.Values
		want  string
		chain []string // must appear in this order in the chain
	}{
		{
			// Bandwidth drop -> TPOT -> queue -> throughput: the queue rule
			// fires too, but the bandwidth is upstream.
			name: "bandwidth drop with a queue behind it",
			fault: m.Values{m.MemClock: 1600, m.DRAMActive: 0.93, m.TPOT: 32, m.DecodeTime: 4100, m.E2E: 5200,
				m.QueueDepth: 60, m.QueueTime: 900, m.TTFT: 1100, m.ThroughputRPS: 8, m.SMUtil: 0.88},
			want:  m.CauseMemoryBandwidthBound,
			chain: []string{m.DRAMActive, m.TPOT},
		},
		{
			// Heat -> clocks -> everything; the DRAM rule may also see TPOT.
			name: "thermal throttling with everything slower",
			fault: m.Values{m.GPUTemp: 91, m.SMClock: 1200, m.TPOT: 30, m.DRAMActive: 0.8, m.PrefillTime: 210,
				m.TTFT: 320, m.E2E: 4300, m.QueueDepth: 20, m.QueueTime: 300, m.ThroughputRPS: 9},
			want:  m.CauseGPUThrottling,
			chain: []string{m.GPUTemp, m.SMClock, m.TPOT},
		},
		{
			// Load surge -> bigger batches -> KV full -> preemptions: the
			// arrivals are upstream of the eviction symptoms.
			name: "load surge that fills the KV cache",
			fault: m.Values{m.ArrivalRPS: 22, m.ThroughputRPS: 15, m.QueueDepth: 140, m.QueueTime: 3500, m.RunningSeqs: 70,
				m.KVCacheUsage: 0.97, m.PreemptionRate: 0.6, m.SMUtil: 0.94, m.TTFT: 3800, m.E2E: 6500},
			want:  m.CauseQueueBacklog,
			chain: []string{m.ArrivalRPS, m.QueueDepth},
		},
		{
			// Longer prompts -> prefill and KV -> preemption.
			name: "long prompts that push the KV cache over the knee",
			fault: m.Values{m.MeanPromptTokens: 5000, m.PrefillTime: 700, m.TTFT: 1200, m.PromptTPS: 55000,
				m.KVCacheUsage: 0.96, m.PreemptionRate: 0.8, m.KVCacheHitRate: 0.4},
			want:  m.CauseLongPromptPrefill,
			chain: []string{m.MeanPromptTokens, m.PrefillTime},
		},
		{
			// Rejections -> TPOT; DRAM rises a little with longer steps.
			name: "draft drift with a bandwidth echo",
			fault: m.Values{m.RejectionRate: 0.8, m.TPOT: 34, m.DecodeTime: 4400, m.DRAMActive: 0.72,
				m.GenerationTPS: 1000, m.E2E: 4600},
			want:  m.CauseSpecDecodeDegradation,
			chain: []string{m.RejectionRate, m.TPOT},
		},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := e.Diagnose(synth(21, tc.fault))
			if d.RootCause != tc.want {
				t.Fatalf("diagnosed %s, want %s; candidates %v", d.RootCause, tc.want, d.Candidates)
			}
			pos := map[string]int{}
			for i, id := range d.CausalChain {
				pos[id] = i
			}
			last := -1
			for _, id := range tc.chain {
				p, ok := pos[id]
				if !ok || p <= last {
					t.Fatalf("chain %v lacks %v in order", d.CausalChain, tc.chain)
				}
				last = p
			}
		})
	}
}

func TestDiagnoseOddInput(t *testing.T) {
	huge := synth(1, nil)
	for id := range huge.Current {
		huge.Current[id] = math.MaxFloat64
	}
	nan := synth(1, nil)
	for id := range nan.Current {
		nan.Current[id] = math.NaN()
	}
	inf := synth(1, m.Values{m.TTFT: math.Inf(1)})
	tests := []struct {
		name string
		snap m.Snapshot
		want []string // acceptable root causes
	}{
		{"empty snapshot", m.Snapshot{}, []string{m.CauseNone}},
		{"no history", m.Snapshot{At: testAt, Scope: m.Scope{Model: "x"}, Current: healthy()}, []string{m.CauseNone}},
		{"no history but 20% errors", m.Snapshot{At: testAt, Scope: m.Scope{Model: "x"}, Current: m.Values{m.ErrorRate: 0.2}}, []string{m.CauseEngineErrors}},
		{"only current latency", m.Snapshot{Current: m.Values{m.TTFT: 500}}, []string{m.CauseNone}},
		{"all values huge", huge, nil},
		{"all values NaN", nan, []string{m.CauseNone}},
		{"an infinite value", inf, []string{m.CauseNone}},
		{"history with empty points", m.Snapshot{Current: healthy(), History: make([]m.Point, 60)}, []string{m.CauseNone}},
		{"history at the same instant", m.Snapshot{Current: healthy(), History: []m.Point{{At: time.Time{}, Values: healthy()}, {Values: healthy()}, {Values: healthy()}}}, []string{m.CauseNone}},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := e.Diagnose(tc.snap)
			checkFinite(t, d)
			if tc.want == nil {
				return
			}
			for _, w := range tc.want {
				if d.RootCause == w {
					return
				}
			}
			t.Errorf("diagnosed %s, want one of %v", d.RootCause, tc.want)
		})
	}
}

func TestMissingListsWantedFields(t *testing.T) {
	s := synth(1, faults[m.CauseTransportLatency])
	delete(s.Current, m.GatewayE2E)
	delete(s.Current, m.MeanPromptTokens)
	delete(s.Current, m.DRAMActive) // read by rules that stop early here
	d := New(Options{}).Diagnose(s)
	want := map[string]bool{m.GatewayE2E: true, m.MeanPromptTokens: true, m.DRAMActive: true}
	for _, id := range d.Missing {
		delete(want, id)
	}
	if len(want) > 0 {
		t.Errorf("missing = %v, lacks %v", d.Missing, want)
	}
	if d.RootCause == m.CauseTransportLatency {
		t.Errorf("transport named without a gateway metric")
	}
}

// panicRule is a broken custom rule.
type panicRule struct{}

func (panicRule) ID() string             { return "broken" }
func (panicRule) Title() string          { return "Broken" }
func (panicRule) Evaluate(Input) Finding { panic("boom") }

func TestCustomRulePanicIsContained(t *testing.T) {
	e := New(Options{Rules: append(Rules(), panicRule{})})
	d := e.Diagnose(synth(1, faults[m.CauseEngineErrors]))
	if d.RootCause != m.CauseEngineErrors {
		t.Errorf("diagnosed %s, want %s", d.RootCause, m.CauseEngineErrors)
	}
}

func TestCalibrateMapping(t *testing.T) {
	tests := []struct {
		s1, s2 float64
		lo, hi float64
	}{
		{1, 0, 0.98, 0.99},
		{1, 1, 0.7, 0.75},
		{0.3, 0, 0.54, 0.56},
		{0.8, 0.4, 0.83, 0.88},
		{0, 0, 0, 0},
	}
	for _, tc := range tests {
		c := calibrate(tc.s1, tc.s2)
		if c < tc.lo || c > tc.hi {
			t.Errorf("calibrate(%v, %v) = %v, want %v..%v", tc.s1, tc.s2, c, tc.lo, tc.hi)
		}
	}
	// Monotone in the margin.
	prev := -1.0
	for s2 := 1.0; s2 >= 0; s2 -= 0.1 {
		c := calibrate(1, s2)
		if c < prev {
			t.Errorf("calibrate(1, %.1f) = %v below %v", s2, c, prev)
		}
		prev = c
	}
}

func checkFinite(t *testing.T, d Diagnosis) {
	t.Helper()
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	if bad(d.Confidence) || d.Confidence < 0 || d.Confidence > 1 {
		t.Errorf("confidence %v", d.Confidence)
	}
	for _, c := range d.Candidates {
		if bad(c.Score) {
			t.Errorf("candidate %s score %v", c.RootCause, c.Score)
		}
	}
	for _, ev := range d.Evidence {
		if bad(ev.Value) || bad(ev.BaselineMean) || bad(ev.Z) {
			t.Errorf("evidence %+v not finite", ev)
		}
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("marshal: %v", err)
	}
}
