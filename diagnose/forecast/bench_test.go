package forecast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// seasonalSeries is a clean daily+weekly series with Gaussian noise.
func seasonalSeries(n int, step time.Duration, noise float64, seed uint64) []metrics.Sample {
	rng := rand.New(rand.NewPCG(seed, 7))
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	out := make([]metrics.Sample, n)
	for i := range out {
		t := start.Add(time.Duration(i) * step)
		out[i] = metrics.Sample{T: t, V: seasonalMean(t) + noise*rng.NormFloat64()}
	}
	return out
}

func seasonalMean(t time.Time) float64 {
	d := 2 * math.Pi * float64(t.Unix()%86400) / 86400
	w := 2 * math.Pi * float64((t.Unix()+3*86400)%(7*86400)) / (7 * 86400)
	return 100 + 20*math.Sin(d) + 8*math.Cos(2*d) + 10*math.Cos(w)
}

// BenchmarkFit fits five weeks of 1-minute data (50,400 samples).
func BenchmarkFit(b *testing.B) {
	s := seasonalSeries(5*7*1440, time.Minute, 2, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Fit(s, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDetectorMinute feeds one minute of 2,000 series that already
// have two weeks of history, refits included (each series refits hourly,
// staggered), and reports the share of one core at a one-minute cadence.
func BenchmarkDetectorMinute(b *testing.B) {
	const series = 2000
	hist := seasonalSeries(14*1440, time.Minute, 2, 2)
	d := NewDetector(DetectorOptions{})
	names := make([]string, series)
	for s := range names {
		names[s] = fmt.Sprintf("series_%d", s)
	}
	// Warm one series with the history and copy its state to the others,
	// staggering their last refit so that 1/60 of them refit each minute.
	for _, p := range hist {
		d.Observe(names[0], p.T, p.V)
	}
	proto := d.series[names[0]]
	for s := range names {
		st := *proto
		st.hist = append([]point(nil), proto.hist...)
		st.diffs = append([]int64(nil), proto.diffs...)
		st.local.pts = append([]obs(nil), proto.local.pts...)
		st.calib.pts = append([]obs(nil), proto.calib.pts...)
		st.fittedAt = hist[len(hist)-1].T.Unix() - int64(s%60)*60
		d.series[names[s]] = &st
	}
	last := hist[len(hist)-1].T
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t := last.Add(time.Duration(i+1) * time.Minute)
		v := seasonalMean(t)
		for s := range names {
			d.Observe(names[s], t, v)
		}
	}
	perMinute := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(100*perMinute.Seconds()/60, "%core")
}

// BenchmarkNoveltyAdd adds one point of a 1-minute series to a full
// shape-test record (10,080 points, 30-point stretches): the cost the
// shape test adds to each observed point.
func BenchmarkNoveltyAdd(b *testing.B) {
	s := seasonalSeries(2*noveltyMaxPoints+b.N, time.Minute, 2, 3)
	n := newNovelty(30, noveltyMaxPoints, 0.95)
	for _, p := range s[:2*noveltyMaxPoints] {
		n.add(p.V)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n.add(s[2*noveltyMaxPoints+i].V)
	}
}
