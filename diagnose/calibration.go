package diagnose

import (
	"math"
	"sort"
	"sync"
)

// Calibration learned from reviews. The fixed mapping of calibrate turns
// rule scores into a confidence that is right on average over the
// simulated corpora it was read from, but a deployment's own incidents can
// differ (other engines, other fault mixes), and a confidence that says
// 0.9 where the engine is right six times in ten misleads the engineer
// who reads it. Every reviewed case whose diagnosis was kept tells how
// often a confidence was right: a confirmation means the named cause was
// right, a correction that it was wrong. Once the knowledge base holds
// minCalibCases such cases, the engine maps each confidence through an
// isotonic regression (pool-adjacent-violators) of "was right" on the
// uncalibrated confidence of the last maxCalibCases of them: the
// monotone step function that fits the reviews best, so a higher raw
// confidence never maps lower. Each step is shrunk toward the raw
// confidences it pools with the weight of calibPrior cases, so a step
// that rests on a handful of reviews moves little. Known-truth labels
// (Truth) say nothing about the engine's answer and are left out.
const (
	minCalibCases = 100
	maxCalibCases = 1000
	calibPrior    = 10
)

// calibPair is one reviewed diagnosis: its uncalibrated confidence and
// whether its named cause was right.
type calibPair struct {
	conf  float64
	right float64
}

// isotonic is a fitted monotone map from raw to calibrated confidence:
// flat over the raw confidences each pooled block spans, linear between
// blocks, flat beyond the ends.
type isotonic struct {
	xs, ys []float64
}

// fitIsotonic fits pairs (any order) with pool-adjacent-violators, then
// shrinks each block toward its mean raw confidence with weight calibPrior
// (and keeps the result monotone).
func fitIsotonic(pairs []calibPair) *isotonic {
	if len(pairs) == 0 {
		return nil
	}
	ps := append([]calibPair(nil), pairs...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].conf < ps[j].conf })
	type block struct{ n, sumX, sumY, lo, hi float64 }
	var bs []block
	for i, p := range ps {
		if i > 0 && p.conf == ps[i-1].conf {
			// Equal confidences are one point of the fit.
			b := &bs[len(bs)-1]
			b.n, b.sumX, b.sumY = b.n+1, b.sumX+p.conf, b.sumY+p.right
		} else {
			bs = append(bs, block{1, p.conf, p.right, p.conf, p.conf})
		}
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sumY/a.n < b.sumY/b.n {
				break
			}
			bs = bs[:len(bs)-1]
			bs[len(bs)-1] = block{a.n + b.n, a.sumX + b.sumX, a.sumY + b.sumY, a.lo, b.hi}
		}
	}
	iso := &isotonic{}
	for _, b := range bs {
		y := shrunk(b.n, b.sumX, b.sumY)
		if k := len(iso.ys); k > 0 && y < iso.ys[k-1] {
			y = iso.ys[k-1]
		}
		iso.xs = append(iso.xs, b.lo)
		iso.ys = append(iso.ys, y)
		if b.hi > b.lo {
			iso.xs = append(iso.xs, b.hi)
			iso.ys = append(iso.ys, y)
		}
	}
	return iso
}

// shrunk is a block's share right, shrunk toward its mean raw confidence.
func shrunk(n, sumX, sumY float64) float64 {
	return (sumY + calibPrior*sumX/n) / (n + calibPrior)
}

// apply maps a raw confidence; nil maps it unchanged.
func (iso *isotonic) apply(x float64) float64 {
	if iso == nil || len(iso.xs) == 0 || math.IsNaN(x) {
		return x
	}
	i := sort.SearchFloat64s(iso.xs, x)
	switch {
	case i == 0:
		return iso.ys[0]
	case i == len(iso.xs):
		return iso.ys[len(iso.ys)-1]
	}
	x0, x1, y0, y1 := iso.xs[i-1], iso.xs[i], iso.ys[i-1], iso.ys[i]
	if x1 <= x0 {
		return y1
	}
	return y0 + (y1-y0)*(x-x0)/(x1-x0)
}

// calibrationPairs returns the reviewed cases with a recorded raw
// confidence, most recent last, at most maxCalibCases of them.
func (kb *KnowledgeBase) calibrationPairs() (pairs []calibPair, gen uint64) {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	for i := len(kb.meta) - 1; i >= 0 && len(pairs) < maxCalibCases; i-- {
		md := kb.meta[i]
		if md.conf <= 0 || md.review == Truth {
			continue
		}
		right := 0.0
		if md.review == Confirmed {
			right = 1
		}
		pairs = append(pairs, calibPair{float64(md.conf), right})
	}
	return pairs, kb.gen
}

// calibrator caches the fit of a knowledge base for its generation.
type calibrator struct {
	mu  sync.Mutex
	gen uint64
	fit *isotonic
	ok  bool
}

// forKB returns the fit of kb's reviewed cases, refitting when kb changed;
// nil while fewer than minCalibCases reviews record a confidence.
func (c *calibrator) forKB(kb *KnowledgeBase) *isotonic {
	kb.mu.RLock()
	gen := kb.gen
	kb.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.gen == gen {
		return c.fit
	}
	pairs, gen := kb.calibrationPairs()
	c.fit = nil
	if len(pairs) >= minCalibCases {
		c.fit = fitIsotonic(pairs)
	}
	c.gen, c.ok = gen, true
	return c.fit
}
