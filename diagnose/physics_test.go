package diagnose

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// withoutProfiling drops the DCGM profiling fields from every point of s,
// as dcgm-exporter's default counters leave them out.
func withoutProfiling(s m.Snapshot) m.Snapshot {
	drop := func(v m.Values) m.Values {
		out := m.Values{}
		for id, x := range v {
			if id != m.TensorActive && id != m.DRAMActive {
				out[id] = x
			}
		}
		return out
	}
	s.Current = drop(s.Current)
	for i := range s.History {
		s.History[i].Values = drop(s.History[i].Values)
	}
	return s
}

// TestDefaultCountersTellHostFromBandwidth: without DRAM activity, slower
// steps on a GPU that draws more power per token are bandwidth-bound decode,
// and slower steps with gaps between kernels (duty cycle and power down) are
// host overhead; either diagnosis says the profiling fields are missing and
// is less confident than with them.
func TestDefaultCountersTellHostFromBandwidth(t *testing.T) {
	tests := []struct {
		name  string
		fault m.Values
		want  string
	}{
		{"bandwidth", m.Values{m.TPOT: 27, m.DecodeTime: 3500, m.E2E: 3700, m.Power: 640, m.DRAMActive: 0.9}, m.CauseMemoryBandwidthBound},
		{"host", m.Values{m.TPOT: 28, m.DecodeTime: 3640, m.E2E: 3850, m.SMUtil: 0.45, m.Power: 400, m.DRAMActive: 0.4}, m.CauseHostOverhead},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(1); seed <= 3; seed++ {
				full := synth(seed, tc.fault)
				fd := e.Diagnose(full)
				d := e.Diagnose(withoutProfiling(synth(seed, tc.fault)))
				if d.RootCause != tc.want || fd.RootCause != tc.want {
					t.Fatalf("seed %d: diagnosed %s with the profiling fields and %s without, want %s (candidates %v)", seed, fd.RootCause, d.RootCause, tc.want, d.Candidates)
				}
				noted := false
				for _, n := range d.Notes {
					noted = noted || strings.Contains(n, "profiling fields")
				}
				if !noted {
					t.Errorf("seed %d: notes %q do not say the profiling fields are missing", seed, d.Notes)
				}
				if d.Confidence >= fd.Confidence {
					t.Errorf("seed %d: confidence %.3f without the profiling fields, %.3f with them; want lower", seed, d.Confidence, fd.Confidence)
				}
			}
		})
	}
}

// TestAdmissionCapIsUnderutilisation: a queue that grows while arrivals,
// the step time and the cache stay put and the GPU computes less can only
// come from fewer sequences admitted, even with the SM activity unchanged.
func TestAdmissionCapIsUnderutilisation(t *testing.T) {
	capped := m.Values{m.QueueDepth: 60, m.QueueTime: 4000, m.E2E: 6500, m.GatewayE2E: 6560, m.TTFT: 4200,
		m.ThroughputRPS: 11, m.TensorActive: 0.3, m.Power: 430, m.GenerationTPS: 1400}
	surge := m.Values{m.QueueDepth: 60, m.QueueTime: 4000, m.E2E: 6500, m.GatewayE2E: 6560, m.TTFT: 4200,
		m.ArrivalRPS: 20, m.ThroughputRPS: 14, m.RunningSeqs: 45, m.SMUtil: 0.92, m.TensorActive: 0.6, m.Power: 640, m.TPOT: 22}
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		if d := e.Diagnose(synth(seed, capped)); d.RootCause != m.CauseGPUUnderutilized {
			t.Errorf("capped admission, seed %d: diagnosed %s, want %s (candidates %v)", seed, d.RootCause, m.CauseGPUUnderutilized, d.Candidates)
		}
		if d := e.Diagnose(synth(seed, surge)); d.RootCause != m.CauseQueueBacklog {
			t.Errorf("surge, seed %d: diagnosed %s, want %s (candidates %v)", seed, d.RootCause, m.CauseQueueBacklog, d.Candidates)
		}
	}
}

// TestVolumeChangeWithoutImpactIsNone: traffic that halves or grows by half
// while latency and errors hold is absorbed, not an incident; the same
// change with requests failing is not.
func TestVolumeChangeWithoutImpactIsNone(t *testing.T) {
	tests := []struct {
		name  string
		fault m.Values
		none  bool
	}{
		{"half the traffic", m.Values{m.ArrivalRPS: 6, m.ThroughputRPS: 6, m.PromptTPS: 6000, m.GenerationTPS: 780, m.RunningSeqs: 15, m.KVCacheUsage: 0.23}, true},
		{"half again", m.Values{m.ArrivalRPS: 18, m.ThroughputRPS: 18, m.PromptTPS: 18000, m.GenerationTPS: 2340, m.RunningSeqs: 45, m.KVCacheUsage: 0.66}, true},
		{"fewer served than arrive", m.Values{m.ArrivalRPS: 12, m.ThroughputRPS: 6, m.GenerationTPS: 780, m.RunningSeqs: 15}, false},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := e.Diagnose(synth(3, tc.fault))
			if (d.RootCause == m.CauseNone) != tc.none {
				t.Errorf("diagnosed %s (candidates %v), want none: %v", d.RootCause, d.Candidates, tc.none)
			}
		})
	}
}

// TestFrontendTimeIsHostOverhead: TTFT counts from the API server's
// arrival, so time to first token that grew while the engine's queue and
// prefill held is spent in the API server (tokenising, input
// processing), a host overhead; the same TTFT behind a growing queue is
// not.
func TestFrontendTimeIsHostOverhead(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		d := e.Diagnose(synth(seed, m.Values{m.TTFT: 900, m.TTFTP99: 2400, m.E2E: 3280, m.GatewayE2E: 3340}))
		if d.RootCause != m.CauseHostOverhead {
			t.Fatalf("seed %d: API-server delay diagnosed %s (candidates %v), want host_overhead", seed, d.RootCause, d.Candidates)
		}
		cited := false
		for _, ev := range d.Evidence {
			cited = cited || ev.Metric == m.TTFT && strings.Contains(ev.Text, "API server")
		}
		if !cited {
			t.Errorf("seed %d: evidence %v does not say the time is spent in the API server", seed, d.Evidence)
		}
		queued := e.Diagnose(synth(seed, m.Values{m.TTFT: 900, m.QueueTime: 730, m.QueueDepth: 40, m.E2E: 3280, m.GatewayE2E: 3340, m.ArrivalRPS: 16, m.ThroughputRPS: 12.5, m.SMUtil: 0.9}))
		if queued.RootCause == m.CauseHostOverhead {
			t.Errorf("seed %d: TTFT grown with the queue named host_overhead (candidates %v)", seed, queued.Candidates)
		}
	}
}

// TestCachedContextsAreBandwidth: prompts four times longer whose growth
// the prefix cache serves (uncached tokens flat) add no prefill; decode
// steps that slowed with them read the longer KV, which is memory
// bandwidth, not a long-prompt prefill surge. The same growth uncached is
// the surge.
func TestCachedContextsAreBandwidth(t *testing.T) {
	cached := m.Values{m.MeanPromptTokens: 4000, m.KVCacheHitRate: 0.88, m.PromptTPS: 48000, m.TPOT: 27, m.TPOTP99: 42,
		m.DecodeTime: 3500, m.E2E: 3760, m.GatewayE2E: 3820, m.TTFT: 200, m.PrefillTime: 135, m.KVCacheUsage: 0.75, m.RunningSeqs: 40}
	uncached := overlay(cached, m.Values{m.KVCacheHitRate: 0.55, m.PrefillTime: 520, m.TTFT: 650})
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		if d := e.Diagnose(synth(seed, cached)); d.RootCause != m.CauseMemoryBandwidthBound {
			t.Errorf("seed %d: cached longer contexts diagnosed %s (candidates %v), want memory_bandwidth_bound", seed, d.RootCause, d.Candidates)
		}
		if d := e.Diagnose(synth(seed, uncached)); d.RootCause != m.CauseLongPromptPrefill {
			t.Errorf("seed %d: uncached longer prompts diagnosed %s (candidates %v), want long_prompt_prefill", seed, d.RootCause, d.Candidates)
		}
	}
}

// TestOneClearSignalWithACauseIsAFault: a prefix hit rate four standard
// deviations under its baseline, which the prefix-miss rule explains, is
// named even before latency moves; at two and a half it stays within
// the noise.
func TestOneClearSignalWithACauseIsAFault(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		s := synth(seed, nil)
		base, _ := deviationsAndCounts(s)
		hit := base[m.KVCacheHitRate]
		s.Current[m.KVCacheHitRate] = hit.Mean - 4*hit.Std
		if d := e.Diagnose(s); d.RootCause != m.CausePrefixCacheMiss {
			t.Errorf("seed %d: hit rate 4 sigma down diagnosed %s (candidates %v), want prefix_cache_miss", seed, d.RootCause, d.Candidates)
		}
		s.Current[m.KVCacheHitRate] = hit.Mean - 2.5*hit.Std
		if d := e.Diagnose(s); d.RootCause != m.CauseNone {
			t.Errorf("seed %d: hit rate 2.5 sigma down diagnosed %s (candidates %v), want none", seed, d.RootCause, d.Candidates)
		}
	}
}

// TestLoadWithinCapacityIsNotAnIncident: half again as many requests,
// served as they arrive, make bigger batches and slower steps; latency
// that grew less than the load is the load's, not a fault. The same load
// with latency doubled and requests waiting is more than the load.
func TestLoadWithinCapacityIsNotAnIncident(t *testing.T) {
	absorbed := m.Values{m.ArrivalRPS: 18, m.ThroughputRPS: 18, m.RunningSeqs: 54, m.TPOT: 23, m.TPOTP99: 38,
		m.DecodeTime: 2990, m.E2E: 3260, m.GatewayE2E: 3320, m.TTFT: 250, m.PrefillTime: 170, m.QueueTime: 14,
		m.PromptTPS: 18000, m.GenerationTPS: 2300, m.KVCacheUsage: 0.7, m.SMUtil: 0.72}
	beyond := overlay(absorbed, m.Values{m.QueueTime: 900, m.TTFT: 1100, m.E2E: 5200, m.GatewayE2E: 5260})
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		if d := e.Diagnose(synth(seed, absorbed)); d.RootCause != m.CauseNone {
			t.Errorf("seed %d: load absorbed within capacity diagnosed %s (candidates %v), want none", seed, d.RootCause, d.Candidates)
		}
		if d := e.Diagnose(synth(seed, beyond)); d.RootCause == m.CauseNone {
			t.Errorf("seed %d: latency beyond the load and a queue diagnosed none", seed)
		}
	}
}

// TestAbortsFollowTheirCause: requests aborted by clients count as errors.
// Clients that give up on a slow gateway, or time out of a queue that a
// capped batch builds, make errors that the upstream cause explains; the
// engine is not failing on its own.
func TestAbortsFollowTheirCause(t *testing.T) {
	tests := []struct {
		name  string
		fault m.Values
		want  string
	}{
		{"gateway", m.Values{m.GatewayE2E: 3130, m.ErrorRate: 0.04}, m.CauseTransportLatency},
		{"gateway, aborts past what an engine fails on its own", m.Values{m.GatewayE2E: 3200, m.ErrorRate: 0.07}, m.CauseTransportLatency},
		{"capped batch", m.Values{m.ThroughputRPS: 9,
			m.QueueDepth: 200, m.QueueTime: 30000, m.TTFT: 30200, m.E2E: 32400, m.GatewayE2E: 32460, m.ErrorRate: 0.3, m.TPOT: 16}, m.CauseGPUUnderutilized},
	}
	e := New(Options{})
	for _, tc := range tests {
		for seed := int64(1); seed <= 3; seed++ {
			if d := e.Diagnose(synth(seed, tc.fault)); d.RootCause != tc.want {
				t.Errorf("%s, seed %d: diagnosed %s (candidates %v), want %s", tc.name, seed, d.RootCause, d.Candidates, tc.want)
			}
		}
	}
}

// TestRefillingCacheIsNotTrafficMissingPrefixes: a hit rate that dropped
// to zero in the last minutes and is climbing back is a cache emptied by
// a restart, not traffic that stopped sharing prefixes; the same hit rate
// reached by a step down and held is.
func TestRefillingCacheIsNotTrafficMissingPrefixes(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		for _, tc := range []struct {
			name   string
			recent []float64
			miss   bool
		}{
			{"refilling", []float64{0.55, 0.01, 0.1, 0.2, 0.26}, false},
			{"stepped down", []float64{0.55, 0.33, 0.31, 0.32, 0.3}, true},
		} {
			s := synth(seed, m.Values{m.KVCacheHitRate: 0.32})
			for i, h := range tc.recent {
				v := jitter(healthy(), rand.New(rand.NewSource(seed+int64(i))), 0.03)
				v[m.KVCacheHitRate] = h
				s.History = append(s.History, m.Point{At: testAt.Add(time.Duration(i-5) * time.Minute), Values: v})
			}
			d := e.Diagnose(s)
			if got := d.RootCause == m.CausePrefixCacheMiss; got != tc.miss {
				t.Errorf("seed %d, %s: diagnosed %s (candidates %v); prefix miss wanted: %v", seed, tc.name, d.RootCause, d.Candidates, tc.miss)
			}
		}
	}
}

// TestErrorsWithoutAQueueAreTheEngines: failures well past a healthy rate
// while requests hardly wait are the engine's own, even when another cause
// upstream of the queue fires beside them.
func TestErrorsWithoutAQueueAreTheEngines(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		d := e.Diagnose(synth(seed, m.Values{m.ErrorRate: 0.035, m.KVCacheHitRate: 0.38, m.ThroughputRPS: 11}))
		if d.RootCause != m.CauseEngineErrors {
			t.Errorf("seed %d: diagnosed %s (candidates %v), want engine_errors", seed, d.RootCause, d.Candidates)
		}
	}
}

// TestOverloadAdmittedIntoTheBatch: with room in max_num_seqs and the
// cache, a load the engine cannot serve comfortably goes into the running
// batch instead of the waiting queue; latency then grows faster than the
// load, which names the backlog though hardly anything waits.
func TestOverloadAdmittedIntoTheBatch(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		d := e.Diagnose(synth(seed, m.Values{m.ArrivalRPS: 19, m.ThroughputRPS: 18.5, m.RunningSeqs: 75, m.TPOT: 41, m.TPOTP99: 70,
			m.DecodeTime: 5300, m.E2E: 5700, m.GatewayE2E: 5760, m.TTFT: 380, m.PrefillTime: 250, m.QueueTime: 40,
			m.PromptTPS: 18500, m.GenerationTPS: 2400, m.KVCacheUsage: 0.75, m.SMUtil: 0.8}))
		if d.RootCause != m.CauseQueueBacklog {
			t.Errorf("seed %d: diagnosed %s (candidates %v), want queue_backlog", seed, d.RootCause, d.Candidates)
		}
	}
}

// TestBacklogFillsTheCache: half again as many arrivals with requests
// waiting: the scheduler admits from the queue until the KV cache is full
// and starts preempting. The full cache is the backlog's doing, so the
// eviction storm ranks as its symptom (the residual ranking keeps
// symptomFactor of a fully explained cause's score), not as a second
// cause beside it.
func TestBacklogFillsTheCache(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		d := e.Diagnose(synth(seed, m.Values{m.ArrivalRPS: 18, m.ThroughputRPS: 12, m.QueueDepth: 300, m.QueueTime: 20000,
			m.TTFT: 20400, m.E2E: 25000, m.GatewayE2E: 25060, m.RunningSeqs: 160, m.KVCacheUsage: 0.99, m.PreemptionRate: 1.5,
			m.TPOT: 30, m.DecodeTime: 3450, m.PrefillTime: 600, m.SMUtil: 0.95, m.KVCacheHitRate: 0.3}))
		if d.RootCause != m.CauseQueueBacklog {
			t.Errorf("seed %d: diagnosed %s (candidates %v), want queue_backlog", seed, d.RootCause, d.Candidates)
		}
		for _, c := range d.Candidates {
			if c.RootCause == m.CauseKVCacheEviction && c.Score > symptomFactor+0.05 {
				t.Errorf("seed %d: the storm the backlog explains still scores %.3f (candidates %v)", seed, c.Score, d.Candidates)
			}
		}
	}
}

// TestRestartIsNotHostOverhead: slower steps around an idle GPU are the
// host-overhead signature, and also what an engine restart leaves: down
// for part of the minute, its GPU idle, its requests stretched. A prefix
// cache emptied in the same minutes marks the restart.
func TestRestartIsNotHostOverhead(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		for _, tc := range []struct {
			name string
			hit  float64
			host bool
		}{{"cache kept", 0.55, true}, {"cache emptied", 0.01, false}} {
			s := synth(seed, faults[m.CauseHostOverhead])
			for i := 0; i < 4; i++ {
				v := overlay(jitter(healthy(), rand.New(rand.NewSource(seed+int64(i))), 0.03), faults[m.CauseHostOverhead])
				if i == 1 {
					v[m.KVCacheHitRate] = tc.hit
				}
				s.History = append(s.History, m.Point{At: testAt.Add(time.Duration(i-4) * time.Minute), Values: v})
			}
			d := e.Diagnose(s)
			if got := d.RootCause == m.CauseHostOverhead; got != tc.host {
				t.Errorf("seed %d, %s: diagnosed %s (candidates %v); host overhead wanted: %v", seed, tc.name, d.RootCause, d.Candidates, tc.host)
			}
		}
	}
}

// TestRejectedDraftsExplainTPOT: TPOT is time per token, and with fewer
// drafts accepted each step yields fewer tokens. Drafts rejected 75% of
// the time against 55% before cut the tokens a step (four drafts) from
// 2.8 to 2, so TPOT 1.55 times its baseline is mostly theirs (log 1.39 /
// log 1.55 = 0.75); bandwidth that itself moved is not.
func TestRejectedDraftsExplainTPOT(t *testing.T) {
	in := func(dram float64) *reader {
		s := synth(1, m.Values{m.RejectionRate: 0.75, m.DRAMActive: dram})
		for _, p := range s.History {
			p.Values[m.RejectionRate] = 0.555 + 0.002*float64(len(p.Values)%3)
			p.Values[m.TPOT] = 18
		}
		s.Current[m.TPOT] = 18 * 1.55
		base, _ := deviationsAndCounts(s)
		return &reader{in: Input{Snapshot: s, Baseline: base}}
	}
	if got := explainedBy(m.CauseMemoryBandwidthBound, m.CauseSpecDecodeDegradation, 0, in(0.6)); math.Abs(got-0.75) > 0.03 {
		t.Errorf("share of the TPOT growth the drafts explain: %.3f, want 0.75", got)
	}
	if got := explainedBy(m.CauseMemoryBandwidthBound, m.CauseSpecDecodeDegradation, 0, in(0.95)); got > 0.05 {
		t.Errorf("with DRAM activity up the drafts still explain %.3f of the bandwidth finding", got)
	}
}

// TestIdleClockIsNotThrottling: a GPU that idles lowers its own clock,
// power and temperature; slower steps around such a GPU are not a
// thermal or power limit. The same clock under a lowered power cap, with
// the GPU as busy as before, is.
func TestIdleClockIsNotThrottling(t *testing.T) {
	e := New(Options{})
	for seed := int64(1); seed <= 3; seed++ {
		idle := e.Diagnose(synth(seed, m.Values{m.SMClock: 1100, m.Power: 230, m.GPUTemp: 45, m.SMUtil: 0.2, m.TensorActive: 0.1,
			m.DRAMActive: 0.15, m.TPOT: 60, m.DecodeTime: 7800, m.E2E: 8000, m.GatewayE2E: 8060}))
		if idle.RootCause == m.CauseGPUThrottling {
			t.Errorf("seed %d: an idle GPU's clock named throttling (candidates %v)", seed, idle.Candidates)
		}
		capped := e.Diagnose(synth(seed, m.Values{m.SMClock: 1100, m.Power: 300, m.GPUTemp: 60, m.SMUtil: 0.74,
			m.TPOT: 30, m.DecodeTime: 3900, m.E2E: 4100, m.GatewayE2E: 4160}))
		if capped.RootCause != m.CauseGPUThrottling {
			t.Errorf("seed %d: a power-capped busy GPU diagnosed %s (candidates %v), want gpu_throttling", seed, capped.RootCause, capped.Candidates)
		}
	}
}

// TestHostOverheadGivesWayToGPUWorkAndLoad: host time per step opens gaps
// between the same kernels. It cannot make the tensor cores work more per
// second, so DRAM activity falling while they do is a shift of the step's
// mix, not host overhead; nor can it make the engine serve more, so
// slower steps while clearly more requests are served carry more work.
func TestHostOverheadGivesWayToGPUWorkAndLoad(t *testing.T) {
	e := New(Options{})
	slow := m.Values{m.TPOT: 28, m.DecodeTime: 3640, m.E2E: 3850, m.GatewayE2E: 3910, m.DRAMActive: 0.42}
	hostScore := func(d Diagnosis) float64 {
		for _, c := range d.Candidates {
			if c.RootCause == m.CauseHostOverhead {
				return c.Score
			}
		}
		return 0
	}
	for seed := int64(1); seed <= 3; seed++ {
		alone := e.Diagnose(synth(seed, slow))
		if alone.RootCause != m.CauseHostOverhead {
			t.Fatalf("seed %d: slower steps with DRAM idler diagnosed %s, want host_overhead", seed, alone.RootCause)
		}
		if d := e.Diagnose(synth(seed, overlay(slow, m.Values{m.TensorActive: 0.7}))); d.RootCause == m.CauseHostOverhead {
			t.Errorf("seed %d: tensor cores busier named host_overhead (candidates %v)", seed, d.Candidates)
		}
		loaded := e.Diagnose(synth(seed, overlay(slow, m.Values{m.ArrivalRPS: 18, m.ThroughputRPS: 18, m.RunningSeqs: 68})))
		if got, was := hostScore(loaded), hostScore(alone); got > 0.5*was {
			t.Errorf("seed %d: with half again as many requests served host overhead scores %.3f, against %.3f alone", seed, got, was)
		}
	}
}

// TestTimeoutsNeedLongWaits: failures beside a queue that dominates the
// request are clients timing out only when the wait runs to tens of
// seconds; client timeouts do not fire after four. Beside a
// bandwidth-bound engine, the same failures keep most of their weight
// behind a 4-second queue and lose it behind a 30-second one.
func TestTimeoutsNeedLongWaits(t *testing.T) {
	e := New(Options{})
	errScore := func(wait float64) float64 {
		d := e.Diagnose(synth(1, m.Values{m.ErrorRate: 0.04, m.QueueTime: wait, m.QueueDepth: 40, m.TTFT: wait + 200,
			m.E2E: wait + 1500, m.GatewayE2E: wait + 1560, m.DRAMActive: 0.95, m.TPOT: 28, m.DecodeTime: 1300, m.ThroughputRPS: 10.5}))
		for _, c := range d.Candidates {
			if c.RootCause == m.CauseEngineErrors {
				return c.Score
			}
		}
		return 0
	}
	if short, long := errScore(4000), errScore(30000); short < 0.6 || long > 0.45 {
		t.Errorf("engine errors score %.3f behind a 4 s queue and %.3f behind a 30 s one; want at least 0.6 and at most 0.45", short, long)
	}
}

// TestFrontendTimeWithALostInterval: TTFT five times its baseline while
// the scrape lost the queue interval (its depth calm) or the prefill
// interval (prompts and prefix hits calm) is still the API server's time;
// with the prefill lost and prompts four times longer it is not.
func TestFrontendTimeWithALostInterval(t *testing.T) {
	e := New(Options{})
	slow := m.Values{m.TTFT: 900, m.TTFTP99: 2400, m.E2E: 3280, m.GatewayE2E: 3340}
	for seed := int64(1); seed <= 3; seed++ {
		noQueue := synth(seed, slow)
		delete(noQueue.Current, m.QueueTime)
		if d := e.Diagnose(noQueue); d.RootCause != m.CauseHostOverhead {
			t.Errorf("seed %d: TTFT up with the queue interval lost diagnosed %s (candidates %v), want host_overhead", seed, d.RootCause, d.Candidates)
		}
		if d := e.Diagnose(synthWithout(seed, slow, m.PrefillTime)); d.RootCause != m.CauseHostOverhead {
			t.Errorf("seed %d: TTFT up without a prefill interval diagnosed %s (candidates %v), want host_overhead", seed, d.RootCause, d.Candidates)
		}
		longer := overlay(slow, m.Values{m.MeanPromptTokens: 4000, m.PromptTPS: 48000})
		if d := e.Diagnose(synthWithout(seed, longer, m.PrefillTime)); d.RootCause == m.CauseHostOverhead {
			t.Errorf("seed %d: TTFT up with prompts four times longer named host_overhead (candidates %v)", seed, d.Candidates)
		}
	}
}

// TestSlowStepsGrowTheBatch: steps two and a half times slower at steady
// arrivals grow the batch fivefold (Little's law), and the bigger batch
// keeps the tensor cores and SMs busier each step while DRAM idles: the
// activity is the batch's, the slowdown the host's. The same batch filled
// from a queue that holds most of each request is load.
func TestSlowStepsGrowTheBatch(t *testing.T) {
	e := New(Options{})
	slow := m.Values{m.TPOT: 46, m.TPOTP99: 75, m.DecodeTime: 5980, m.E2E: 6250, m.GatewayE2E: 6310, m.TTFT: 260, m.QueueTime: 40,
		m.RunningSeqs: 150, m.KVCacheUsage: 0.8, m.TensorActive: 0.8, m.SMUtil: 0.85, m.DRAMActive: 0.5}
	for seed := int64(1); seed <= 3; seed++ {
		if d := e.Diagnose(synth(seed, slow)); d.RootCause != m.CauseHostOverhead {
			t.Errorf("seed %d: slower steps that grew the batch diagnosed %s (candidates %v), want host_overhead", seed, d.RootCause, d.Candidates)
		}
		queued := overlay(slow, m.Values{m.QueueTime: 9000, m.QueueDepth: 150, m.TTFT: 9200, m.E2E: 15200, m.GatewayE2E: 15260})
		if d := e.Diagnose(synth(seed, queued)); d.RootCause == m.CauseHostOverhead {
			t.Errorf("seed %d: a batch filled from a deep queue named host_overhead (candidates %v)", seed, d.Candidates)
		}
	}
}

// TestStormBesideLongerPromptsIsTheStorm: a cache filled to 97% with
// preemptions and lost prefix hits while prompts grew 40% is an eviction
// storm. Prompts 1.4 times longer would fill the cache to about 63%; and
// of the uncached tokens' growth (2.2 times) they account for less than
// half, the lost hits for the rest. Prompts four times longer fill the
// cache themselves, and the hits they evict are theirs.
func TestStormBesideLongerPromptsIsTheStorm(t *testing.T) {
	e := New(Options{})
	storm := m.Values{m.KVCacheUsage: 0.97, m.PreemptionRate: 3, m.KVCacheHitRate: 0.3, m.MeanPromptTokens: 1400, m.PromptTPS: 16800,
		m.PrefillTime: 300, m.TTFT: 700, m.TTFTP99: 2500, m.QueueTime: 150, m.QueueDepth: 8, m.E2E: 3300, m.GatewayE2E: 3360, m.TPOT: 21}
	surge := overlay(storm, m.Values{m.MeanPromptTokens: 4000, m.PromptTPS: 48000, m.PrefillTime: 900, m.TTFT: 1500, m.E2E: 4100, m.GatewayE2E: 4160})
	for seed := int64(1); seed <= 3; seed++ {
		if d := e.Diagnose(synth(seed, storm)); d.RootCause != m.CauseKVCacheEviction {
			t.Errorf("seed %d: a storm beside 40%% longer prompts diagnosed %s (candidates %v), want kv_cache_eviction", seed, d.RootCause, d.Candidates)
		}
		if d := e.Diagnose(synth(seed, surge)); d.RootCause != m.CauseLongPromptPrefill {
			t.Errorf("seed %d: prompts four times longer that filled the cache diagnosed %s (candidates %v), want long_prompt_prefill", seed, d.RootCause, d.Candidates)
		}
	}
}
