package diagnose

import (
	"fmt"
	"math"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// TestFitIsotonic: the fit is monotone, follows how often each raw
// confidence was right, and moves a step resting on few reviews little.
func TestFitIsotonic(t *testing.T) {
	var pairs []calibPair
	add := func(conf float64, n, right int) {
		for i := 0; i < n; i++ {
			r := 0.0
			if i < right {
				r = 1
			}
			pairs = append(pairs, calibPair{conf, r})
		}
	}
	add(0.5, 200, 100) // right half the time: calibrated already
	add(0.7, 200, 180) // under-confident
	add(0.95, 200, 120)
	add(0.99, 3, 0) // three reviews only
	iso := fitIsotonic(pairs)
	tests := []struct {
		name   string
		raw    float64
		lo, hi float64
	}{
		{"already calibrated", 0.5, 0.47, 0.53},
		{"under-confident, pooled with the over-confident step above", 0.7, 0.72, 0.78},
		{"over-confident, pooled", 0.95, 0.72, 0.78},
		{"a step of three reviews is pooled, not trusted", 0.99, 0.7, 0.8},
		{"below every knot", 0.1, 0.47, 0.53},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := iso.apply(tc.raw); got < tc.lo || got > tc.hi {
				t.Errorf("apply(%v) = %.3f, want %v-%v (knots %v -> %v)", tc.raw, got, tc.lo, tc.hi, iso.xs, iso.ys)
			}
		})
	}
	prev := -1.0
	for x := 0.0; x <= 1; x += 0.01 {
		y := iso.apply(x)
		if y < prev-1e-12 || math.IsNaN(y) {
			t.Fatalf("not monotone at %.2f: %.4f after %.4f", x, y, prev)
		}
		prev = y
	}
	var nilFit *isotonic
	if got := nilFit.apply(0.8); got != 0.8 {
		t.Errorf("no fit maps 0.8 to %v, want it unchanged", got)
	}
}

// TestEngineCalibratesFromReviews: once enough reviewed cases record the
// confidence they were diagnosed at, the engine's confidence follows how
// often such diagnoses were confirmed; before that, and for known-truth
// labels, it is the uncalibrated one.
func TestEngineCalibratesFromReviews(t *testing.T) {
	snap := synth(1, faults[m.CauseKVCacheEviction])
	raw := New(Options{}).Diagnose(snap)
	sig := NewSignature(synth(2, faults[m.CauseQueueBacklog]))
	cases := func(n int, review func(i int) Review) []SignedCase {
		out := make([]SignedCase, n)
		for i := range out {
			out[i] = SignedCase{ID: fmt.Sprint(i), Signature: sig, Cause: m.CauseQueueBacklog, Review: review(i), At: time.Time{}, Confidence: raw.Confidence}
		}
		return out
	}
	halfWrong := func(i int) Review {
		if i%2 == 0 {
			return Corrected
		}
		return Confirmed
	}
	tests := []struct {
		name   string
		cases  []SignedCase
		lo, hi float64
	}{
		{"too few reviews", cases(minCalibCases-1, halfWrong), 0, 0},
		{"known truth says nothing of the engine", cases(400, func(int) Review { return Truth }), 0, 0},
		{"half of such diagnoses corrected", cases(400, halfWrong), 0.45, 0.6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{})
			if err := e.LearnSigned(tc.cases); err != nil {
				t.Fatal(err)
			}
			d := e.Diagnose(snap)
			if d.Uncalibrated < 0.8 {
				t.Fatalf("uncalibrated confidence %v, want the rules' clear finding (%v) barely moved by distant cases", d.Uncalibrated, raw.Confidence)
			}
			if tc.hi == 0 {
				if d.Confidence != d.Uncalibrated {
					t.Errorf("confidence %v, want it uncalibrated (%v)", d.Confidence, d.Uncalibrated)
				}
				return
			}
			if d.Confidence < tc.lo || d.Confidence > tc.hi {
				t.Errorf("confidence %.3f (uncalibrated %.3f), want %.3f-%.3f", d.Confidence, d.Uncalibrated, tc.lo, tc.hi)
			}
		})
	}
}
