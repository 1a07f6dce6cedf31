package sim

import "math"

// Bucket upper bounds of the vLLM histograms (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	// gatewayBuckets follow the usual Envoy/nginx exporter spacing.
	gatewayBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
)

// buckets125 returns 1, 2, 5 x 10^k up to maxModelLen, as vLLM does for
// token-count histograms.
func buckets125(maxModelLen int) []float64 {
	var out []float64
	for e := 1.0; ; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * e
			if v > float64(maxModelLen) {
				return out
			}
			out = append(out, v)
		}
	}
}

// histogram is a cumulative Prometheus histogram: counts[i] observations
// at or below bounds[i], then +Inf = count.
type histogram struct {
	bounds []float64
	logs   []float64 // log of each bound
	pyLe   []string  // le label values as Python's client writes them
	goLe   []string  // le label values as Go's client writes them
	counts []float64 // cumulative, len(bounds)
	count  float64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	h := &histogram{bounds: bounds, logs: make([]float64, len(bounds)), counts: make([]float64, len(bounds)),
		pyLe: make([]string, len(bounds)), goLe: make([]string, len(bounds))}
	for i, b := range bounds {
		h.logs[i] = math.Log(b)
		h.pyLe[i] = pyFloat(b)
		h.goLe[i] = goFloat(b)
	}
	return h
}

// observeCDF adds n observations whose sum is sum and whose distribution
// function is cdf. Bucket counts are rounded cumulatively, so they stay
// monotonic and never exceed n.
func (h *histogram) observeCDF(n int, sum float64, cdf func(x float64) float64) {
	if n <= 0 {
		return
	}
	nf := float64(n)
	for i, b := range h.bounds {
		c := math.Round(nf * cdf(b))
		if c > nf {
			c = nf
		}
		h.counts[i] += c
	}
	h.count += nf
	h.sum += sum
}

// observeLognormal adds n observations from a lognormal distribution with
// the given mean and log-space standard deviation sigma.
func (h *histogram) observeLognormal(n int, mean, sigma float64) {
	if n <= 0 || !(mean > 0) {
		if n > 0 {
			h.observeCDF(n, 0, func(float64) float64 { return 1 })
		}
		return
	}
	mu := math.Log(mean) - sigma*sigma/2
	nf := float64(n)
	for i, l := range h.logs {
		z := (l - mu) / sigma
		switch {
		case z < -5.5:
		case z > 5.5:
			h.counts[i] += nf
		default:
			h.counts[i] += math.Round(nf * 0.5 * math.Erfc(-z/math.Sqrt2))
		}
	}
	h.count += nf
	h.sum += nf * mean
}

// clone returns a deep copy.
func (h *histogram) clone() *histogram {
	c := *h
	c.counts = append([]float64(nil), h.counts...)
	return &c
}

// quantileDelta is histogram_quantile over the increase from old to h,
// with Prometheus's linear interpolation inside a bucket.
func (h *histogram) quantileDelta(old *histogram, q float64) float64 {
	total := h.count - old.count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i] - old.counts[i]
		if c >= rank {
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	// In the +Inf bucket: Prometheus returns the highest finite bound.
	return h.bounds[len(h.bounds)-1]
}
