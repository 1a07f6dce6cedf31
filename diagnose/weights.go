package diagnose

import (
	"math"
)

// Learned feature weights. The plain L1 distance counts every feature
// alike, so a feature that varies a lot within one cause (load, which
// follows the time of day) pulls apart cases of the same fault as much as
// a feature that tells causes apart (the draft rejection rate) pulls
// together cases of different faults. Once the knowledge base holds enough
// labelled cases, each feature is weighted by how well it separates the
// labelled causes:
//
//	w_f = B_f / (W_f + 1)
//
// (Fisher's criterion, feature by feature), where B_f is the variance of
// the per-cause means of feature f around its overall mean (each cause
// weighted by its cases) and W_f the pooled variance within causes, both
// in code units (the +1 keeps a feature that never varies within a cause
// from dominating). On the development corpora of both simulated worlds
// the plain ratio separated causes a little better than its square root
// (the ratio of scales); neither moved accuracy by more than a point, so
// the weights are a refinement, not the matcher's strength. A feature no case has (a field this deployment does not export) has
// no spread between causes and weight 0, so it no longer counts as "no
// change" against every query. Weights are rescaled to a mean of 1
// (weightUnit in integer form) and capped at maxWeight times that mean,
// so similarities stay on the scale of the unweighted distance.
//
// Everything comes from the labels: the weights change as cases are
// learned and relabelled, and with fewer than minWeightCases cases of at
// least two causes the distance stays unweighted.
const (
	// weightBits is the width of an integer weight; weightUnit is the
	// integer weight of a feature of mean weight, so a feature weighs at
	// most (2^weightBits - 1) / weightUnit times the mean, in steps of a
	// quarter.
	weightBits = 4
	weightUnit = 4
	maxWeight  = float64(1<<weightBits-1) / weightUnit
	// minWeightCases is the cases a cause needs to count toward weights.
	minWeightCases = 10
)

// featureWeights returns the learned integer weights (mean weightUnit) and
// whether there are enough labelled cases to learn them. The caller holds
// the lock.
func (kb *KnowledgeBase) featureWeights() (w [SigDim]uint32, ok bool) {
	var ratio [SigDim]float64
	causes := 0
	n := 0.0
	for ci := range kb.byCause {
		if len(kb.byCause[ci]) >= minWeightCases {
			causes++
			n += float64(len(kb.byCause[ci]))
		}
	}
	if causes < 2 {
		return w, false
	}
	for f := 0; f < SigDim; f++ {
		var sum, within float64
		for ci := range kb.byCause {
			nc := float64(len(kb.byCause[ci]))
			if nc < minWeightCases {
				continue
			}
			s := float64(kb.sums[ci][f])
			sum += s
			within += float64(kb.sqs[ci][f]) - s*s/nc
		}
		mean := sum / n
		between := 0.0
		for ci := range kb.byCause {
			nc := float64(len(kb.byCause[ci]))
			if nc < minWeightCases {
				continue
			}
			d := float64(kb.sums[ci][f])/nc - mean
			between += nc * d * d
		}
		ratio[f] = math.Max(0, between/n) / (math.Max(0, within/n) + 1)
	}
	total := 0.0
	for _, r := range ratio {
		total += r
	}
	if total <= 0 || math.IsNaN(total) {
		return w, false
	}
	for f, r := range ratio {
		x := math.Min(r*SigDim/total, maxWeight)
		w[f] = uint32(math.Round(x * weightUnit))
	}
	return w, true
}

// FeatureWeights returns the learned weight of every signature feature
// (mean 1; see featureWeights), and false while the knowledge base holds
// too few labelled cases to learn them.
func (kb *KnowledgeBase) FeatureWeights() ([SigDim]float64, bool) {
	var out [SigDim]float64
	if kb == nil {
		return out, false
	}
	kb.mu.RLock()
	w, ok := kb.featureWeights()
	kb.mu.RUnlock()
	for f, x := range w {
		out[f] = float64(x) / weightUnit
	}
	return out, ok
}

// weightMasks spreads 4-bit weights over bit planes: mask [k][j] has 0xff
// in byte b of word j where bit k of the weight of feature 8j+b is set.
func weightMasks(w *[SigDim]uint32) (ms [weightBits][sigWords]uint64) {
	for f, x := range w {
		for k := 0; k < weightBits; k++ {
			if x>>k&1 == 1 {
				ms[k][f/8] |= 0xff << (8 * (f % 8))
			}
		}
	}
	return ms
}

// scanNearestWeighted is scanNearest with a weighted L1 distance, weights
// of weightBits bits in units of weightUnit. It stays byte-parallel: the
// per-byte |a-b| of a word is masked once per bit plane of the weights and
// each plane's sum is shifted by its bit, so a case costs about four times
// the unweighted scan instead of one multiplication a feature. Lane sums
// stay below 2^16: at most 2·126 a lane per word, four words, times
// 1+2+4+8.
func scanNearestWeighted(q *code, vecs []uint64, k int, w *[SigDim]uint32) []hit {
	n := len(vecs) / sigWords
	if k > n {
		k = n
	}
	if k <= 0 {
		return nil
	}
	ms := weightMasks(w)
	heap := make([]hit, 0, k)
	bound := uint32(math.MaxUint32)
	for i := 0; i < n; i++ {
		v := vecs[i*sigWords : i*sigWords+sigWords : i*sigWords+sigWords]
		var acc uint64
		for j := 0; j < sigWords; j++ {
			d := absDiff(q[j], v[j])
			acc += lanes(d&ms[0][j]) + lanes(d&ms[1][j])<<1 + lanes(d&ms[2][j])<<2 + lanes(d&ms[3][j])<<3
			// The distance only grows word by word: once it is out
			// of reach, the rest need not be read. Most cases of a
			// large base stop after a word or two.
			if laneSum(acc) >= bound {
				break
			}
		}
		s := laneSum(acc)
		if s < bound {
			heap, bound = keepNearest(heap, k, hit{i, s})
		}
	}
	return sortHits(heap)
}
