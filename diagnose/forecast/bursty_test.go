package forecast

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestIsBursty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	gen := func(n int, f func() float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f()
		}
		return v
	}
	tests := []struct {
		name string
		vals []float64
		want bool
	}{
		{"normal noise around a level", gen(2000, func() float64 { return 50 + 5*rng.NormFloat64() }), false},
		{"uniform", gen(2000, func() float64 { return rng.Float64() }), false},
		{"mostly zero counts", gen(2000, func() float64 {
			if rng.IntN(3) == 0 {
				return float64(1 + rng.IntN(5))
			}
			return 0
		}), true},
		{"idle at a non-zero floor", gen(2000, func() float64 {
			if rng.IntN(2) == 0 {
				return 10 + rng.Float64()
			}
			return 10
		}), true},
		{"heavy upper tail (log-normal, sigma 1.5)", gen(2000, func() float64 { return math.Exp(1.5 * rng.NormFloat64()) }), true},
		{"heavy lower tail", gen(2000, func() float64 { return 100 - math.Exp(1.5*rng.NormFloat64()) }), true},
		{"mild skew (log-normal, sigma 0.2)", gen(2000, func() float64 { return math.Exp(0.2 * rng.NormFloat64()) }), false},
		{"constant", gen(2000, func() float64 { return 3 }), false},
		{"too short to tell", gen(minBurstyObs-1, func() float64 { return 0 }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isBursty(tc.vals); got != tc.want {
				t.Errorf("isBursty = %v, want %v", got, tc.want)
			}
		})
	}
}
