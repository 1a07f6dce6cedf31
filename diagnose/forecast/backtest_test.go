package forecast

import (
	"testing"

	"github.com/casebook/casebook/metrics"
)

func TestBeganInIgnoresAlertsOpenBeforeTheWindow(t *testing.T) {
	windows := [][2]int64{{100, 200}, {400, 500}}
	// One alert open across both windows, one that begins in the second.
	long := interval{start: 50, fired: 52, end: 600}
	inside := interval{start: 410, fired: 412, end: 450}
	if s := score([]interval{long}, windows, 1, overlaps); s.Detected != 2 || s.TruePos != 1 {
		t.Errorf("overlaps: detected %d true %d, want 2 and 1", s.Detected, s.TruePos)
	}
	if s := score([]interval{long}, windows, 1, beganIn); s.Detected != 0 || s.TruePos != 0 {
		t.Errorf("beganIn, alert open before both windows: detected %d true %d, want 0 and 0", s.Detected, s.TruePos)
	}
	s := score([]interval{long, inside}, windows, 1, beganIn)
	if s.Detected != 1 || s.TruePos != 1 || s.Alerts != 2 {
		t.Errorf("beganIn: detected %d true %d alerts %d, want 1, 1, 2", s.Detected, s.TruePos, s.Alerts)
	}
	if d := s.MedianDelay().Seconds(); d != 12 {
		t.Errorf("delay %.0f s, want 12 (window start to firing)", d)
	}
}

func TestTuneFixedFindsTheQuietestThresholdAtTheTarget(t *testing.T) {
	// A flat series at 10 with two windows at 20 (window 1) and 13
	// (window 2), and a benign plateau at 15 outside any window. A
	// threshold in [13, 15) catches both windows and the plateau; one in
	// [15, 20) catches only window 1, without a false alert.
	var ts []int64
	var vals []float64
	for i := int64(0); i < 300; i++ {
		v := 10.0
		switch {
		case i >= 50 && i < 60:
			v = 20
		case i >= 150 && i < 160:
			v = 15
		case i >= 250 && i < 260:
			v = 13
		}
		ts, vals = append(ts, i), append(vals, v)
	}
	windows := [][2]int64{{50, 60}, {250, 260}}
	one := tuneFixed(metrics.Up, ts, vals, windows, 1, 3, 5, 1)
	if one.Detected != 1 || one.Alerts != 1 || one.Threshold < 15 {
		t.Errorf("target 1: threshold %v detects %d with %d alerts, want a threshold >= 15 with 1 and 1", one.Threshold, one.Detected, one.Alerts)
	}
	two := tuneFixed(metrics.Up, ts, vals, windows, 2, 3, 5, 1)
	if two.Detected != 2 || two.Alerts != 3 || two.Threshold >= 13 {
		t.Errorf("target 2: threshold %v detects %d with %d alerts, want a threshold under 13 with 2 and 3", two.Threshold, two.Detected, two.Alerts)
	}
}

func TestScoreFalsePerDay(t *testing.T) {
	s := Score{Alerts: 10, TruePos: 7, Days: 2}
	if got := s.FalsePerDay(); got != 1.5 {
		t.Errorf("FalsePerDay = %v, want 1.5 (3 false alerts over 2 days)", got)
	}
}
