package forecast

import "math"

// Whether a series has a daily cycle is found, not assumed: CPU of a
// batch host, a temperature sensor or a crash rate often has none, and
// Fourier terms fitted to such a history learn its noise and its
// anomalies as a shape that then recurs every day.
//
// periodic bins the points into hourly medians (so 1-minute, 5-minute and
// hourly data are judged alike; a series sampled less often than every
// few hours leaves too few pairs and has no daily cycle), removes the
// trend with a centred moving average one period wide (which also
// removes the cycle itself from the average, as in classical
// decomposition), clips the remainder at three robust standard
// deviations so a few anomalies cannot decide, and computes its
// autocorrelation at a lag of one period. The series is periodic when
// that autocorrelation is both significant (at least 3/sqrt(pairs), the
// band's own three standard errors under no correlation) and material:
// the cycle explains at least a tenth of the variance left after the
// trend. A history shorter than three periods cannot tell (the moving
// average leaves under one period of pairs); the model then keeps the
// cycle it assumed while younger.

const (
	seasonBin      = 3600 // seconds: the bin of the periodicity test
	minSeasonACF   = 0.1  // the cycle's least share of the detrended variance
	seasonSigmas   = 3.0  // significance of the autocorrelation, in standard errors
	minSeasonPairs = 24   // bin pairs the test needs at least
)

// periodic reports whether the sorted points repeat with the given period
// (seconds, a multiple of seasonBin), and the autocorrelation found. It
// says true for a history too short to tell (see tellsPeriod).
func periodic(pts []point, period int64) (bool, float64) {
	if len(pts) < 2 || period < 2*seasonBin {
		return false, 0
	}
	if !tellsPeriod(pts, period) {
		return true, math.NaN()
	}
	t0 := pts[0].t
	nb := int((pts[len(pts)-1].t-t0)/seasonBin) + 1
	lag := int(period / seasonBin)
	// Hourly medians: a few spikes do not move them.
	med := make([]float64, nb)
	has := make([]bool, nb)
	for i := 0; i < len(pts); {
		b := int((pts[i].t - t0) / seasonBin)
		j := i
		for j < len(pts) && int((pts[j].t-t0)/seasonBin) == b {
			j++
		}
		vs := make([]float64, j-i)
		for k := range vs {
			vs[k] = pts[i+k].v
		}
		med[b], has[b] = medianInPlace(vs), true
		i = j
	}
	// Centred moving average over one period of bins (prefix sums of the
	// bins that exist).
	ps := make([]float64, nb+1)
	pc := make([]float64, nb+1)
	for i := 0; i < nb; i++ {
		ps[i+1], pc[i+1] = ps[i], pc[i]
		if has[i] {
			ps[i+1] += med[i]
			pc[i+1]++
		}
	}
	half := lag / 2
	x := make([]float64, nb)
	ok := make([]bool, nb)
	var vals []float64
	for i := half; i+lag-half <= nb; i++ {
		lo, hi := i-half, i+lag-half
		if !has[i] || pc[hi]-pc[lo] < float64(lag)/2 {
			continue
		}
		x[i] = med[i] - (ps[hi]-ps[lo])/(pc[hi]-pc[lo])
		ok[i] = true
		vals = append(vals, x[i])
	}
	if len(vals) < 2*minSeasonPairs {
		return false, 0
	}
	c := median(vals)
	s := robustScale(vals, c)
	if s == 0 {
		return false, 0
	}
	clip := func(v float64) float64 { return math.Max(-3*s, math.Min(3*s, v-c)) }
	var mean, n float64
	for i := range x {
		if ok[i] {
			x[i] = clip(x[i])
			mean += x[i]
			n++
		}
	}
	mean /= n
	var den float64
	for i := range x {
		if ok[i] {
			x[i] -= mean
			den += x[i] * x[i]
		}
	}
	var num float64
	pairs := 0
	for i := 0; i+lag < nb; i++ {
		if ok[i] && ok[i+lag] {
			num += x[i] * x[i+lag]
			pairs++
		}
	}
	if pairs < minSeasonPairs || den == 0 {
		return false, 0
	}
	// Normalised per pair against the variance per point.
	acf := (num / float64(pairs)) / (den / n)
	return acf >= minSeasonACF && acf >= seasonSigmas/math.Sqrt(float64(pairs)), acf
}

// tellsPeriod reports whether the points span enough periods (three) for
// periodic to decide.
func tellsPeriod(pts []point, period int64) bool {
	return len(pts) > 0 && pts[len(pts)-1].t-pts[0].t >= 3*period
}
