package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday

// gen builds n samples at step from mean(t) plus Gaussian noise.
func gen(n int, step time.Duration, noise float64, seed uint64, mean func(t time.Time) float64) []metrics.Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]metrics.Sample, n)
	for i := range out {
		t := t0.Add(time.Duration(i) * step)
		out[i] = metrics.Sample{T: t, V: mean(t) + noise*rng.NormFloat64()}
	}
	return out
}

func dailyShape(t time.Time) float64 {
	d := 2 * math.Pi * float64(t.Unix()%86400) / 86400
	return 20*math.Sin(d) + 8*math.Cos(2*d)
}

func TestFitRecoversSeasonality(t *testing.T) {
	weekly := func(t time.Time) float64 {
		w := 2 * math.Pi * float64((t.Unix()+3*86400)%(7*86400)) / (7 * 86400)
		return 10 * math.Cos(w)
	}
	tests := []struct {
		name     string
		days     int
		step     time.Duration
		noise    float64
		mean     func(time.Time) float64
		kind     Kind
		maxErr   float64 // largest |forecast - true mean| over the next day
		coverage float64 // least share of fresh clean points inside the band
	}{
		{"daily only, 1-minute, 7 days", 7, time.Minute, 2, func(t time.Time) float64 { return 100 + dailyShape(t) }, KindSeasonal, 1.5, 0.99},
		{"daily and weekly, 1-minute, 21 days", 21, time.Minute, 2, func(t time.Time) float64 { return 100 + dailyShape(t) + weekly(t) }, KindSeasonal, 1.5, 0.99},
		{"daily and weekly, 5-minute, 28 days", 28, 5 * time.Minute, 3, func(t time.Time) float64 { return 500 + dailyShape(t) + weekly(t) }, KindSeasonal, 2, 0.99},
		{"one and a half days: daily, no weekly", 1, time.Minute, 1, func(t time.Time) float64 { return 50 + dailyShape(t) }, KindDaily, 4, 0.98},
		{"hourly data, 14 days", 14, time.Hour, 1, func(t time.Time) float64 { return 80 + dailyShape(t) }, KindSeasonal, 2, 0.97},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := int(time.Duration(tc.days) * Day / tc.step)
			if tc.kind == KindDaily {
				n = int(36 * time.Hour / tc.step)
			}
			all := gen(n+int(Day/tc.step), tc.step, tc.noise, 1, tc.mean)
			m, err := Fit(all[:n], Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() != tc.kind {
				t.Fatalf("kind = %s, want %s", m.Kind(), tc.kind)
			}
			if s := m.Sigma(); math.Abs(s-tc.noise)/tc.noise > 0.2 {
				t.Errorf("sigma = %.3f, want about %.3f", s, tc.noise)
			}
			var worst float64
			in := 0
			for _, p := range all[n:] {
				f, lo, hi := m.Predict(p.T)
				worst = math.Max(worst, math.Abs(f-tc.mean(p.T)))
				if p.V >= lo && p.V <= hi {
					in++
				}
			}
			if worst > tc.maxErr {
				t.Errorf("largest forecast error over the next day = %.3f, want <= %.3f", worst, tc.maxErr)
			}
			if cov := float64(in) / float64(len(all[n:])); cov < tc.coverage {
				t.Errorf("band covers %.4f of clean points, want >= %.3f", cov, tc.coverage)
			}
		})
	}
}

func TestFitCoverageIsAboutThreeSigma(t *testing.T) {
	// 21 days of history; test over 7 further days: 3 standard errors
	// cover 99.73% of Gaussian noise.
	mean := func(t time.Time) float64 { return 100 + dailyShape(t) }
	n := 21 * 1440
	all := gen(n+7*1440, time.Minute, 2, 3, mean)
	m, err := Fit(all[:n], Options{RelFloor: -1})
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for _, p := range all[n:] {
		if _, lo, hi := m.Predict(p.T); p.V >= lo && p.V <= hi {
			in++
		}
	}
	cov := float64(in) / float64(7*1440)
	if cov < 0.995 || cov > 0.9995 {
		t.Errorf("coverage = %.5f, want about 0.9973", cov)
	}
}

func TestFitTrend(t *testing.T) {
	tests := []struct {
		name  string
		mean  func(t time.Time) float64
		ahead time.Duration
		tol   float64
	}{
		{"steady growth", func(t time.Time) float64 { return 100 + 2*t.Sub(t0).Hours()/24 + dailyShape(t) }, time.Hour, 1.5},
		{"growth that stops", func(t time.Time) float64 {
			d := t.Sub(t0).Hours() / 24
			return 100 + 5*math.Min(d, 6) + dailyShape(t)
		}, time.Hour, 2},
		{"decline that turns to growth", func(t time.Time) float64 {
			d := t.Sub(t0).Hours() / 24
			if d < 5 {
				return 200 - 4*d + dailyShape(t)
			}
			return 180 + 4*(d-5) + dailyShape(t)
		}, time.Hour, 3}, // the kink falls between changepoints
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 14 * 1440
			all := gen(n+int(tc.ahead/time.Minute), time.Minute, 1, 5, tc.mean)
			m, err := Fit(all[:n], Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range all[n:] {
				if f, _, _ := m.Predict(p.T); math.Abs(f-tc.mean(p.T)) > tc.tol {
					t.Fatalf("at %s forecast %.2f, true mean %.2f (tolerance %.1f)", p.T.Format(time.RFC3339), f, tc.mean(p.T), tc.tol)
				}
			}
		})
	}
}

func TestFitShortHistory(t *testing.T) {
	tests := []struct {
		name string
		n    int
		step time.Duration
		kind Kind
	}{
		{"one point", 1, time.Minute, KindLevel},
		{"ten minutes", 10, time.Minute, KindLevel},
		{"two hours", 120, time.Minute, KindLevel},
		{"six hours", 360, time.Minute, KindTrend},
		{"thirty hours", 30 * 60, time.Minute, KindDaily},
		{"three days", 3 * 1440, time.Minute, KindSeasonal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := gen(tc.n, tc.step, 1, 9, func(time.Time) float64 { return 40 })
			m, err := Fit(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() != tc.kind {
				t.Errorf("kind = %s, want %s", m.Kind(), tc.kind)
			}
			f, lo, hi := m.Predict(s[len(s)-1].T.Add(time.Minute))
			if math.Abs(f-40) > 3 || lo >= f || hi <= f {
				t.Errorf("predict = %.2f [%.2f, %.2f], want about 40 inside its band", f, lo, hi)
			}
		})
	}
}

func TestFitEdgeCases(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		samples []metrics.Sample
		wantErr bool
		level   float64
	}{
		{"empty", nil, true, 0},
		{"all NaN", []metrics.Sample{{T: t0, V: nan}, {T: t0.Add(time.Minute), V: math.Inf(1)}}, true, 0},
		{"constant", gen(3*1440, time.Minute, 0, 1, func(time.Time) float64 { return 7 }), false, 7},
		{"NaN mixed in", append(gen(600, time.Minute, 0.1, 1, func(time.Time) float64 { return 3 }), metrics.Sample{T: t0.Add(601 * time.Minute), V: nan}), false, 3},
		{"unordered and duplicated", []metrics.Sample{{T: t0.Add(2 * time.Minute), V: 5}, {T: t0, V: 5}, {T: t0, V: 5}, {T: t0.Add(time.Minute), V: 5}}, false, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Fit(tc.samples, Options{})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			f, lo, hi := m.Predict(t0.Add(5 * Day))
			if math.Abs(f-tc.level) > 0.2 || math.IsNaN(lo) || math.IsNaN(hi) || hi < lo {
				t.Errorf("predict = %v [%v, %v], want about %v", f, lo, hi, tc.level)
			}
		})
	}
}

func TestFitIgnoresAnomaliesInHistory(t *testing.T) {
	mean := func(t time.Time) float64 { return 100 + dailyShape(t) }
	n := 14 * 1440
	s := gen(n, time.Minute, 2, 11, mean)
	// Ten one-hour incidents at +60 in the history.
	for k := 0; k < 10; k++ {
		for i := 0; i < 60; i++ {
			s[k*1300+i].V += 60
		}
	}
	m, err := Fit(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sg := m.Sigma(); sg > 2.6 {
		t.Errorf("sigma = %.2f, want near 2 despite the incidents", sg)
	}
	for h := 0; h < 24; h++ {
		at := s[n-1].T.Add(time.Duration(h) * time.Hour)
		if f, _, _ := m.Predict(at); math.Abs(f-mean(at)) > 1.5 {
			t.Errorf("forecast at %s = %.2f, want %.2f", at.Format(time.RFC3339), f, mean(at))
		}
	}
}

func TestUnitFloorAndRelativeFloor(t *testing.T) {
	s := gen(3*1440, time.Minute, 0, 1, func(time.Time) float64 { return 200 })
	tests := []struct {
		name   string
		opts   Options
		wantHW float64
	}{
		{"relative floor 2%", Options{}, 4},
		{"absolute floor wins", Options{AbsFloor: 10}, 10},
		{"relative floor off", Options{RelFloor: -1, AbsFloor: 0.5}, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Fit(s, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			f, lo, hi := m.Predict(s[len(s)-1].T.Add(time.Minute))
			if math.Abs((hi-lo)/2-tc.wantHW) > 1e-6 || math.Abs(f-200) > 1e-6 {
				t.Errorf("band = %v..%v around %v, want half-width %v", lo, hi, f, tc.wantHW)
			}
		})
	}
}

func TestMedianAndScale(t *testing.T) {
	tests := []struct {
		in   []float64
		med  float64
		mad  float64
		tail float64
	}{
		{[]float64{1}, 1, 0, 0},
		{[]float64{3, 1, 2}, 2, 1.4826, 1.2157},
		{[]float64{4, 1, 3, 2}, 2.5, 1.4826 * 1, 0},
		{[]float64{5, 5, 5, 5, 9}, 5, 1.2533 * 4 / 5, 0},
	}
	for _, tc := range tests {
		v := append([]float64(nil), tc.in...)
		if got := median(v); got != tc.med {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.med)
		}
		if got := robustScale(tc.in, tc.med); math.Abs(got-tc.mad) > 1e-9 {
			t.Errorf("robustScale(%v) = %v, want %v", tc.in, got, tc.mad)
		}
	}
	// tailScale of a large normal sample is its standard deviation.
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 100000)
	for i := range v {
		v[i] = 3 * rng.NormFloat64()
	}
	if s := tailScale(v, 0); math.Abs(s-3) > 0.05 {
		t.Errorf("tailScale of N(0, 3^2) = %.3f, want 3", s)
	}
}

func TestIsWeekend(t *testing.T) {
	for d := 0; d < 14; d++ {
		day := t0.Add(time.Duration(d) * Day).Add(13 * time.Hour)
		want := day.Weekday() == time.Saturday || day.Weekday() == time.Sunday
		if got := isWeekend(day.Unix()); got != want {
			t.Errorf("isWeekend(%s) = %v, want %v", day.Weekday(), got, want)
		}
	}
}

func FuzzFit(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, int64(60), uint8(10))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0x7f}, int64(0), uint8(3))
	f.Add([]byte{}, int64(-5), uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, step int64, reps uint8) {
		var s []metrics.Sample
		at := t0
		for i := 0; i+8 <= len(raw); i += 8 {
			var bits uint64
			for k := 0; k < 8; k++ {
				bits |= uint64(raw[i+k]) << (8 * k)
			}
			v := math.Float64frombits(bits)
			for r := 0; r <= int(reps%50); r++ {
				s = append(s, metrics.Sample{T: at, V: v})
				at = at.Add(time.Duration(step%(7*86400)) * time.Second * time.Duration(1+int(reps)%5))
			}
		}
		m, err := Fit(s, Options{})
		if err != nil {
			return
		}
		f, lo, hi := m.Predict(at.Add(time.Hour))
		if !math.IsNaN(f) && !math.IsInf(f, 0) && lo > hi {
			t.Errorf("band inverted: %v > %v", lo, hi)
		}
	})
}
