package robust

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedianInPlace(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{3}, 3},
		{"two", []float64{4, 2}, 3},
		{"odd", []float64{5, 1, 3}, 3},
		{"even with duplicates", []float64{2, 2, 9, 1}, 2},
		{"all equal", []float64{7, 7, 7, 7}, 7},
		{"negative", []float64{-1, -5, -3, 10}, -2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MedianInPlace(slices.Clone(tc.in)); got != tc.want {
				t.Errorf("MedianInPlace(%v) = %g, want %g", tc.in, got, tc.want)
			}
		})
	}
}

func TestSelectMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(60)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(20)) // many ties
		}
		sorted := slices.Sorted(slices.Values(v))
		k := r.IntN(n)
		w := slices.Clone(v)
		if got := Select(w, k); got != sorted[k] {
			t.Fatalf("Select(%v, %d) = %g, want %g", v, k, got, sorted[k])
		}
		for i := 0; i < k; i++ {
			if w[i] > w[k] {
				t.Fatalf("Select left %g before the %d-th value %g", w[i], k, w[k])
			}
		}
	}
}

func FuzzMedian(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		v := []float64{a, b, c, d}
		for _, x := range v {
			if x != x {
				return // NaN is excluded by contract
			}
		}
		s := slices.Sorted(slices.Values(v))
		want := (s[1] + s[2]) / 2
		if got := MedianInPlace(v); got != want && !(got != got && want != want) {
			t.Fatalf("median = %g, want %g", got, want)
		}
	})
}
