package diagnose

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// classifierKB holds perCause cases of three causes that differ only in a
// combination of two features (their sum and difference), each of which
// alone varies as much within a cause as between causes.
func classifierKB(t *testing.T, perCause int, seed int64) (*KnowledgeBase, func(ci int) Signature) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	draw := func(ci int) Signature {
		var s Signature
		shift := 0.4 * float64(ci-1) // -0.4, 0, 0.4
		u := 0.5 * rng.NormFloat64()
		s[0] = float32(u + shift/2 + 0.03*rng.NormFloat64())
		s[1] = float32(u - shift/2 + 0.03*rng.NormFloat64())
		for f := 2; f < SigDim; f++ {
			s[f] = float32(0.5 * rng.NormFloat64())
		}
		for f := range s {
			s[f] = max(-1, min(1, s[f]))
		}
		return s
	}
	kb := NewKnowledgeBase()
	for i := 0; i < perCause; i++ {
		for ci, cause := range []string{"a", "b", "c"} {
			if err := kb.AddSignature(fmt.Sprintf("%s-%d", cause, i), draw(ci), cause, Truth, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return kb, draw
}

// TestClassifierLearnsCombination: the classifier separates causes that
// differ only in the difference of two features, among thirty noisy ones,
// and it stays unfitted below minClassifierCases.
func TestClassifierLearnsCombination(t *testing.T) {
	var cc classifierCache
	small, _ := classifierKB(t, (minClassifierCases-1)/3, 1)
	if fit := cc.forKB(small); fit != nil {
		t.Fatalf("classifier fitted from %d cases, want none below %d", small.Len(), minClassifierCases)
	}
	kb, draw := classifierKB(t, 200, 2)
	fit := cc.forKB(kb)
	if fit == nil {
		t.Fatal("no classifier from 600 cases")
	}
	causes := []string{"a", "b", "c"}
	right, knnRight, n := 0, 0, 300
	for i := 0; i < n; i++ {
		ci := i % 3
		sig := draw(ci)
		p := fit.probs(sig, "")
		best := ""
		for _, c := range causes {
			if best == "" || p[c] > p[best] {
				best = c
			}
		}
		if best == causes[ci] {
			right++
		}
		mt := kb.Match(sig, 10, time.Time{})
		vb := ""
		for c, v := range mt.Votes {
			if vb == "" || v > mt.Votes[vb] || (v == mt.Votes[vb] && c < vb) {
				vb = c
			}
		}
		if vb == causes[ci] {
			knnRight++
		}
	}
	t.Logf("classifier %d/%d, neighbours %d/%d", right, n, knnRight, n)
	if acc := float64(right) / float64(n); acc < 0.85 {
		t.Errorf("classifier right on %.0f%% of held-out cases, want at least 85%% (nearest neighbours: %.0f%%)", 100*acc, 100*float64(knnRight)/float64(n))
	}
}

// TestClassifierRefit: the fit is kept until the knowledge base changed
// by refitMin cases, then redone.
func TestClassifierRefit(t *testing.T) {
	var cc classifierCache
	kb, draw := classifierKB(t, 40, 3)
	first := cc.forKB(kb)
	if first == nil {
		t.Fatal("no classifier from 120 cases")
	}
	for i := 0; i < refitMin-1; i++ {
		if err := kb.AddSignature(fmt.Sprintf("x-%d", i), draw(i%3), []string{"a", "b", "c"}[i%3], Truth, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := cc.forKB(kb); got != first {
		t.Errorf("refitted after %d new cases, want the fit kept until %d", refitMin-1, refitMin)
	}
	if err := kb.AddSignature("last", draw(0), "a", Truth, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := cc.forKB(kb); got == first || got == nil {
		t.Errorf("fit not redone after %d new cases", refitMin)
	}
}

// BenchmarkClassifierFit: one full fit on maxClassifierCases cases of
// twelve causes, from zero weights, as after a knowledge base is loaded.
func BenchmarkClassifierFit(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	kb := NewKnowledgeBase()
	for i := 0; i < maxClassifierCases; i++ {
		ci := i % 12
		var s Signature
		for f := range s {
			s[f] = float32(max(-1, min(1, 0.3*rng.NormFloat64()+0.05*float64((ci*7+f)%5-2))))
		}
		if err := kb.AddSignature(fmt.Sprintf("c-%d", i), s, fmt.Sprintf("cause-%d", ci), Truth, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	ts := kb.trainingSet()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fitClassifier(ts.causes, ts.rules, ts.xs, ts.ys, nil) == nil {
			b.Fatal("fit failed")
		}
	}
}

// TestClassifierCorrectsRules: the rules systematically confuse two
// causes (they name b for a's cases and a for b's) whose signatures alike
// do not tell apart, while they name c right. From the rules' cause stored
// with each case the classifier learns the correction; without it
// (cases stored before the rules' cause was kept) it can only guess
// between a and b. A rules' cause it never saw counts as unknown.
func TestClassifierCorrectsRules(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	causes := []string{"a", "b", "c"}
	rulesSay := map[string]string{"a": "b", "b": "a", "c": "c"}
	draw := func(ci int) Signature {
		var s Signature
		for f := range s {
			s[f] = float32(0.4 * rng.NormFloat64())
		}
		if ci == 2 {
			s[3] += 0.6
		}
		for f := range s {
			s[f] = max(-1, min(1, s[f]))
		}
		return s
	}
	with, without := NewKnowledgeBase(), NewKnowledgeBase()
	for i := 0; i < 150; i++ {
		ci := i % 3
		sig := draw(ci)
		c := SignedCase{ID: fmt.Sprint(i), Signature: sig, Cause: causes[ci], Review: Truth}
		if err := without.PutSigned(c); err != nil {
			t.Fatal(err)
		}
		c.RulesCause = rulesSay[causes[ci]]
		if err := with.PutSigned(c); err != nil {
			t.Fatal(err)
		}
	}
	var ccWith, ccWithout classifierCache
	fitWith, fitWithout := ccWith.forKB(with), ccWithout.forKB(without)
	if fitWith == nil || fitWithout == nil {
		t.Fatal("no classifier from 150 cases")
	}
	if len(fitWith.rules) != 3 || len(fitWithout.rules) != 0 {
		t.Fatalf("rules' causes of the fits: %v and %v, want three and none", fitWith.rules, fitWithout.rules)
	}
	top := func(p map[string]float64) string {
		best := ""
		for _, c := range causes {
			if best == "" || p[c] > p[best] {
				best = c
			}
		}
		return best
	}
	n := 300
	right, rightWithout, rulesRight, unseen := 0, 0, 0, 0
	for i := 0; i < n; i++ {
		ci := i % 3
		sig := draw(ci)
		rules := rulesSay[causes[ci]]
		right += b2i(top(fitWith.probs(sig, rules)) == causes[ci])
		rightWithout += b2i(top(fitWithout.probs(sig, rules)) == causes[ci])
		rulesRight += b2i(rules == causes[ci])
		// An answer no training case had reads as unknown: the signature
		// still names c, and a and b stay a guess.
		if ci == 2 {
			unseen += b2i(top(fitWith.probs(sig, "never_seen")) == "c")
		}
	}
	t.Logf("rules %d/%d, classifier with the rules' cause %d/%d, without %d/%d", rulesRight, n, right, n, rightWithout, n)
	if acc := float64(right) / float64(n); acc < 0.95 {
		t.Errorf("with the rules' cause the classifier is right on %.0f%%, want at least 95%%", 100*acc)
	}
	if acc := float64(rightWithout) / float64(n); acc > 0.8 {
		t.Errorf("without the rules' cause the classifier is right on %.0f%%: the signatures should not tell a from b", 100*acc)
	}
	if unseen < n/3*7/10 {
		t.Errorf("with an unseen rules' cause, c named on %d of %d of its cases", unseen, n/3)
	}
}

// TestRulesCauseKept: the rules' cause of a case survives ReplaceSigned
// and PutSigned (which remaps it into the receiving knowledge base), and a
// relabel without it leaves it unknown.
func TestRulesCauseKept(t *testing.T) {
	kb := NewKnowledgeBase()
	if err := kb.ReplaceSigned([]SignedCase{
		{ID: "1", Cause: "a", RulesCause: "x", Review: Truth},
		{ID: "2", Cause: "b", Review: Truth},
	}); err != nil {
		t.Fatal(err)
	}
	if err := kb.PutSigned(SignedCase{ID: "3", Cause: "a", RulesCause: "y", Review: Truth}); err != nil {
		t.Fatal(err)
	}
	if err := kb.PutSigned(SignedCase{ID: "2", Cause: "b", RulesCause: "y", Review: Corrected}); err != nil {
		t.Fatal(err)
	}
	if err := kb.PutSigned(SignedCase{ID: "1", Cause: "a", Review: Corrected}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, md := range kb.meta {
		r := ""
		if md.rules > 0 {
			r = kb.ruleCauses[md.rules-1]
		}
		got[md.id] = r
	}
	want := map[string]string{"1": "", "2": "y", "3": "y"}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("case %s: rules' cause %q, want %q (all %v)", id, got[id], w, got)
		}
	}
	if ts := kb.trainingSet(); !equalStrings(ts.rules, []string{"y"}) || len(ts.xs[0]) != classifierDim(1) {
		t.Errorf("training set rules' causes %v, row length %d; want [y] and %d", ts.rules, len(ts.xs[0]), classifierDim(1))
	}
}
