package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"

	m "github.com/casebook/casebook/metrics"
)

// Explaining away between two co-occurring faults. When two faults act at
// once, the rules and the nearest neighbours both side with the louder one:
// an eviction storm or a throttled GPU moves a dozen metrics, a failing
// draft model two, so the snapshot sits closest to single cases of the
// loud cause whichever fault is the stronger. Loudness is a property of
// the cause; strength is a property of this fault. The knowledge base can
// tell them apart, because it holds labelled cases of each cause at every
// strength:
//
//   - each cause has a prototype, the mean signature of its labelled cases
//     less the mean of the "none" cases (the normal state; the mean of all
//     cases while fewer than minPairCases are "none");
//   - for a pair A, B, A's own signs are the features A's prototype moves
//     more than B's does, weighted by the difference and signed by A's
//     direction; B's alone move them less. A's expression in a snapshot is
//     the weighted sum of its features over those signs;
//   - B is present beside A when its expression exceeds what presenceQ of
//     A's labelled cases show (A alone does not produce it), and the
//     other way round. Only then is the snapshot read as two faults;
//   - the primary fault is the one that showed first: the snapshot's
//     recent minutes (history within RecentWindow of its time) are read
//     one by one with the same presence tests, and a fault's onset is the
//     first of them from which on it shows in every one. A fault persists
//     and a one-minute blip does not, so a single noisy minute cannot
//     claim the lead. The label of a two-fault incident is the fault that
//     began it, and what began first is the cause engineers look for;
//   - when both showed at the same minute, or the snapshot has no recent
//     minutes, the primary is the one expressed more strongly against its
//     own labelled cases: the rank of A's expression among A's cases,
//     against the rank of B's among B's.
//
// Strength is tested against the rules' runner-up only; onset order, the
// sharper test, against every rule candidate. An answer that onset order
// decided is not overturned by similar cases voting for the fault that
// showed second: single cases of the louder fault resemble the snapshot
// most, which is the very confusion the order resolves.
//
// The same test separates a mild fault from the healthy state. When no
// metric crossed the anomaly bar and the rules say "none", a cause the
// rules considered is named when its own signs against the "none"
// prototype exceed what presenceQ of the labelled healthy cases show: a
// one-sided test against the healthy population, on the one direction
// that matters for that cause, where the 3-sigma bar looks at each metric
// alone.
//
// Everything is learned from the labels: prototypes, signs and ranks; the
// only constants are the minimum sample and the presence level. Ranks use
// the most recent pairRefCases cases of each cause, so a query costs a
// few thousand feature reads whatever the size of the knowledge base.
const (
	minPairCases = 20
	presenceQ    = 0.95
	pairRefCases = 512
)

// PairVerdict is what explaining away found between two candidate causes.
type PairVerdict struct {
	// Primary and Secondary are the two causes, stronger first.
	Primary, Secondary string
	// PrimaryRank and SecondaryRank are each cause's expression as a rank
	// (0-1) among the labelled cases of that cause.
	PrimaryRank, SecondaryRank float64
	// Earlier is true when the primary fault showed in an earlier recent
	// point than the secondary, which then decided the order.
	Earlier bool
}

// pairSigns are the weights of a's own signs against b: positive where a
// raises a feature more than b does, negative where a lowers it more.
func pairSigns(pa, pb *[SigDim]float64) [SigDim]float64 {
	var w [SigDim]float64
	for f := range w {
		d := math.Abs(pa[f]) - math.Abs(pb[f])
		if d <= 0 {
			continue
		}
		if pa[f] < 0 {
			d = -d
		}
		w[f] = d
	}
	return w
}

// expression is the weighted sum of c's features over signs w.
func expression(c *code, w *[SigDim]float64) float64 {
	s := 0.0
	for f, x := range w {
		if x != 0 {
			s += x * float64(c.feature(f))
		}
	}
	return s
}

// ExplainPair tells whether the snapshot signature sig shows both causes a
// and b, each beyond what labelled cases of the other alone show, and if
// so which one is the stronger. ok is false when the knowledge base holds
// fewer than minPairCases cases of either cause, or either fault is not
// clearly present.
func (kb *KnowledgeBase) ExplainPair(sig Signature, a, b string) (v PairVerdict, ok bool) {
	return kb.explainPair(sig, nil, a, b)
}

// explainPair is ExplainPair with the signatures of the recent points,
// oldest first: when one fault showed in an earlier point than the other,
// it is the primary, whatever the strengths.
func (kb *KnowledgeBase) explainPair(sig Signature, recent []Signature, a, b string) (v PairVerdict, ok bool) {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if kb == nil || a == b {
		return v, false
	}
	q := sig.encode()
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	ia, ib, pa, pb, ok := kb.pairPrototypes(a, b)
	if !ok {
		return v, false
	}
	wa, wb := pairSigns(&pa, &pb), pairSigns(&pb, &pa)
	// Is a beyond what b alone shows, and b beyond what a alone shows?
	aShows := func(c *code) bool { return kb.rankAmong(ib, &wa, expression(c, &wa)) >= presenceQ }
	bShows := func(c *code) bool { return kb.rankAmong(ia, &wb, expression(c, &wb)) >= presenceQ }
	if !aShows(&q) || !bShows(&q) {
		return v, false
	}
	ra, rb := kb.rankAmong(ia, &wa, expression(&q, &wa)), kb.rankAmong(ib, &wb, expression(&q, &wb))
	// Each fault's onset is the first recent point from which on it
	// shows in every point: a fault persists, a one-minute blip does not.
	aFirst, bFirst := len(recent), len(recent)
	aOn, bOn := true, true
	for i := len(recent) - 1; i >= 0 && (aOn || bOn); i-- {
		c := recent[i].encode()
		if aOn = aOn && aShows(&c); aOn {
			aFirst = i
		}
		if bOn = bOn && bShows(&c); bOn {
			bFirst = i
		}
	}
	if bFirst < aFirst || bFirst == aFirst && rb > ra {
		return PairVerdict{Primary: b, Secondary: a, PrimaryRank: rb, SecondaryRank: ra, Earlier: bFirst < aFirst}, true
	}
	return PairVerdict{Primary: a, Secondary: b, PrimaryRank: ra, SecondaryRank: rb, Earlier: aFirst < bFirst}, true
}

// Presence is how far beyond the labelled cases of cause base the
// signature sig shows cause x: the rank (0-1) of the expression of x's own
// signs against base among base's cases. ok is false when the knowledge
// base holds fewer than minPairCases cases of either cause.
func (kb *KnowledgeBase) Presence(sig Signature, base, x string) (rank float64, ok bool) {
	base, x = strings.TrimSpace(base), strings.TrimSpace(x)
	if kb == nil || base == x {
		return 0, false
	}
	q := sig.encode()
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	ib, _, pb, px, ok := kb.pairPrototypes(base, x)
	if !ok {
		return 0, false
	}
	wx := pairSigns(&px, &pb)
	return kb.rankAmong(ib, &wx, expression(&q, &wx)), true
}

// pairPrototypes returns the indices and prototypes of causes a and b, or
// ok false when the knowledge base holds fewer than minPairCases cases of
// either. The caller holds the lock.
func (kb *KnowledgeBase) pairPrototypes(a, b string) (ia, ib uint16, pa, pb [SigDim]float64, ok bool) {
	ia, okA := kb.index[a]
	ib, okB := kb.index[b]
	if !okA || !okB || len(kb.byCause[ia]) < minPairCases || len(kb.byCause[ib]) < minPairCases {
		return 0, 0, pa, pb, false
	}
	ref := kb.referenceMean()
	return ia, ib, kb.prototype(ia, &ref), kb.prototype(ib, &ref), true
}

// rankAmong is the mid-rank (0-1) of x among the expressions over w of the
// most recent pairRefCases cases of cause ci. The caller holds the lock.
func (kb *KnowledgeBase) rankAmong(ci uint16, w *[SigDim]float64, x float64) float64 {
	idx := kb.byCause[ci]
	if len(idx) > pairRefCases {
		idx = idx[len(idx)-pairRefCases:]
	}
	if len(idx) == 0 {
		return 0
	}
	below := 0.0
	for _, i := range idx {
		var c code
		copy(c[:], kb.vecs[int(i)*sigWords:(int(i)+1)*sigWords])
		switch e := expression(&c, w); {
		case e < x:
			below++
		case e == x:
			below += 0.5
		}
	}
	return below / float64(len(idx))
}

// referenceMean is the mean feature vector of the normal state: the "none"
// cases when there are enough of them, else every case. The caller holds
// the lock.
func (kb *KnowledgeBase) referenceMean() [SigDim]float64 {
	var out [SigDim]float64
	if ci, ok := kb.index[m.CauseNone]; ok && len(kb.byCause[ci]) >= minPairCases {
		n := float64(len(kb.byCause[ci]))
		for f := range out {
			out[f] = float64(kb.sums[ci][f]) / n
		}
		return out
	}
	n := float64(len(kb.meta))
	if n == 0 {
		return out
	}
	for ci := range kb.sums {
		for f := range out {
			out[f] += float64(kb.sums[ci][f])
		}
	}
	for f := range out {
		out[f] /= n
	}
	return out
}

// prototype is the mean features of cause ci less ref. The caller holds
// the lock.
func (kb *KnowledgeBase) prototype(ci uint16, ref *[SigDim]float64) [SigDim]float64 {
	var out [SigDim]float64
	n := float64(len(kb.byCause[ci]))
	if n == 0 {
		return out
	}
	for f := range out {
		out[f] = float64(kb.sums[ci][f])/n - ref[f]
	}
	return out
}

// account adds (sign 1) or removes (sign -1) case i with code c from the
// per-cause sums and index lists of cause ci. The caller holds the lock.
func (kb *KnowledgeBase) account(ci uint16, i int, c *code, sign int64) {
	for int(ci) >= len(kb.sums) {
		kb.sums = append(kb.sums, [SigDim]int64{})
		kb.sqs = append(kb.sqs, [SigDim]int64{})
		kb.byCause = append(kb.byCause, nil)
	}
	for f := 0; f < SigDim; f++ {
		x := int64(c.feature(f))
		kb.sums[ci][f] += sign * x
		kb.sqs[ci][f] += sign * x * x
	}
	idx := kb.byCause[ci]
	at := sort.Search(len(idx), func(j int) bool { return idx[j] >= int32(i) })
	switch {
	case sign > 0 && (at == len(idx) || idx[at] != int32(i)):
		idx = append(idx, 0)
		copy(idx[at+1:], idx[at:])
		idx[at] = int32(i)
	case sign < 0 && at < len(idx) && idx[at] == int32(i):
		idx = append(idx[:at], idx[at+1:]...)
	}
	kb.byCause[ci] = idx
}

// explainAway checks the rules' answer in d (for snapshot s, its baseline
// history, and the recent points) against the other rule candidates
// (explainPair) and names another cause when both faults are
// present and it is the primary: against the runner-up, by onset order or
// else by strength; against the others, only when it showed first, a
// sharper test than strength that warrants looking past the runner-up.
// It reports whether it changed the answer, and the verdict that onset
// order decided, if any, which similar cases may not overturn.
func (e *Engine) explainAway(d *Diagnosis, sig Signature, s m.Snapshot, recentPoints []m.Point) (changed bool, order *PairVerdict) {
	a := d.RootCause
	if a == m.CauseNone || a == m.CauseUnknown {
		return false, nil
	}
	// Only a diagnosis with a cause to weigh pays for reading the recent
	// points.
	recent := recentSignatures(s, recentPoints)
	nth := 0
	for i, c := range d.Candidates {
		if c.Source != SourceRule || c.RootCause == a {
			continue
		}
		nth++
		v, ok := e.cases.explainPair(sig, recent, a, c.RootCause)
		if !ok {
			continue
		}
		if v.Primary == c.RootCause && (nth == 1 || v.Earlier) {
			b := c.RootCause
			if v.Earlier {
				d.Notes = append(d.Notes, fmt.Sprintf(noteShowedFirst, causeTitle(a), causeTitle(b), causeTitle(b), causeTitle(b), causeTitle(a)))
				order = &v
			} else {
				d.Notes = append(d.Notes, fmt.Sprintf(noteExplained, causeTitle(a), causeTitle(b), causeTitle(b), 100*v.PrimaryRank, causeTitle(a), 100*v.SecondaryRank, causeTitle(b), causeTitle(a)))
			}
			promote(d, i)
			return true, order
		}
		if v.Earlier && order == nil {
			order = &v
		}
	}
	return false, order
}

// promote makes candidate i the diagnosis' root cause and moves it to the
// front of the candidates, keeping the others in order.
func promote(d *Diagnosis, i int) {
	c := d.Candidates[i]
	copy(d.Candidates[1:i+1], d.Candidates[:i])
	d.Candidates[0] = c
	d.RootCause = c.RootCause
}

// nameMildFault replaces the rules' "none" in d with a cause the rules
// considered whose own signs exceed those of presenceQ of the labelled
// healthy cases (Presence against "none"), the most present one first.
// It reports whether it changed the answer.
func (e *Engine) nameMildFault(d *Diagnosis, sig Signature) bool {
	if d.RootCause != m.CauseNone {
		return false
	}
	bi, best := -1, 0.0
	for i, c := range d.Candidates {
		if c.Source != SourceRule || c.RootCause == m.CauseNone {
			continue
		}
		if p, ok := e.cases.Presence(sig, m.CauseNone, c.RootCause); ok && p >= presenceQ && p > best {
			bi, best = i, p
		}
	}
	if bi < 0 {
		return false
	}
	d.Notes = append(d.Notes, fmt.Sprintf(noteMildFault, causeTitle(d.Candidates[bi].RootCause), 100*best))
	promote(d, bi)
	return true
}

// recentSignatures are the signatures of the recent points, each read as
// the current values against the baseline history of s.
func recentSignatures(s m.Snapshot, recent []m.Point) []Signature {
	if len(recent) == 0 {
		return nil
	}
	b := newHistoryBaseline(s.History)
	out := make([]Signature, len(recent))
	for i, p := range recent {
		dev, _ := b.deviations(p.Values)
		out[i] = signatureOf(m.Snapshot{At: p.At, Scope: s.Scope, Current: p.Values, History: s.History}, dev)
	}
	return out
}
