package diagnose

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// blend is fault at strength s: each of its metrics moved the share s of
// the way from the healthy value to the fault's.
func blend(s float64, fault m.Values) m.Values {
	h := healthy()
	out := m.Values{}
	for id, x := range fault {
		out[id] = h[id] + s*(x-h[id])
	}
	return out
}

// overlay lays the values of later maps over earlier ones.
func overlay(vs ...m.Values) m.Values {
	out := m.Values{}
	for _, v := range vs {
		for id, x := range v {
			out[id] = x
		}
	}
	return out
}

// sigOf builds a signature with the given features set, plus noise.
func sigOf(rng *rand.Rand, set map[int]float64) Signature {
	var s Signature
	for i := range s {
		s[i] = float32(0.04 * rng.NormFloat64())
	}
	for i, x := range set {
		s[i] += float32(x)
	}
	return s
}

// TestExplainPair: a loud cause (ten features) and a quiet one (one
// feature), learned at every strength. A snapshot with both, the quiet one
// strong and the loud one weak, names the quiet one; the other way round
// the loud one; either alone, or a knowledge base too small to rank
// against, is not read as two faults.
func TestExplainPair(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	loud := func(s float64) map[int]float64 {
		out := map[int]float64{}
		for i := 0; i < 10; i++ {
			out[i] = 0.8 * s
		}
		return out
	}
	quiet := func(s float64) map[int]float64 { return map[int]float64{20: 0.8 * s} }
	both := func(a, b map[int]float64) map[int]float64 {
		out := map[int]float64{}
		for _, x := range []map[int]float64{a, b} {
			for i, v := range x {
				out[i] += v
			}
		}
		return out
	}
	build := func(n int) *KnowledgeBase {
		kb := NewKnowledgeBase()
		for i := 0; i < n; i++ {
			s := 0.2 + 0.8*float64(i)/float64(n)
			for _, c := range []struct {
				cause string
				sig   Signature
			}{{"loud", sigOf(rng, loud(s))}, {"quiet", sigOf(rng, quiet(s))}, {m.CauseNone, sigOf(rng, nil)}} {
				if err := kb.AddSignature(fmt.Sprintf("%s-%d", c.cause, i), c.sig, c.cause, Truth, testAt); err != nil {
					t.Fatal(err)
				}
			}
		}
		return kb
	}
	kb := build(60)
	tests := []struct {
		name    string
		sig     Signature
		ok      bool
		primary string
	}{
		{"quiet fault stronger", sigOf(rng, both(loud(0.3), quiet(0.95))), true, "quiet"},
		{"loud fault stronger", sigOf(rng, both(loud(0.95), quiet(0.3))), true, "loud"},
		{"loud fault alone", sigOf(rng, loud(0.5)), false, ""},
		{"quiet fault alone", sigOf(rng, quiet(0.9)), false, ""},
		{"healthy", sigOf(rng, nil), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{"loud", "quiet"}, {"quiet", "loud"}} {
				v, ok := kb.ExplainPair(tc.sig, order[0], order[1])
				if ok != tc.ok || (ok && v.Primary != tc.primary) {
					t.Errorf("ExplainPair(%s, %s) = %+v, %v; want primary %q, %v", order[0], order[1], v, ok, tc.primary, tc.ok)
				}
				if ok && (v.PrimaryRank < v.SecondaryRank || v.Secondary == v.Primary) {
					t.Errorf("verdict %+v: the primary must rank higher than the other cause", v)
				}
			}
		})
	}
	t.Run("too few cases", func(t *testing.T) {
		small := build(minPairCases - 1)
		if v, ok := small.ExplainPair(tests[0].sig, "loud", "quiet"); ok {
			t.Errorf("ranked against %d cases: %+v", minPairCases-1, v)
		}
	})
	t.Run("unknown or equal causes", func(t *testing.T) {
		if _, ok := kb.ExplainPair(tests[0].sig, "loud", "nccl_stall"); ok {
			t.Error("a cause the knowledge base lacks was ranked")
		}
		if _, ok := kb.ExplainPair(tests[0].sig, "loud", "loud"); ok {
			t.Error("a cause was ranked against itself")
		}
		var nilKB *KnowledgeBase
		if _, ok := nilKB.ExplainPair(tests[0].sig, "loud", "quiet"); ok {
			t.Error("a nil knowledge base ranked")
		}
	})
	t.Run("relabelled cases move between causes", func(t *testing.T) {
		kb := build(30)
		// Relabelling every quiet case as loud leaves no quiet cases.
		for i := 0; i < 30; i++ {
			if err := kb.Put(LabelledCase{ID: fmt.Sprintf("quiet-%d", i), Snapshot: synth(int64(i), nil), Cause: "loud", Review: Corrected}); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok := kb.ExplainPair(tests[0].sig, "loud", "quiet"); ok {
			t.Errorf("ranked against a cause whose cases were all relabelled: %+v", v)
		}
		if kb.Len() != 90 {
			t.Errorf("%d cases after relabelling, want 90", kb.Len())
		}
	})
}

// TestEngineExplainsAway: an eviction storm beside an engine error burst
// of a few percent, which the rules alone call the engine's own (requests
// hardly wait, so they are no queue timeouts) and name, since errors
// weigh more than the storm's mild moves. With a knowledge base of both
// causes at every strength the engine sees that the storm is the
// stronger against its own labelled cases, names it and says why; a
// storm beside errors as strong against theirs, and a storm alone, keep
// the rules' answer without a note.
func TestEngineExplainsAway(t *testing.T) {
	kv, errs := faults[m.CauseKVCacheEviction], faults[m.CauseEngineErrors]
	kb := stormAndErrorsKB(t)
	rules := New(Options{})
	// Ten close single-fault neighbours may still outvote the verdict (see
	// fuseMatch); a prior that large leaves the vote no say, so the test
	// sees explaining away alone.
	e := New(Options{Cases: kb, MatchPrior: 1e9})
	tests := []struct {
		name       string
		fault      m.Values
		rulesSay   string
		want       string
		note       bool
		chainStart string
	}{
		{"storm stronger", overlay(blend(0.4, kv), blend(0.16, errs)), m.CauseEngineErrors, m.CauseKVCacheEviction, true, m.KVCacheUsage},
		{"both as strong", overlay(blend(0.2, kv), blend(0.2, errs)), m.CauseEngineErrors, m.CauseEngineErrors, false, ""},
		{"storm alone", blend(0.6, kv), m.CauseKVCacheEviction, m.CauseKVCacheEviction, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := synth(7, tc.fault)
			if rd := rules.Diagnose(s); rd.RootCause != tc.rulesSay {
				t.Fatalf("rules alone name %s; the test needs %s", rd.RootCause, tc.rulesSay)
			}
			d := e.Diagnose(s)
			if d.RootCause != tc.want {
				t.Errorf("diagnosed %s, want %s (candidates %+v, notes %q)", d.RootCause, tc.want, d.Candidates, d.Notes)
			}
			explained := false
			for _, n := range d.Notes {
				explained = explained || strings.HasPrefix(n, "Two faults act at once")
			}
			if explained != tc.note {
				t.Errorf("notes %q: explained %v, want %v", d.Notes, explained, tc.note)
			}
			if tc.note && (len(d.CausalChain) == 0 || d.CausalChain[0] != tc.chainStart) {
				t.Errorf("causal chain %v, want it to start at %s", d.CausalChain, tc.chainStart)
			}
			checkFinite(t, d)
		})
	}
}

// stormAndErrorsKB holds labelled eviction storms, engine error bursts and
// healthy cases, the faults at every strength.
func stormAndErrorsKB(t testing.TB) *KnowledgeBase {
	t.Helper()
	kv, errs := faults[m.CauseKVCacheEviction], faults[m.CauseEngineErrors]
	kb := NewKnowledgeBase()
	for i := 0; i < 40; i++ {
		s := 0.25 + 0.75*float64(i)/40
		for _, c := range []struct {
			cause string
			fault m.Values
		}{{m.CauseKVCacheEviction, blend(s, kv)}, {m.CauseEngineErrors, blend(s, errs)}, {m.CauseNone, nil}} {
			if err := kb.Add(LabelledCase{ID: fmt.Sprintf("%s-%d", c.cause, i), Snapshot: synth(int64(1000+i), c.fault), Cause: c.cause, Review: Truth}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return kb
}

// withOnset adds the five recent minutes to s: first began three minutes
// before the snapshot (at-5m is still healthy), second in the last one.
func withOnset(s m.Snapshot, seed int64, first, second m.Values) m.Snapshot {
	rng := rand.New(rand.NewSource(seed))
	for k := 5; k >= 1; k-- {
		v := jitter(healthy(), rng, 0.03)
		if k <= 3 {
			v = overlay(v, first)
		}
		if k <= 1 {
			v = overlay(v, second)
		}
		s.History = append(s.History, m.Point{At: s.At.Add(-time.Duration(k) * time.Minute), Values: v})
	}
	return s
}

// TestEngineOnsetOrder: when the recent minutes show which of two faults
// began first, that one is named, whichever is stronger now: errors that
// began first beside a strong storm, and a storm that began first beside
// strong errors. Without the recent minutes the stronger one is named, as
// in TestEngineExplainsAway.
func TestEngineOnsetOrder(t *testing.T) {
	kv, errs := faults[m.CauseKVCacheEviction], faults[m.CauseEngineErrors]
	e := New(Options{Cases: stormAndErrorsKB(t), MatchPrior: 1e9})
	showedFirst := func(d Diagnosis) bool {
		for _, n := range d.Notes {
			if strings.Contains(n, "showed first") {
				return true
			}
		}
		return false
	}
	tests := []struct {
		name          string
		first, second m.Values
		want          string
	}{
		{"errors first, storm stronger", blend(0.3, errs), blend(1, kv), m.CauseEngineErrors},
		{"storm first, errors stronger", blend(0.3, kv), blend(1, errs), m.CauseKVCacheEviction},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := synth(7, overlay(tc.first, tc.second))
			if d := e.Diagnose(now); d.RootCause == tc.want {
				t.Fatalf("without the recent minutes diagnosed %s already; the test needs strength to say otherwise", d.RootCause)
			}
			d := e.Diagnose(withOnset(now, 8, tc.first, tc.second))
			if d.RootCause != tc.want {
				t.Errorf("diagnosed %s, want %s (candidates %+v, notes %q)", d.RootCause, tc.want, d.Candidates, d.Notes)
			}
			if tc.want == m.CauseEngineErrors && !showedFirst(d) {
				t.Errorf("notes %q do not say the errors showed first", d.Notes)
			}
			checkFinite(t, d)
		})
	}
}

// TestFuseMatchKeepsOnsetOrder: votes for the fault that showed second do
// not overturn the one that showed first; votes for any other cause still
// may.
func TestFuseMatchKeepsOnsetOrder(t *testing.T) {
	e := New(Options{})
	order := &PairVerdict{Primary: m.CauseEngineErrors, Secondary: m.CauseKVCacheEviction, Earlier: true}
	d0 := Diagnosis{RootCause: m.CauseEngineErrors, Confidence: 0.6, Candidates: []Candidate{
		{RootCause: m.CauseEngineErrors, Score: 0.8, Source: SourceRule}, {RootCause: m.CauseKVCacheEviction, Score: 0.9, Source: SourceRule}}}
	for _, tc := range []struct {
		voted string
		order *PairVerdict
		want  string
	}{
		{m.CauseKVCacheEviction, order, m.CauseEngineErrors},
		{m.CauseKVCacheEviction, nil, m.CauseKVCacheEviction},
		{m.CauseQueueBacklog, order, m.CauseQueueBacklog},
	} {
		d := d0
		d.Candidates = append([]Candidate(nil), d0.Candidates...)
		mt := Match{Votes: map[string]float64{tc.voted: 1}, Support: 100}
		e.fuseMatch(&d, mt, nil, tc.order)
		if d.RootCause != tc.want {
			t.Errorf("votes for %s with order %v: named %s, want %s (notes %q)", tc.voted, tc.order != nil, d.RootCause, tc.want, d.Notes)
		}
	}
}

// TestEngineNamesMildFault: a throttled GPU a quarter of the way to the
// labelled throttling cases crosses no anomaly bar, so the rules say
// "none"; against labelled healthy cases its clocks, temperature and
// latency together stand out, so the engine names the throttling and says
// why. A healthy snapshot stays "none", and so does the mild fault when
// too few healthy cases are labelled to rank against.
func TestEngineNamesMildFault(t *testing.T) {
	throttle := faults[m.CauseGPUThrottling]
	build := func(n int) *KnowledgeBase {
		kb := NewKnowledgeBase()
		for i := 0; i < n; i++ {
			s := 0.4 + 0.6*float64(i)/float64(n)
			if err := kb.Add(LabelledCase{ID: fmt.Sprintf("t-%d", i), Snapshot: synth(int64(2000+i), blend(s, throttle)), Cause: m.CauseGPUThrottling, Review: Truth}); err != nil {
				t.Fatal(err)
			}
			if err := kb.Add(LabelledCase{ID: fmt.Sprintf("h-%d", i), Snapshot: synth(int64(3000+i), nil), Cause: m.CauseNone, Review: Truth}); err != nil {
				t.Fatal(err)
			}
		}
		return kb
	}
	mild := synth(7, blend(0.25, throttle))
	rd := New(Options{}).Diagnose(mild)
	if rd.RootCause != m.CauseNone {
		t.Fatalf("rules alone name %s; the test needs none", rd.RootCause)
	}
	named := func(d Diagnosis) bool {
		for _, n := range d.Notes {
			if strings.HasPrefix(n, "No metric crossed the anomaly bar") {
				return true
			}
		}
		return false
	}
	// As in TestEngineExplainsAway, the vote gets no say.
	e := New(Options{Cases: build(40), MatchPrior: 1e9})
	if d := e.Diagnose(mild); d.RootCause != m.CauseGPUThrottling || !named(d) || d.Candidates[0].RootCause != m.CauseGPUThrottling {
		t.Errorf("mild throttling diagnosed %s (notes %q, candidates %+v), want gpu_throttling with a note, first", d.RootCause, d.Notes, d.Candidates)
	}
	for seed := int64(1); seed <= 20; seed++ {
		if d := e.Diagnose(synth(seed, nil)); d.RootCause != m.CauseNone {
			t.Errorf("healthy snapshot %d diagnosed %s (notes %q)", seed, d.RootCause, d.Notes)
		}
	}
	small := New(Options{Cases: build(minPairCases - 1), MatchPrior: 1e9})
	if d := small.Diagnose(mild); d.RootCause != m.CauseNone || named(d) {
		t.Errorf("with %d healthy cases diagnosed %s (notes %q), want none", minPairCases-1, d.RootCause, d.Notes)
	}
}

// FuzzExplainPair: any signature (NaN and infinities included) against a
// knowledge base of duplicates, of one cause or of several, gives ranks in
// 0-1 and a verdict naming one of the two causes, never a panic.
func FuzzExplainPair(f *testing.F) {
	f.Add(0.5, -0.3, 1.0, uint8(40), uint8(3), int64(1))
	f.Add(math.NaN(), math.Inf(1), math.Inf(-1), uint8(20), uint8(1), int64(2))
	f.Add(0.0, 0.0, 0.0, uint8(255), uint8(0), int64(3))
	f.Fuzz(func(t *testing.T, x, y, z float64, n, mix uint8, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		causes := []string{"a", "b", m.CauseNone}
		kb := NewKnowledgeBase()
		for i := 0; i < int(n)%90; i++ {
			var s Signature
			if mix&1 != 0 { // not duplicates
				s = sigOf(rng, map[int]float64{i % SigDim: float64(i%7) / 7})
			}
			s[0], s[5], s[31] = float32(x), float32(y), float32(z)
			c := causes[0]
			if mix&2 != 0 {
				c = causes[i%len(causes)]
			}
			if err := kb.AddSignature(fmt.Sprint(i), s, c, Review(i%3), testAt); err != nil {
				t.Fatal(err)
			}
		}
		q := sigOf(rng, map[int]float64{3: x, 20: y})
		for _, p := range [][2]string{{"a", "b"}, {"b", "a"}, {"a", m.CauseNone}, {m.CauseNone, "b"}} {
			if v, ok := kb.ExplainPair(q, p[0], p[1]); ok {
				if (v.Primary != p[0] && v.Primary != p[1]) || v.Primary == v.Secondary || !(v.PrimaryRank >= 0 && v.PrimaryRank <= 1) || !(v.SecondaryRank >= 0 && v.SecondaryRank <= 1) {
					t.Fatalf("ExplainPair(%s, %s) = %+v", p[0], p[1], v)
				}
			}
			if r, ok := kb.Presence(q, p[0], p[1]); ok && !(r >= 0 && r <= 1) {
				t.Fatalf("Presence(%s, %s) = %v", p[0], p[1], r)
			}
		}
		checkFinite(t, New(Options{Cases: kb}).Diagnose(synth(seed, nil)))
	})
}
