package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func pointsOf(days int, step time.Duration, seed uint64, f func(sec int64, rng *rand.Rand) float64) []point {
	rng := rand.New(rand.NewPCG(seed, 2))
	n := int(time.Duration(days) * Day / step)
	pts := make([]point, n)
	for i := range pts {
		sec := t0.Unix() + int64(i)*int64(step/time.Second)
		pts[i] = point{t: sec, v: f(sec, rng)}
	}
	return pts
}

func TestPeriodicFindsDailyCycles(t *testing.T) {
	day := func(sec int64) float64 { return math.Sin(2 * math.Pi * float64(sec%86400) / 86400) }
	tests := []struct {
		name string
		days int
		step time.Duration
		f    func(sec int64, rng *rand.Rand) float64
		want bool
	}{
		{"daily cycle at 1-minute data", 4, time.Minute, func(s int64, r *rand.Rand) float64 { return 10*day(s) + r.NormFloat64() }, true},
		{"daily cycle at 5-minute data, noisy", 14, 5 * time.Minute, func(s int64, r *rand.Rand) float64 { return 3*day(s) + 5*r.NormFloat64() }, true},
		{"daily cycle at hourly data with a trend", 14, time.Hour, func(s int64, r *rand.Rand) float64 {
			return 5*day(s) + float64(s-t0.Unix())/3600 + r.NormFloat64()
		}, true},
		{"daily cycle with spikes", 7, 5 * time.Minute, func(s int64, r *rand.Rand) float64 {
			v := 10*day(s) + r.NormFloat64()
			if r.Float64() < 0.02 {
				v += 500
			}
			return v
		}, true},
		{"white noise", 14, 5 * time.Minute, func(s int64, r *rand.Rand) float64 { return r.NormFloat64() }, false},
		{"random walk", 14, 5 * time.Minute, func() func(int64, *rand.Rand) float64 {
			w := 0.0
			return func(s int64, r *rand.Rand) float64 { w += r.NormFloat64(); return w }
		}(), false},
		{"trend only", 14, time.Hour, func(s int64, r *rand.Rand) float64 { return float64(s-t0.Unix())/3600 + r.NormFloat64() }, false},
		{"mostly zero counts", 14, 5 * time.Minute, func(s int64, r *rand.Rand) float64 {
			if r.Float64() < 0.03 {
				return float64(1 + r.IntN(20))
			}
			return 0
		}, false},
		{"two days are too short to tell: the cycle stays", 2, time.Minute, func(s int64, r *rand.Rand) float64 { return r.NormFloat64() }, true},
		{"daily data cannot show a daily cycle", 60, Day, func(s int64, r *rand.Rand) float64 { return r.NormFloat64() }, false},
	}
	for _, tc := range tests {
		for seed := uint64(1); seed <= 3; seed++ {
			got, acf := periodic(pointsOf(tc.days, tc.step, seed, tc.f), 86400)
			if got != tc.want {
				t.Errorf("%s, seed %d: periodic = %v (autocorrelation %.3f), want %v", tc.name, seed, got, acf, tc.want)
			}
		}
	}
}

func TestFitDropsCyclesItDoesNotFind(t *testing.T) {
	noise := gen(14*288, 5*time.Minute, 1, 4, func(time.Time) float64 { return 50 })
	m, err := Fit(noise, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind() != KindSeasonal || m.cyclic || m.daily != 0 || m.weekly != 0 || m.weekend != 0 || m.hourly != nil {
		t.Errorf("white noise: kind %s cyclic %v daily %d weekly %d weekend %d hourly %v; want a seasonal model without cycles",
			m.Kind(), m.cyclic, m.daily, m.weekly, m.weekend, m.hourly != nil)
	}
	cyc := gen(14*288, 5*time.Minute, 1, 4, func(t time.Time) float64 { return 50 + dailyShape(t) })
	if m, _ = Fit(cyc, Options{}); !m.cyclic || m.daily == 0 || m.weekend == 0 {
		t.Errorf("daily shape: cyclic %v daily %d weekend %d; want the cycles fitted", m.cyclic, m.daily, m.weekend)
	}
}
