package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestRunDepths(t *testing.T) {
	e := []float64{1, 4, 5, -6, 3}
	cases := []struct {
		name string
		k, s int
		want []float64
	}{
		{"up, one point", 1, 1, []float64{1, 4, 5, -6, 3}},
		{"up, two points", 2, 1, []float64{1, 4, -6, -6}},
		{"down, two points", 2, -1, []float64{-4, -5, -5, -3}},
		{"either side, three points", 3, 0, []float64{1, 4, 3}},
		{"longer than the record", 6, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := runDepths(e, tc.k, tc.s)
			if len(got) != len(tc.want) {
				t.Fatalf("runDepths(k=%d, s=%d) = %v, want %v", tc.k, tc.s, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("runDepths(k=%d, s=%d) = %v, want %v", tc.k, tc.s, got, tc.want)
				}
			}
		})
	}
}

func TestEpisodePeaks(t *testing.T) {
	// Two episodes beyond 3: a long one counted once at its deepest.
	got := episodePeaks([]float64{0, 4, 9, 5, 2, 1, 3.5, 0, 3}, 3)
	want := []float64{9, 3.5}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("episodePeaks = %v, want %v", got, want)
	}
}

func TestEpisodeRate(t *testing.T) {
	peaks := []float64{4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 11}
	cases := []struct {
		name   string
		peaks  []float64
		m      float64
		days   float64
		want   float64 // NaN: not ok
		approx bool    // want is an upper bound the tail must stay below, above 0
	}{
		{"counted", peaks, 9, 10, 0.6, false},
		{"beyond the deepest: Pareto tail, below the count's floor", peaks, 40, 10, 0.3, true},
		{"few episodes: exponential tail over the band", peaks[:6], 40, 10, 0.6 * math.Exp(-37/3.5), false},
		{"few episodes, within the deepest", peaks[:2], 4.5, 10, 0.2 * math.Exp(-1.5/1.5), false},
		{"no episode", nil, 40, 10, math.NaN(), false},
		{"no record", peaks, 9, 0, math.NaN(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := episodeRate(tc.peaks, 3, tc.m, tc.days)
			switch {
			case math.IsNaN(tc.want):
				if ok {
					t.Errorf("episodeRate = %g, want not ok", got)
				}
			case !ok:
				t.Errorf("episodeRate not ok, want %g", tc.want)
			case tc.approx && (got <= 0 || got >= tc.want):
				t.Errorf("episodeRate = %g, want in (0, %g)", got, tc.want)
			case !tc.approx && math.Abs(got-tc.want) > 1e-12:
				t.Errorf("episodeRate = %g, want %g", got, tc.want)
			}
		})
	}
	// Bursts of one size: a burst three times as deep is far rarer
	// than bursts of every size make it.
	same := []float64{40, 41, 40, 42, 39, 40, 41, 40, 43, 40, 41, 42}
	if r, _ := episodeRate(same, 30, 120, 4); r > 0.01 {
		t.Errorf("rate of 120 among bursts of 40 = %g, want <= 0.01", r)
	}
	// A short record of bursts of a few hundred: a burst of about their
	// size is routine, however many standard errors out the band says it
	// is, and one ten times their size is not.
	short := []float64{650, 700, 800}
	if r, _ := episodeRate(short, 150, 750, 4); r < 0.1 {
		t.Errorf("rate of 750 among three bursts of 650-800 in 4 days = %g, want >= 0.1", r)
	}
	if r, _ := episodeRate(short, 150, 7500, 4); r > 1e-4 {
		t.Errorf("rate of 7500 among three bursts of 650-800 in 4 days = %g, want <= 1e-4", r)
	}
	// Deeper is rarer.
	a, _ := episodeRate(peaks, 3, 25, 10)
	b, _ := episodeRate(peaks, 3, 50, 10)
	if !(b < a) {
		t.Errorf("rate at 50 (%g) not below rate at 25 (%g)", b, a)
	}
}

func TestDetectorIntermittentBursts(t *testing.T) {
	// Four weeks of an hourly error count that is zero most hours, with
	// a burst of 1 to 30 errors (heavy-tailed sizes) on about one hour in
	// twelve at random times: the model's band is near zero wide, so
	// every burst is many standard errors out. Routine bursts in the last
	// two weeks must not alert with the record judging them, and a burst
	// of 300, ten times the largest, must. With the rule off (and the
	// routine rule off in both runs, to see this one alone), the routine
	// bursts alert. The series is intermittent (bursty.go), so
	// BurstyPerDay judges it the same way without FalsePerDay.
	rng := rand.New(rand.NewPCG(3, 3))
	const n = 28 * 24
	s := make([]metrics.Sample, n)
	for i := range s {
		s[i].T = t0.Add(time.Duration(i) * time.Hour)
		if rng.IntN(12) == 0 {
			s[i].V = math.Floor(math.Min(30, 1/math.Pow(rng.Float64()+0.03, 1.2)))
		}
	}
	deepAt := n - 30
	s[deepAt].V, s[deepAt+1].V = 300, 300
	late := s[14*24].T
	run := func(falsePerDay, burstyPerDay float64) (lateAlerts int, deep bool) {
		d := NewDetector(DetectorOptions{For: 3 * time.Minute, RoutinePerDay: -1, FalsePerDay: falsePerDay, BurstyPerDay: burstyPerDay})
		for _, a := range feed(d, "value", s) {
			switch {
			case a.State != Firing:
			case !a.Start.Before(s[deepAt].T) && a.Start.Before(s[deepAt+2].T):
				deep = true
				if falsePerDay > 0 && (a.P <= 0 || a.P > falsePerDay) {
					t.Errorf("deep burst's rate P = %g, want in (0, %g]", a.P, falsePerDay)
				}
			case !a.Start.Before(late):
				lateAlerts++
			}
		}
		return lateAlerts, deep
	}
	lateOn, deepOn := run(0.1, 0)
	lateBursty, deepBursty := run(0, 0.1)
	lateOff, deepOff := run(0, 0)
	if lateOff < 10 || !deepOff {
		t.Errorf("rules off: %d routine bursts alerted in the last two weeks (want >= 10), deep burst alerted %v", lateOff, deepOff)
	}
	if 3*lateOn > lateOff || !deepOn {
		t.Errorf("FalsePerDay on: %d routine bursts alerted in the last two weeks (want at most a third of the %d with it off), deep burst alerted %v (want true)", lateOn, lateOff, deepOn)
	}
	if 3*lateBursty > lateOff || !deepBursty {
		t.Errorf("BurstyPerDay on: %d routine bursts alerted in the last two weeks (want at most a third of the %d with it off), deep burst alerted %v (want true)", lateBursty, lateOff, deepBursty)
	}
}

func TestConformalP(t *testing.T) {
	scores := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	cases := []struct {
		x, want float64
	}{
		{0, 1},          // every score as high
		{5, 6.0 / 10},   // 5..9
		{9, 2.0 / 10},   // 9 itself
		{100, 1.0 / 10}, // beyond every score: the floor
	}
	for _, tc := range cases {
		if got := conformalP(scores, tc.x); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("conformalP(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := conformalP(nil, 3); got != 1 {
		t.Errorf("conformalP with no scores = %g, want 1", got)
	}
}

// TestRunProbOfBursts: on a zero-inflated series whose normal bursts are
// far outside any band, Prob is calibrated (over the judged points, a
// value at most a comes at most a share a of the time) and a burst far
// beyond the series' own bursts gets the smallest probability the record
// can give.
func TestRunProbOfBursts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	const step = 5 * time.Minute
	n := 8 * 288
	var s []metrics.Sample
	for i := 0; i < n; i++ {
		v := 0.0
		if rng.Float64() < 0.02 { // a burst every four hours or so
			v = float64(5 + rng.IntN(20))
		}
		s = append(s, metrics.Sample{T: t0.Add(time.Duration(i) * step), V: v})
	}
	big := n - 10
	s[big].V, s[big+1].V = 400, 400
	d := NewDetector(DetectorOptions{For: 3 * time.Minute})
	judged, small, bursts := 0, map[float64]int{}, 0
	bigProb := math.NaN()
	for i, p := range s {
		d.Observe("errors", p.T, p.V)
		b, ok := d.LastBand("errors")
		if !ok || !b.At.Equal(p.T) || i < 3*288 {
			continue
		}
		if i == big {
			bigProb = b.Prob
			continue
		}
		if i > big {
			continue
		}
		judged++
		if math.IsNaN(b.Prob) {
			continue
		}
		bursts++
		for _, a := range []float64{0.001, 0.01, 0.05} {
			if b.Prob <= a {
				small[a]++
			}
		}
	}
	if bursts < 20 {
		t.Fatalf("%d judged bursts, want more", bursts)
	}
	for _, a := range []float64{0.001, 0.01, 0.05} {
		// Allow three binomial standard deviations of the count.
		limit := a*float64(judged) + 3*math.Sqrt(a*float64(judged)) + 1
		if float64(small[a]) > limit {
			t.Errorf("%d of %d judged points at prob <= %g, want at most %.0f", small[a], judged, a, limit)
		}
	}
	if !(bigProb > 0 && bigProb <= 1e-3) {
		t.Errorf("burst 20 times the usual: prob %g, want under 1e-3", bigProb)
	}
}
