package diagnose

import (
	"math"
	"sort"

	m "github.com/casebook/casebook/metrics"
)

// PlainKNN is the baseline a matcher has to beat: the simplest case-based
// classifier that reads the same snapshots. Every catalog metric becomes one
// feature, the log-ratio of its current value to its history mean (0 when
// either is missing), and the k nearest labelled cases in Euclidean distance
// vote, one vote each, ties going to the cause of the nearest. It knows no
// physics, weights no metric and never abstains. It is not safe for
// concurrent use.
type PlainKNN struct {
	k      int
	vecs   [][]float64
	labels []string
}

// NewPlainKNN returns an empty baseline voting with k neighbours (5 when
// k <= 0).
func NewPlainKNN(k int) *PlainKNN {
	if k <= 0 {
		k = 5
	}
	return &PlainKNN{k: k}
}

// knnClip bounds a log-ratio feature: a metric that went from nothing to
// something would otherwise be infinitely far from everything.
const knnClip = 5

// plainFeatures is the log-ratio of every catalog metric's current value to
// its history mean.
func plainFeatures(s m.Snapshot) []float64 {
	out := make([]float64, len(m.Catalog))
	for i, mt := range m.Catalog {
		x, ok := s.Current.Get(mt.ID)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		sum, n := 0.0, 0
		for _, p := range s.History {
			if v, ok := p.Values.Get(mt.ID); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				sum += v
				n++
			}
		}
		if n == 0 {
			continue
		}
		mean := sum / float64(n)
		// A small floor keeps rates that sit at zero (errors,
		// preemptions) finite.
		eps := 1e-3 + 1e-3*math.Abs(mean)
		r := math.Log((math.Abs(x) + eps) / (math.Abs(mean) + eps))
		out[i] = math.Max(-knnClip, math.Min(knnClip, r))
	}
	return out
}

// Add learns a labelled snapshot.
func (k *PlainKNN) Add(s m.Snapshot, cause string) {
	k.vecs = append(k.vecs, plainFeatures(s))
	k.labels = append(k.labels, cause)
}

// Len is the number of cases learned.
func (k *PlainKNN) Len() int { return len(k.vecs) }

// Classify names the majority cause of the k nearest cases, "" when no case
// has been learned.
func (k *PlainKNN) Classify(s m.Snapshot) string {
	if len(k.vecs) == 0 {
		return ""
	}
	q := plainFeatures(s)
	type hit struct {
		d float64
		i int
	}
	hits := make([]hit, len(k.vecs))
	for i, v := range k.vecs {
		d := 0.0
		for j := range q {
			x := q[j] - v[j]
			d += x * x
		}
		hits[i] = hit{d, i}
	}
	sort.Slice(hits, func(a, b int) bool {
		if hits[a].d != hits[b].d {
			return hits[a].d < hits[b].d
		}
		return hits[a].i < hits[b].i
	})
	hits = hits[:min(k.k, len(hits))]
	votes := map[string]int{}
	for _, h := range hits {
		votes[k.labels[h.i]]++
	}
	best, bestN := k.labels[hits[0].i], votes[k.labels[hits[0].i]]
	for _, h := range hits[1:] {
		if c := k.labels[h.i]; votes[c] > bestN {
			best, bestN = c, votes[c]
		}
	}
	return best
}
