package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// A metric the snapshot's source cannot provide (its engine has no
// equivalent) stands its rules down with the source's reason.
func TestAbsentMetricsStandDownWithTheirReason(t *testing.T) {
	s := m.Snapshot{At: time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC), Scope: m.Scope{Model: "x"},
		Current: m.Values{m.TTFT: 80, m.TPOT: 20, m.ThroughputRPS: 12},
		Engine:  m.EngineSGLang,
		Absent:  map[string]string{m.ErrorRate: "SGLang exports no equivalent: it counts aborts only"}}
	d := New(Options{}).Diagnose(s)
	if !slices.Contains(d.Missing, m.ErrorRate) {
		t.Fatalf("missing %v, want error_rate", d.Missing)
	}
	found := false
	for _, n := range d.Notes {
		found = found || strings.Contains(n, "Could not check error_rate: SGLang exports no equivalent: it counts aborts only")
	}
	if !found {
		t.Errorf("notes %q do not give the source's reason", d.Notes)
	}
	// Without a reason from the source, no such note.
	s.Absent = nil
	for _, n := range New(Options{}).Diagnose(s).Notes {
		if strings.Contains(n, "Could not check") {
			t.Errorf("note %q without an absent reason", n)
		}
	}
}

func TestWants(t *testing.T) {
	if got := Wants(m.CauseEngineErrors); !slices.Equal(got, []string{m.ErrorRate}) {
		t.Errorf("Wants(engine_errors) = %v", got)
	}
	if got := Wants(m.CauseNone); got != nil {
		t.Errorf("Wants(none) = %v, want nil", got)
	}
}
