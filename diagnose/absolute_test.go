package diagnose

import (
	"strings"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

// noHistory returns s without its history, as a fresh Prometheus gives it.
func noHistory(s m.Snapshot) m.Snapshot {
	s.History = nil
	return s
}

// TestAbsoluteWithoutHistory: every cause with an absolute signature is
// named from its synthetic fault with the history removed, with a lower
// confidence than the same fault earns with its history, and a note that
// says so.
func TestAbsoluteWithoutHistory(t *testing.T) {
	e := New(Options{})
	for _, cause := range []string{
		m.CauseEngineErrors, m.CauseKVCacheEviction, m.CauseQueueBacklog, m.CauseSpecDecodeDegradation,
		m.CauseMemoryBandwidthBound, m.CauseTransportLatency, m.CauseGPUThrottling, m.CauseNone,
	} {
		t.Run(cause, func(t *testing.T) {
			s := synth(7, faults[cause])
			with := e.Diagnose(s)
			without := e.Diagnose(noHistory(s))
			if without.RootCause != cause {
				t.Fatalf("without history diagnosed %s (candidates %+v), want %s", without.RootCause, without.Candidates, cause)
			}
			if with.RootCause == cause && without.Confidence >= with.Confidence {
				t.Errorf("confidence without history %.3f, with %.3f: want lower without", without.Confidence, with.Confidence)
			}
			if len(without.Notes) == 0 || !strings.Contains(without.Notes[0], "No usable history") {
				t.Errorf("notes %q do not say the history was missing", without.Notes)
			}
		})
	}
}

// TestAbsolutePipelineCase is the incident a fresh Prometheus opened: 9%
// of requests failing, no history at all.
func TestAbsolutePipelineCase(t *testing.T) {
	s := m.Snapshot{At: testAt, Scope: m.Scope{Model: "llama-8b"}, Current: m.Values{
		m.ErrorRate: 0.09, m.ThroughputRPS: 4, m.E2E: 900, m.TTFT: 60, m.TPOT: 12,
	}}
	d := New(Options{}).Diagnose(s)
	if d.RootCause != m.CauseEngineErrors {
		t.Fatalf("diagnosed %s, want engine_errors", d.RootCause)
	}
	if d.Severity != SeverityCritical {
		t.Errorf("severity %s, want critical at 9%% errors", d.Severity)
	}
	if d.Confidence > 0.7 || d.Confidence < 0.4 {
		t.Errorf("confidence %.3f: want a named cause on weak footing (0.4-0.7)", d.Confidence)
	}
}

// TestAbsoluteChronic: a condition that held all through the history is
// this deployment's normal, not an incident, however it looks in absolute
// terms; the same condition arriving now is one.
func TestAbsoluteChronic(t *testing.T) {
	fault := m.Values{m.KVCacheUsage: 0.97, m.PreemptionRate: 1.5, m.ErrorRate: 0.03}
	chronic := synth(3, nil)
	for i := range chronic.History {
		for id, x := range fault {
			chronic.History[i].Values[id] = x * (1 + 0.01*float64(i%3))
		}
	}
	for id, x := range fault {
		chronic.Current[id] = x
	}
	e := New(Options{})
	if d := e.Diagnose(chronic); d.RootCause != m.CauseNone {
		t.Errorf("chronic condition diagnosed %s (candidates %+v), want none", d.RootCause, d.Candidates)
	}
	if d := e.Diagnose(noHistory(chronic)); d.RootCause == m.CauseNone {
		t.Errorf("the same values without history diagnosed none, want a cause")
	}
}

// TestFootingShortHistory: two history points give no baseline, so the
// diagnosis rests on absolute limits; a full hour gives full footing.
func TestFootingShortHistory(t *testing.T) {
	s := synth(5, faults[m.CauseEngineErrors])
	short := s
	short.History = s.History[:2]
	for _, tc := range []struct {
		name string
		s    m.Snapshot
		want float64
	}{
		{"full", s, 1},
		{"two points", short, 0},
		{"none", noHistory(s), 0},
	} {
		_, counts := deviationsAndCounts(tc.s)
		if got := footing(tc.s, counts); got != tc.want {
			t.Errorf("%s: footing %.2f, want %.2f", tc.name, got, tc.want)
		}
		if d := New(Options{}).Diagnose(tc.s); d.RootCause != m.CauseEngineErrors {
			t.Errorf("%s: diagnosed %s, want engine_errors", tc.name, d.RootCause)
		}
	}
}
