package diagnose

import (
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// snapWith builds a snapshot with one metric's history and current value.
// snapWith builds a snapshot of one metric whose history ends at at-6m,
// the last baseline minute.
func snapWith(id string, hist []float64, cur float64) m.Snapshot {
	s := m.Snapshot{At: testAt, Scope: m.Scope{Model: "x"}, Current: m.Values{id: cur}}
	for i, x := range hist {
		s.History = append(s.History, m.Point{At: testAt.Add(time.Duration(i-len(hist)-5) * time.Minute), Values: m.Values{id: x}})
	}
	return s
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// wobble is a deterministic history alternating around mean by ±amp.
func wobble(mean, amp float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = mean + amp*math.Sin(float64(i)*1.7)
	}
	return out
}

func TestDeviations(t *testing.T) {
	spiky := wobble(100, 3, 60)
	spiky[10], spiky[30] = 5000, 4000 // two outliers must not mask a real rise
	tests := []struct {
		name     string
		snap     m.Snapshot
		id       string
		wantAnom bool
		wantSign int // sign of z; 0 means z must be 0
	}{
		{"latency spike is anomalous", snapWith(m.TTFT, wobble(200, 5, 60), 400), m.TTFT, true, 1},
		{"latency drop is not bad", snapWith(m.TTFT, wobble(200, 5, 60), 100), m.TTFT, false, -1},
		{"throughput drop is anomalous", snapWith(m.ThroughputRPS, wobble(12, 0.3, 60), 6), m.ThroughputRPS, true, -1},
		{"throughput rise is not bad", snapWith(m.ThroughputRPS, wobble(12, 0.3, 60), 20), m.ThroughputRPS, false, 1},
		{"two-sided metric flags a drop", snapWith(m.SMUtil, wobble(0.7, 0.01, 60), 0.3), m.SMUtil, true, -1},
		{"two-sided metric flags a rise", snapWith(m.SMUtil, wobble(0.5, 0.01, 60), 0.95), m.SMUtil, true, 1},
		{"flat history: a 2% wiggle is not infinite", snapWith(m.TPOT, repeat(18, 60), 18.4), m.TPOT, false, 1},
		{"flat history: a real jump still shows", snapWith(m.TPOT, repeat(18, 60), 30), m.TPOT, true, 1},
		{"flat zero history uses the absolute floor", snapWith(m.PreemptionRate, repeat(0, 60), 0.1), m.PreemptionRate, false, 1},
		{"outliers in history do not mask a rise", snapWith(m.TTFT, spiky, 160), m.TTFT, true, 1},
		{"short history falls back to median/MAD", snapWith(m.TTFT, []float64{200, 205, 195, 5000, 198}, 400), m.TTFT, true, 1},
		{"two points give no z", snapWith(m.TTFT, []float64{200, 210}, 4000), m.TTFT, false, 0},
		{"no history gives no z", snapWith(m.TTFT, nil, 4000), m.TTFT, false, 0},
		{"huge values stay finite", snapWith(m.TTFT, wobble(1e300, 1e290, 60), 1.7e308), m.TTFT, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Deviations(tc.snap)[tc.id]
			if !ok {
				t.Fatalf("no deviation for %s", tc.id)
			}
			if math.IsNaN(d.Z) || math.IsInf(d.Z, 0) || math.IsNaN(d.Mean) || math.IsNaN(d.Std) {
				t.Fatalf("non-finite deviation %+v", d)
			}
			if d.Anomalous != tc.wantAnom {
				t.Errorf("anomalous = %v, want %v (%+v)", d.Anomalous, tc.wantAnom, d)
			}
			switch {
			case tc.wantSign == 0 && d.Z != 0:
				t.Errorf("z = %v, want 0", d.Z)
			case tc.wantSign > 0 && d.Z <= 0, tc.wantSign < 0 && d.Z >= 0:
				t.Errorf("z = %v, want sign %d", d.Z, tc.wantSign)
			}
		})
	}
}

func TestDeviationsSkipsMissingAndUnknown(t *testing.T) {
	s := synth(1, nil)
	delete(s.Current, m.ErrorRate)
	s.Current["not_a_metric"] = 5
	s.Current[m.TTFT] = math.NaN()
	dev := Deviations(s)
	for _, id := range []string{m.ErrorRate, "not_a_metric", m.TTFT} {
		if _, ok := dev[id]; ok {
			t.Errorf("deviation reported for %s", id)
		}
	}
	if _, ok := dev[m.TPOT]; !ok {
		t.Errorf("no deviation for %s", m.TPOT)
	}
}

func TestMedianMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 1; n < 80; n++ {
		for trial := 0; trial < 20; trial++ {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = math.Round(rng.NormFloat64() * 3) // ties are common
			}
			sorted := append([]float64(nil), xs...)
			sort.Float64s(sorted)
			want := sorted[n/2]
			if n%2 == 0 {
				want = (sorted[n/2-1] + sorted[n/2]) / 2
			}
			if got := median(append([]float64(nil), xs...)); got != want {
				t.Fatalf("median(%v) = %v, want %v", xs, got, want)
			}
		}
	}
}

// TestFewerRequestsWidenPerRequestBaselines: when traffic falls to a
// twentieth, prompts 30% longer on average over the few requests left are
// within chance, while the same rise at full traffic is an anomaly;
// metrics that are not per-request averages keep their z.
func TestFewerRequestsWidenPerRequestBaselines(t *testing.T) {
	full := synth(21, m.Values{m.MeanPromptTokens: 1300})
	quiet := synth(21, m.Values{m.MeanPromptTokens: 1300, m.ThroughputRPS: 0.6, m.SMUtil: 0.2})
	df, dq := Deviations(full), Deviations(quiet)
	if !df[m.MeanPromptTokens].Anomalous {
		t.Fatalf("30%% longer prompts at full traffic: z %.1f, want an anomaly", df[m.MeanPromptTokens].Z)
	}
	if dq[m.MeanPromptTokens].Anomalous {
		t.Errorf("30%% longer prompts over a twentieth of the requests: z %.1f, want within chance", dq[m.MeanPromptTokens].Z)
	}
	if got, want := dq[m.MeanPromptTokens].Z, df[m.MeanPromptTokens].Z*math.Sqrt(0.6/12); math.Abs(got-want) > 0.05*math.Abs(want) {
		t.Errorf("z at a twentieth of the traffic = %.2f, want %.2f (scaled by the root of the request ratio)", got, want)
	}
	if !dq[m.SMUtil].Anomalous {
		t.Errorf("SM activity is not a per-request average: z %.1f, want it unscaled and anomalous", dq[m.SMUtil].Z)
	}
}

// TestSplitRecent: the last five minutes before the snapshot are recent
// points, oldest first, and not part of the baseline; a history point
// without a time, or a snapshot without one, stays baseline.
func TestSplitRecent(t *testing.T) {
	s := snapWith(m.TTFT, repeat(200, 60), 200)
	for k := 5; k >= 1; k-- { // at-5m..at-1m, a fault's onset
		s.History = append(s.History, m.Point{At: testAt.Add(-time.Duration(k) * time.Minute), Values: m.Values{m.TTFT: 900}})
	}
	s.History[0], s.History[len(s.History)-1] = s.History[len(s.History)-1], s.History[0] // out of order
	s.History = append(s.History, m.Point{Values: m.Values{m.TTFT: 200}})
	base, recent := SplitRecent(s)
	if len(base.History) != 61 || len(recent) != 5 {
		t.Fatalf("split %d + %d points, want 61 baseline and 5 recent", len(base.History), len(recent))
	}
	for i, p := range recent {
		if want := testAt.Add(-time.Duration(5-i) * time.Minute); !p.At.Equal(want) {
			t.Errorf("recent[%d] at %s, want %s", i, p.At, want)
		}
	}
	if d := Deviations(s)[m.TTFT]; d.Mean != 200 {
		t.Errorf("baseline mean %g: the recent 900s leaked into it", d.Mean)
	}
	s.At = time.Time{}
	if base, recent := SplitRecent(s); len(recent) != 0 || len(base.History) != 66 {
		t.Errorf("a snapshot without a time split into %d + %d points", len(base.History), len(recent))
	}
}
