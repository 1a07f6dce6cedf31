package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// stepScope builds one scope of three metrics at 1-minute points: two days
// of warm-up and one evaluated day of Gaussian noise around a level, and a
// step fault in every window that moves all three metrics in their bad
// direction at once (TTFT doubles, the error rate triples, the prefix hit
// rate halves).
func stepScope(seed uint64, faults ...time.Duration) ScopeSeries {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	evalFrom := start.Add(2 * Day)
	end := evalFrom.Add(Day)
	sc := ScopeSeries{Scope: "model=m", EvalFrom: evalFrom}
	for _, at := range faults {
		s := evalFrom.Add(at)
		sc.Windows = append(sc.Windows, Window{Start: s, End: s.Add(time.Hour)})
	}
	specs := []struct {
		id           string
		level, noise float64
		fault        float64
	}{
		{metrics.TTFT, 250, 0.03, 2},
		{metrics.ErrorRate, 0.01, 0.05, 3},
		{metrics.KVCacheHitRate, 0.7, 0.02, 0.5},
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, sp := range specs {
		s := metrics.Series{Metric: sp.id, Scope: metrics.Scope{Model: "m"}}
		for t := start; t.Before(end); t = t.Add(time.Minute) {
			v := sp.level * (1 + sp.noise*rng.NormFloat64())
			for _, w := range sc.Windows {
				if !t.Before(w.Start) && t.Before(w.End) {
					v *= sp.fault
				}
			}
			s.Samples = append(s.Samples, metrics.Sample{T: t, V: v})
		}
		sc.Series = append(sc.Series, s)
	}
	return sc
}

func TestBacktestIncidentsMergesOneScope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []time.Duration
	}{
		{"one step fault moving three metrics", []time.Duration{9 * time.Hour}},
		{"two separate faults", []time.Duration{5 * time.Hour, 15 * time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := stepScope(11, tc.faults...)
			res := BacktestIncidents([]ScopeSeries{sc}, IncidentBacktestOptions{})
			d := res.Dynamic
			if d.Windows != len(tc.faults) || d.Detected != len(tc.faults) {
				t.Fatalf("windows %d detected %d, want %d of %d", d.Windows, d.Detected, len(tc.faults), len(tc.faults))
			}
			if d.Alerts != len(tc.faults) || d.TruePos != len(tc.faults) {
				t.Errorf("incident alerts %d (true %d), want %d", d.Alerts, d.TruePos, len(tc.faults))
			}
			// The incidents are merged: every metric alerted on its own.
			opts := IncidentBacktestOptions{}.withDefaults()
			perMetric := 0
			for _, s := range sc.Series {
				perMetric += len(detectorAlerts(s, opts.Detector))
			}
			if perMetric < 3*len(tc.faults) {
				t.Errorf("%d per-metric alerts, want at least %d", perMetric, 3*len(tc.faults))
			}
			if delay := d.MedianDelay(); delay < 0 || delay > 10*time.Minute {
				t.Errorf("median delay %s", delay)
			}
			if len(res.Rows) != 1 || res.Rows[0].Scope != sc.Scope || res.Metrics != 3 {
				t.Errorf("rows %+v, metrics %d", res.Rows, res.Metrics)
			}
			if res.Fixed.Detected < d.Detected {
				t.Errorf("fixed thresholds detected %d, want at least the dynamic %d", res.Fixed.Detected, d.Detected)
			}
			if res.Quantile < 0.5 || res.Quantile > 1 {
				t.Errorf("quantile %v", res.Quantile)
			}
		})
	}
}

func TestFixedQuantileSensitivity(t *testing.T) {
	// One metric, so that incidents are that metric's alerts: with all
	// three, alerts at the median overlap into one incident a day.
	sc := stepScope(3, 9*time.Hour)
	sc.Series = sc.Series[:1]
	e := newScopeEval(sc)
	fixed := func(e scopeEval, p float64) Score {
		return score(e.fixed(p, 3, 5, 5*time.Minute, 0), e.windows, e.days, overlaps)
	}
	median := fixed(e, 0.5)
	if median.PerDay() < 10 {
		t.Errorf("threshold at the warm-up median: %.1f alerts a day, want many", median.PerDay())
	}
	if median.Precision() > 0.5 {
		t.Errorf("threshold at the warm-up median: precision %.2f, want mostly false alerts", median.Precision())
	}
	strict := fixed(e, 1e-4)
	if strict.Alerts >= median.Alerts || strict.Detected != 1 {
		t.Errorf("threshold at the 0.9999 quantile: %d alerts, %d detected; want fewer than %d and the fault", strict.Alerts, strict.Detected, median.Alerts)
	}
	// All three metrics at the median chain into long incidents that
	// cover most of the day.
	e3 := newScopeEval(stepScope(3, 9*time.Hour))
	all := fixed(e3, 0.5)
	if all.Alerts > median.Alerts/3 {
		t.Errorf("three metrics at the median: %d incidents, want far fewer than one metric's %d alerts", all.Alerts, median.Alerts)
	}
	if c := e3.cover(e3.fixed(0.5, 3, 5, 5*time.Minute, 0)); c < 0.5 {
		t.Errorf("three metrics at the median cover %.2f of the day, want most of it", c)
	}
	if c := e3.cover(e3.fixed(1e-4, 3, 5, 5*time.Minute, 0)); c > 0.1 {
		t.Errorf("three metrics at the 0.9999 quantile cover %.2f of the day, want about the fault's hour", c)
	}
}

func TestMergeIncidents(t *testing.T) {
	const m = 60
	for _, tc := range []struct {
		name string
		in   []interval
		want []interval
	}{
		{"empty", nil, nil},
		{"overlapping", []interval{{10 * m, 12 * m, 30 * m, 0}, {5 * m, 8 * m, 20 * m, 0}}, []interval{{5 * m, 8 * m, 30 * m, 0}}},
		{"within the gap", []interval{{0, 3 * m, 10 * m, 0}, {14 * m, 17 * m, 20 * m, 0}}, []interval{{0, 3 * m, 20 * m, 0}}},
		{"beyond the gap", []interval{{0, 3 * m, 10 * m, 0}, {16 * m, 19 * m, 20 * m, 0}}, []interval{{0, 3 * m, 10 * m, 0}, {16 * m, 19 * m, 20 * m, 0}}},
		{"open alert swallows later ones", []interval{{0, 3 * m, math.MaxInt64, 0}, {100 * m, 103 * m, 110 * m, 0}}, []interval{{0, 3 * m, math.MaxInt64, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeIncidents(tc.in, 5*time.Minute, 0)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("incident %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestBandAlerts(t *testing.T) {
	ts := make([]int64, 20)
	for i := range ts {
		ts[i] = int64(60 * i)
	}
	vals := []float64{0, 0, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0, -5, -5, -5, 0, 0, 0, 0, 0}
	got := bandAlerts(ts, vals, -1, 1, 3, 5)
	want := []interval{{120, 240, 600, 0}, {720, 840, 1140, 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("band alerts %v, want %v", got, want)
	}
	if got := bandAlerts(ts, vals, math.Inf(-1), 1, 3, 5); len(got) != 1 {
		t.Errorf("an upper threshold alone: %v, want one alert", got)
	}
}

func TestMergeIncidentsCorroborated(t *testing.T) {
	const m = 60
	lone := interval{start: 0, fired: 3 * m, end: 8 * m, src: 1}
	long := interval{start: 100 * m, fired: 103 * m, end: 130 * m, src: 1}
	pairA := interval{start: 200 * m, fired: 203 * m, end: 209 * m, src: 1}
	pairB := interval{start: 201 * m, fired: 205 * m, end: 207 * m, src: 2}
	sameSrc := interval{start: 206 * m, fired: 208 * m, end: 212 * m, src: 1}
	got := mergeIncidents([]interval{lone, long, pairA, pairB, sameSrc}, 5*time.Minute, 10*time.Minute)
	if len(got) != 2 {
		t.Fatalf("got %d incidents %v, want 2: the lone short alert is dropped", len(got), got)
	}
	if got[0].start != long.start || got[0].fired != long.fired+10*m {
		t.Errorf("long lone alert: %v, want it to fire after 10 minutes open", got[0])
	}
	if got[1].start != pairA.start || got[1].fired != pairB.fired {
		t.Errorf("two metrics: %v, want it to fire with the second metric", got[1])
	}
	// Two alerts of one series are no corroboration.
	if got := mergeIncidents([]interval{pairA, sameSrc}, 5*time.Minute, 10*time.Minute); len(got) != 0 {
		t.Errorf("one series twice: %v, want no incident", got)
	}
}
