package diagnose

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// featureIndex returns the signature index of a feature name.
func featureIndex(t *testing.T, name string) int {
	t.Helper()
	for i := 0; i < SigDim; i++ {
		if FeatureName(i) == name {
			return i
		}
	}
	t.Fatalf("no feature %s", name)
	return -1
}

// TestSignature checks direction, neutrality and bounds of the features.
func TestSignature(t *testing.T) {
	healthySig := NewSignature(synth(1, nil))
	tests := []struct {
		name    string
		s       m.Snapshot
		feature string
		sign    int // +1 positive, -1 negative, 0 zero
	}{
		{"tpot up is bad", synth(1, m.Values{m.TPOT: 40}), m.TPOT, +1},
		{"sm clock down is bad", synth(1, m.Values{m.SMClock: 1200}), m.SMClock, +1},
		{"hit rate down is bad", synth(1, m.Values{m.KVCacheHitRate: 0.1}), m.KVCacheHitRate, +1},
		{"two-sided keeps its sign", synth(1, m.Values{m.SMUtil: 0.2}), m.SMUtil, -1},
		{"missing metric is neutral", func() m.Snapshot { s := synth(1, nil); delete(s.Current, m.TPOT); return s }(), m.TPOT, 0},
		{"no history, no deviation", noHistory(synth(1, m.Values{m.TPOT: 40})), m.TPOT, 0},
		{"queue share", synth(1, m.Values{m.QueueTime: 2000, m.E2E: 2500}), "queue_share", +1},
		{"gateway excess", synth(1, m.Values{m.GatewayE2E: 5000}), "gateway_excess", +1},
		{"nan current", synth(1, m.Values{m.TPOT: math.NaN()}), m.TPOT, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sig := NewSignature(tc.s)
			for i, x := range sig {
				if math.IsNaN(float64(x)) || x > 1 || x < -1 {
					t.Fatalf("feature %s = %v, want finite in ±1", FeatureName(i), x)
				}
			}
			x := sig[featureIndex(t, tc.feature)]
			got := 0
			switch {
			case x > 0.2:
				got = 1
			case x < -0.2:
				got = -1
			case math.Abs(float64(x)) < 1e-6:
				got = 0
			default:
				got = 2 // small but not neutral
			}
			if got != tc.sign {
				t.Errorf("feature %s = %.3f (healthy %.3f), want sign %d", tc.feature, x, healthySig[featureIndex(t, tc.feature)], tc.sign)
			}
		})
	}
}

// TestNearest: an identical case is found first with similarity 1, a case
// of the same fault at another seed comes before a different fault, and
// the shared deviations name the fault's metrics.
func TestNearest(t *testing.T) {
	kb := NewKnowledgeBase()
	add := func(id, cause string, s m.Snapshot) {
		t.Helper()
		if err := kb.Add(LabelledCase{ID: id, Snapshot: s, Cause: cause, Review: Confirmed}); err != nil {
			t.Fatal(err)
		}
	}
	add("kv", m.CauseKVCacheEviction, synth(1, faults[m.CauseKVCacheEviction]))
	add("spec", m.CauseSpecDecodeDegradation, synth(2, faults[m.CauseSpecDecodeDegradation]))
	add("none", m.CauseNone, synth(3, nil))
	add("tx", m.CauseTransportLatency, synth(4, faults[m.CauseTransportLatency]))

	nb := kb.Nearest(NewSignature(synth(2, faults[m.CauseSpecDecodeDegradation])), 2)
	if len(nb) != 2 || nb[0].ID != "spec" || nb[0].Similarity < 0.999 {
		t.Fatalf("nearest %+v, want spec at similarity 1 first", nb)
	}
	if !contains(nb[0].Shared, m.RejectionRate) {
		t.Errorf("shared %v, want %s among them", nb[0].Shared, m.RejectionRate)
	}
	nb = kb.Nearest(NewSignature(synth(9, faults[m.CauseKVCacheEviction])), 4)
	if nb[0].ID != "kv" {
		t.Errorf("nearest to another eviction is %s (%+v)", nb[0].ID, nb)
	}
	for i := 1; i < len(nb); i++ {
		if nb[i].Similarity > nb[i-1].Similarity {
			t.Errorf("neighbours not sorted: %+v", nb)
		}
	}
}

// TestScanMatchesBruteForce: the pruned SWAR scan returns exactly the k
// nearest of a brute-force sort over the unpacked features.
func TestScanMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	randSig := func() Signature {
		var s Signature
		for i := range s {
			s[i] = float32(rng.Float64()*2.2 - 1.1) // beyond ±1 too: encode clips
		}
		return s
	}
	for _, n := range []int{0, 1, 5, 200, 3000} {
		var vecs []uint64
		codes := make([]code, n)
		for i := range codes {
			s := randSig()
			codes[i] = s.encode()
			vecs = append(vecs, codes[i][:]...)
		}
		qs := randSig()
		q := qs.encode()
		var w [SigDim]uint32
		for j := range w {
			w[j] = uint32(rng.Intn(1 << weightBits))
		}
		for _, tc := range []struct {
			k        int
			weighted bool
		}{{1, false}, {10, false}, {50, false}, {1, true}, {10, true}, {50, true}} {
			k := tc.k
			got := scanNearest(&q, vecs, k)
			if tc.weighted {
				got = scanNearestWeighted(&q, vecs, k, &w)
			}
			all := make([]hit, n)
			for i := range codes {
				var d uint32
				for j := 0; j < SigDim; j++ {
					wj := uint32(1)
					if tc.weighted {
						wj = w[j]
					}
					d += wj * uint32(abs(q.feature(j)-codes[i].feature(j)))
				}
				all[i] = hit{i, d}
			}
			sort.Slice(all, func(a, b int) bool {
				if all[a].d != all[b].d {
					return all[a].d < all[b].d
				}
				return all[a].idx < all[b].idx
			})
			want := all[:min(k, n)]
			if len(got) != len(want) {
				t.Fatalf("n=%d k=%d weighted=%v: %d hits, want %d", n, k, tc.weighted, len(got), len(want))
			}
			for i := range want {
				if got[i].d != want[i].d {
					t.Fatalf("n=%d k=%d weighted=%v: hit %d distance %d, want %d", n, k, tc.weighted, i, got[i].d, want[i].d)
				}
			}
		}
	}
}

// TestEncode: features round-trip within one code step, NaN is neutral,
// and out-of-range values clip.
func TestEncode(t *testing.T) {
	var s Signature
	s[0], s[1], s[2], s[3], s[4] = 0.5, -1, float32(math.NaN()), 3, -0.01
	c := s.encode()
	for _, tc := range []struct{ i, want int }{{0, 32}, {1, -63}, {2, 0}, {3, 63}, {4, -1}, {5, 0}} {
		if got := c.feature(tc.i); got != tc.want {
			t.Errorf("feature %d decodes to %d, want %d", tc.i, got, tc.want)
		}
	}
}

// kbOf builds a knowledge base of n cases of each fault, labelled cause.
func kbOf(t *testing.T, n int, fault m.Values, cause string, review Review, seed int64) *KnowledgeBase {
	t.Helper()
	kb := NewKnowledgeBase()
	addN(t, kb, n, fault, cause, review, seed)
	return kb
}

func addN(t *testing.T, kb *KnowledgeBase, n int, fault m.Values, cause string, review Review, seed int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := kb.Add(LabelledCase{ID: fmt.Sprintf("%s-%d", cause, i), Snapshot: synth(seed+int64(i), fault), Cause: cause, Review: review}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMatchingOverturnsAndNamesNewCauses: ten close cases labelled with an
// engineer-created cause overturn the rules' answer, name a cause no rule
// covers, and the diagnosis says so; a split vote leaves the rule; an
// empty or unrelated knowledge base changes nothing.
func TestMatchingOverturnsAndNamesNewCauses(t *testing.T) {
	// A host-overhead-like signature that engineers traced to a NCCL
	// all-reduce stall: a cause the taxonomy lacks.
	fault := faults[m.CauseHostOverhead]
	query := synth(100, fault)
	rulesOnly := New(Options{}).Diagnose(query)
	if rulesOnly.RootCause != m.CauseHostOverhead {
		t.Fatalf("rules diagnose %s; the test needs host_overhead", rulesOnly.RootCause)
	}

	t.Run("agreeing neighbours overturn", func(t *testing.T) {
		kb := kbOf(t, 10, fault, "nccl_allreduce_stall", Corrected, 200)
		d := New(Options{Cases: kb}).Diagnose(query)
		if d.RootCause != "nccl_allreduce_stall" {
			t.Fatalf("diagnosed %s, want the engineers' cause (candidates %+v)", d.RootCause, d.Candidates)
		}
		if d.Candidates[0].Source != SourceMatch || d.Candidates[0].RootCause != d.RootCause {
			t.Errorf("first candidate %+v, want the match", d.Candidates[0])
		}
		if len(d.SimilarCases) != 10 {
			t.Errorf("%d similar cases, want 10", len(d.SimilarCases))
		}
		if len(d.Notes) == 0 || !strings.Contains(d.Notes[len(d.Notes)-1], "changed the answer") {
			t.Errorf("notes %q do not explain the change", d.Notes)
		}
		if d.Title != "nccl_allreduce_stall" {
			t.Errorf("title %q, want the cause id for a cause without a title", d.Title)
		}
		checkFinite(t, d)
	})
	t.Run("split vote keeps the rule", func(t *testing.T) {
		kb := kbOf(t, 4, fault, "nccl_allreduce_stall", Confirmed, 200)
		addN(t, kb, 6, fault, m.CauseHostOverhead, Confirmed, 300)
		d := New(Options{Cases: kb}).Diagnose(query)
		if d.RootCause != m.CauseHostOverhead {
			t.Errorf("diagnosed %s, want the rule's host_overhead to stand", d.RootCause)
		}
		if d.Confidence >= rulesOnly.Confidence {
			t.Errorf("confidence %.3f with a split vote, rules alone %.3f: want lower", d.Confidence, rulesOnly.Confidence)
		}
	})
	t.Run("agreement raises confidence", func(t *testing.T) {
		kb := kbOf(t, 10, fault, m.CauseHostOverhead, Confirmed, 300)
		d := New(Options{Cases: kb}).Diagnose(query)
		if d.RootCause != m.CauseHostOverhead || d.Confidence <= rulesOnly.Confidence {
			t.Errorf("diagnosed %s at %.3f, rules alone %.3f: want the same cause, surer", d.RootCause, d.Confidence, rulesOnly.Confidence)
		}
	})
	t.Run("empty knowledge base", func(t *testing.T) {
		d := New(Options{Cases: NewKnowledgeBase()}).Diagnose(query)
		if d.RootCause != rulesOnly.RootCause || d.Confidence != rulesOnly.Confidence || len(d.SimilarCases) != 0 {
			t.Errorf("empty knowledge base changed the diagnosis: %+v", d)
		}
	})
	t.Run("one distant case", func(t *testing.T) {
		kb := kbOf(t, 1, faults[m.CauseTransportLatency], m.CauseTransportLatency, Truth, 1)
		d := New(Options{Cases: kb}).Diagnose(query)
		if d.RootCause != rulesOnly.RootCause {
			t.Errorf("one unrelated case overturned the rules: %s", d.RootCause)
		}
	})
	t.Run("one-cause knowledge base", func(t *testing.T) {
		kb := kbOf(t, 30, nil, m.CauseNone, Truth, 1)
		d := New(Options{Cases: kb}).Diagnose(synth(5, faults[m.CauseEngineErrors]))
		if d.RootCause != m.CauseEngineErrors {
			t.Errorf("healthy cases outvoted a clear fault: %s", d.RootCause)
		}
	})
}

// TestVoteWeight: corrections outweigh confirmations, old cases fade to
// the floor, cases newer than the query count in full.
func TestVoteWeight(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := int64(24 * 3600)
	tests := []struct {
		name   string
		review Review
		at     int64
		want   float64
	}{
		{"confirmed now", Confirmed, now.Unix(), 1},
		{"corrected now", Corrected, now.Unix(), correctedWeight},
		{"one half-life", Truth, now.Unix() - 90*day, 0.5},
		{"very old", Confirmed, now.Unix() - 3650*day, recencyFloor},
		{"future", Confirmed, now.Unix() + day, 1},
		{"unknown time", Confirmed, 0, 1},
	}
	for _, tc := range tests {
		if got := voteWeight(1, tc.review, tc.at, now); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: weight %.4f, want %.4f", tc.name, got, tc.want)
		}
	}
}

// TestKnowledgeBaseErrors: bad cases are refused with an error, and a
// failed Replace keeps the old content.
func TestKnowledgeBaseErrors(t *testing.T) {
	kb := NewKnowledgeBase()
	if err := kb.Add(LabelledCase{ID: "a", Snapshot: synth(1, nil), Cause: " "}); err == nil {
		t.Error("a case without a cause was accepted")
	}
	if err := kb.Add(LabelledCase{ID: "a", Snapshot: synth(1, nil), Cause: "none", Review: Review(9)}); err == nil {
		t.Error("an unknown review kind was accepted")
	}
	if err := kb.Add(LabelledCase{ID: "a", Snapshot: synth(1, nil), Cause: "none"}); err != nil {
		t.Fatal(err)
	}
	err := kb.Replace([]LabelledCase{{ID: "b", Snapshot: synth(1, nil), Cause: "none"}, {ID: "c", Cause: ""}})
	if err == nil || kb.Len() != 1 {
		t.Errorf("Replace with a bad case: err %v, len %d; want an error and the old case kept", err, kb.Len())
	}
	var nilKB *KnowledgeBase
	if nilKB.Len() != 0 || nilKB.Nearest(Signature{}, 3) != nil {
		t.Error("a nil knowledge base is not empty")
	}
}

// TestEvaluateFeedback: on synthetic faults with a cause the rules do not
// know, the replay learns it; label noise must be in 0-1.
func TestEvaluateFeedback(t *testing.T) {
	var cases []m.Case
	for i := 0; i < 60; i++ {
		cause := []string{m.CauseEngineErrors, m.CauseNone, "nccl_allreduce_stall"}[i%3]
		fault := faults[cause]
		if cause == "nccl_allreduce_stall" {
			fault = faults[m.CauseHostOverhead]
		}
		cases = append(cases, m.Case{Snapshot: synth(int64(i), fault), Label: cause})
	}
	r, err := EvaluateFeedback(cases, FeedbackOptions{Block: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Blocks) != 3 || r.Blocks[2].From != 40 || r.Blocks[2].To != 60 {
		t.Errorf("blocks %+v, want three of 20", r.Blocks)
	}
	if r.Rules > 0.7 {
		t.Errorf("rules alone %.2f: they cannot know the engineers' cause", r.Rules)
	}
	if r.Blocks[2].Match < 0.95 || r.Match <= r.Rules {
		t.Errorf("matching %.2f overall, %.2f in the last block: want it to learn the new cause", r.Match, r.Blocks[2].Match)
	}
	if _, err := EvaluateFeedback(cases, FeedbackOptions{Noise: 1.5}); err == nil {
		t.Error("noise 1.5 was accepted")
	}
	rn, err := EvaluateFeedback(cases, FeedbackOptions{Noise: 0.5, Seed: 3})
	if err != nil || rn.Flipped == 0 {
		t.Errorf("noise 0.5 flipped %d labels (err %v)", rn.Flipped, err)
	}
}

// FuzzSignatureAndMatch: arbitrary values (NaN, Inf, negative), missing
// fields and history lengths never make a signature leave ±1, and a
// knowledge base built from such cases answers with similarities in 0-1
// and a finite diagnosis.
func FuzzSignatureAndMatch(f *testing.F) {
	f.Add(0.5, 200.0, 18.0, 0.99, 3.0, 60, uint8(0), uint8(3))
	f.Add(math.NaN(), math.Inf(1), -1.0, 2.0, -3.0, 0, uint8(255), uint8(0))
	f.Add(1e308, 1e308, 1e-308, 1.0, 1e308, 2, uint8(7), uint8(1))
	ids := []string{m.SMUtil, m.TTFT, m.TPOT, m.KVCacheUsage, m.ErrorRate}
	f.Fuzz(func(t *testing.T, sm, ttft, tpot, kv, errRate float64, n int, mask, kbSize uint8) {
		if n < 0 {
			n = -n
		}
		s := synth(1, nil)
		s.History = s.History[:n%(len(s.History)+1)]
		for i, x := range []float64{sm, ttft, tpot, kv, errRate} {
			if mask&(1<<i) != 0 {
				delete(s.Current, ids[i])
			} else {
				s.Current[ids[i]] = x
			}
			if mask&(1<<(i+3)) != 0 && len(s.History) > 0 {
				s.History[0].Values[ids[i]] = x
			}
		}
		sig := NewSignature(s)
		for i, x := range sig {
			if !(x >= -1 && x <= 1) {
				t.Fatalf("feature %s = %v", FeatureName(i), x)
			}
		}
		kb := NewKnowledgeBase()
		for i := 0; i < int(kbSize%8); i++ {
			cause := "only_cause"
			if kbSize&0x80 != 0 {
				cause = fmt.Sprint("c", i%3)
			}
			if err := kb.Add(LabelledCase{ID: fmt.Sprint(i), Snapshot: s, Cause: cause, Review: Review(i % 3)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, nb := range kb.Nearest(sig, 5) {
			if !(nb.Similarity >= 0 && nb.Similarity <= 1) {
				t.Fatalf("similarity %v", nb.Similarity)
			}
		}
		checkFinite(t, New(Options{Cases: kb}).Diagnose(s))
	})
}

// TestLearn: an engine built without cases learns them, and forgets them
// when the cases are replaced by none.
func TestLearn(t *testing.T) {
	e := New(Options{})
	query := synth(100, faults[m.CauseHostOverhead])
	var cases []LabelledCase
	for i := 0; i < 10; i++ {
		cases = append(cases, LabelledCase{ID: fmt.Sprint(i), Snapshot: synth(int64(200+i), faults[m.CauseHostOverhead]), Cause: "nccl_allreduce_stall", Review: Corrected})
	}
	if err := e.Learn(cases); err != nil {
		t.Fatal(err)
	}
	if d := e.Diagnose(query); d.RootCause != "nccl_allreduce_stall" {
		t.Errorf("after Learn diagnosed %s", d.RootCause)
	}
	// Relabelling one case replaces it rather than adding a second.
	if err := e.LearnCase(LabelledCase{ID: "3", Snapshot: cases[3].Snapshot, Cause: m.CauseHostOverhead, Review: Confirmed}); err != nil {
		t.Fatal(err)
	}
	if n := e.Cases().Len(); n != 10 {
		t.Errorf("%d cases after relabelling one, want 10", n)
	}
	if err := e.LearnCase(LabelledCase{ID: "new", Snapshot: cases[3].Snapshot, Cause: m.CauseHostOverhead}); err != nil || e.Cases().Len() != 11 {
		t.Errorf("a new case was not added (err %v, len %d)", err, e.Cases().Len())
	}
	if err := e.LearnCase(LabelledCase{ID: "bad"}); err == nil {
		t.Error("a case without a cause was learned")
	}
	if err := e.Learn(nil); err != nil {
		t.Fatal(err)
	}
	if d := e.Diagnose(query); d.RootCause != m.CauseHostOverhead || len(d.SimilarCases) != 0 {
		t.Errorf("after forgetting diagnosed %s with %d similar cases", d.RootCause, len(d.SimilarCases))
	}
}

// TestConcurrentLearnAndDiagnose: the console diagnoses while labels
// arrive; the knowledge base must serve both (run with -race).
func TestConcurrentLearnAndDiagnose(t *testing.T) {
	e := New(Options{})
	s := synth(1, faults[m.CauseHostOverhead])
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			if err := e.LearnCase(LabelledCase{ID: fmt.Sprint(i % 7), Snapshot: s, Cause: "nccl_allreduce_stall", Review: Corrected}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 50; i++ {
		checkFinite(t, e.Diagnose(s))
	}
	<-done
	if n := e.Cases().Len(); n != 7 {
		t.Errorf("%d cases, want the 7 distinct ids", n)
	}
}
