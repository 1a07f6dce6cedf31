package diagnose

import (
	"math"
	"math/rand"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

// scaled returns the hand-made fault at a severity in (0, 1]: each faulted
// value moves geometrically from the healthy value toward the full fault.
func scaled(fault m.Values, severity float64) m.Values {
	h := healthy()
	out := m.Values{}
	for id, f := range fault {
		base := h[id]
		switch {
		case base > 0 && f > 0:
			out[id] = base * math.Pow(f/base, severity)
		default:
			out[id] = base + severity*(f-base)
		}
	}
	return out
}

// TestSyntheticRobustness runs every hand-made signature at full and
// half strength over many noise seeds, with the optional sources (gateway,
// DCP profiling fields) dropped at random, and reports the accuracy. It
// guards against rules that only work on one exact picture.
func TestSyntheticRobustness(t *testing.T) {
	if testing.Short() {
		t.Skip("robustness sweep")
	}
	e := New(Options{})
	optional := []string{m.GatewayE2E, m.ArrivalRPS, m.DRAMActive, m.TensorActive}
	for _, sev := range []struct {
		severity float64
		min      float64
	}{{1, 0.9}, {0.6, 0.7}, {0.35, 0.75}} {
		right, total := 0, 0
		misses := map[string]int{}
		for cause, fault := range faults {
			if cause == m.CauseUnknown {
				continue // "no pattern" has no meaningful half strength
			}
			for seed := int64(0); seed < 20; seed++ {
				rng := rand.New(rand.NewSource(seed))
				s := synth(500+seed, scaled(fault, sev.severity))
				for _, id := range optional {
					if rng.Intn(4) == 0 && !isRoot(cause, id) {
						delete(s.Current, id)
						for i := range s.History {
							delete(s.History[i].Values, id)
						}
					}
				}
				d := e.Diagnose(s)
				total++
				if d.RootCause == cause {
					right++
				} else {
					misses[cause+"->"+d.RootCause]++
				}
			}
		}
		acc := float64(right) / float64(total)
		t.Logf("severity %.1f: %d/%d right (%.1f%%); misses %v", sev.severity, right, total, 100*acc, misses)
		if acc < sev.min {
			t.Errorf("severity %.1f: accuracy %.2f below %.2f", sev.severity, acc, sev.min)
		}
	}
}

func isRoot(cause, id string) bool {
	for _, r := range causeRoots[cause] {
		if r == id {
			return true
		}
	}
	return false
}
