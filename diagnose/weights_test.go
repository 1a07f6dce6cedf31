package diagnose

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestFeatureWeights: a feature that separates the labelled causes
// outweighs one that only varies within them, a feature no case carries
// weighs nothing, and too few cases leave the distance unweighted.
func TestFeatureWeights(t *testing.T) {
	const sep, noise, absent = 0, 1, 2
	build := func(perCause int) *KnowledgeBase {
		rng := rand.New(rand.NewSource(7))
		kb := NewKnowledgeBase()
		for i := 0; i < perCause; i++ {
			for ci, cause := range []string{"a", "b", "c"} {
				var s Signature
				s[sep] = float32(0.3*float64(ci) + 0.05*rng.NormFloat64())
				s[noise] = float32(0.4 * rng.NormFloat64())
				for f := 3; f < SigDim; f++ {
					s[f] = float32(0.1 * rng.NormFloat64())
				}
				if err := kb.AddSignature(fmt.Sprintf("%s-%d", cause, i), s, cause, Truth, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return kb
	}
	if _, ok := build(minWeightCases - 1).FeatureWeights(); ok {
		t.Errorf("weights learned from %d cases a cause, want none below %d", minWeightCases-1, minWeightCases)
	}
	w, ok := build(60).FeatureWeights()
	if !ok {
		t.Fatal("no weights from 60 cases a cause")
	}
	if w[sep] <= 2*w[noise] {
		t.Errorf("separating feature weighs %.2f, noisy one %.2f: want the separating one at least twice", w[sep], w[noise])
	}
	if w[absent] != 0 {
		t.Errorf("a feature no case carries weighs %.2f, want 0", w[absent])
	}
	if w[sep] > maxWeight {
		t.Errorf("weight %.2f above the cap %.2f", w[sep], maxWeight)
	}
}

// TestWeightedMatchIgnoresNoise: where a few features tell two causes
// apart and the rest only vary within them, the weighted nearest
// neighbours name the right cause of fresh queries clearly more often
// than the unweighted ones.
func TestWeightedMatchIgnoresNoise(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	sig := func(ci int) Signature {
		var s Signature
		s[0] = float32(0.15*float64(ci) + 0.05*rng.NormFloat64())
		s[1] = float32(0.15*float64(ci) + 0.05*rng.NormFloat64())
		for f := 2; f < SigDim; f++ {
			s[f] = float32(0.3 * rng.NormFloat64())
		}
		return s
	}
	kb := NewKnowledgeBase()
	for i := 0; i < 200; i++ {
		for ci, cause := range []string{"a", "b"} {
			if err := kb.AddSignature(fmt.Sprintf("%s-%d", cause, i), sig(ci), cause, Truth, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, ok := kb.FeatureWeights()
	if !ok {
		t.Fatal("no weights learned")
	}
	var iw [SigDim]uint32
	for f, x := range w {
		iw[f] = uint32(x * weightUnit)
	}
	vote := func(top []hit) string {
		n := map[string]int{}
		for _, h := range top {
			n[kb.causes[kb.meta[h.idx].cause]]++
		}
		if n["a"] > n["b"] {
			return "a"
		}
		return "b"
	}
	plain, weighted := 0, 0
	const queries = 200
	for i := 0; i < queries; i++ {
		ci := i % 2
		want := []string{"a", "b"}[ci]
		q := sig(ci)
		c := q.encode()
		if vote(scanNearest(&c, kb.vecs, 9)) == want {
			plain++
		}
		if vote(scanNearestWeighted(&c, kb.vecs, 9, &iw)) == want {
			weighted++
		}
		// Match reads the same learned weights.
		if got, top := kb.Match(q, 1, time.Time{}), scanNearestWeighted(&c, kb.vecs, 1, &iw); got.Neighbours[0].ID != kb.meta[top[0].idx].id {
			t.Fatalf("query %d: Match's nearest is %s, the weighted scan's %s", i, got.Neighbours[0].ID, kb.meta[top[0].idx].id)
		}
	}
	t.Logf("top-1 of %d queries: unweighted %d, weighted %d", queries, plain, weighted)
	if weighted < plain+queries/10 {
		t.Errorf("weighted neighbours right %d of %d, unweighted %d: want at least %d more", weighted, queries, plain, queries/10)
	}
}

// BenchmarkNearestWeighted1M measures the weighted scan (a knowledge base
// with learned weights) over a million stored cases, beside
// BenchmarkNearest1M's unweighted SWAR scan.
func BenchmarkNearestWeighted1M(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewSource(1))
	vecs := make([]uint64, 0, n*sigWords)
	for _, s := range benchSigs(n, true, rng) {
		c := s.encode()
		vecs = append(vecs, c[:]...)
	}
	var w [SigDim]uint32
	for f := range w {
		w[f] = uint32(rng.Intn(2 * weightUnit))
	}
	queries := benchSigs(64, true, rng)
	b.SetBytes(int64(len(vecs) * 8))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)].encode()
		if got := scanNearestWeighted(&q, vecs, 10, &w); len(got) != 10 {
			b.Fatalf("%d neighbours", len(got))
		}
	}
}
