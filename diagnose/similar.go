package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// Case signatures. A signature is a fixed-length vector that places a
// snapshot in a space where cases of the same root cause lie close
// together, whatever the model, GPU or load level:
//
//   - one feature per signature metric (sigMetrics): the deviation from
//     the scope's own baseline, as a z-score signed so that positive is
//     the metric's bad direction (two-sided metrics keep their sign), and
//     squashed as sign(z)·log(1+|z|)/log(1+50), clipped to ±1. The z is
//     scale-free (a 40% TPOT rise reads the same on an 8B and a 70B
//     model), the logarithm keeps a z of 200 from drowning every other
//     metric, and a missing metric or a metric without baseline is 0, the
//     same as "no change";
//   - eight physical ratios, each in ±1: TTFT/TPOT (log10 / 3), the queue's
//     share of engine E2E, the gateway's excess over engine E2E relative
//     to gateway E2E, KV usage, the prefix-hit change from baseline, SM
//     activity per running sequence against its baseline (log2 / 3), the
//     error rate (saturating at 10%) and the draft rejection rate. They
//     carry the absolute physics the z-scores cannot (a cache that is
//     full, a queue that dominates the request).
//
// The vector is stored quantised to 7 bits a feature, SigDim bytes a case,
// so a query scans one flat slice: see code and KnowledgeBase.
const SigDim = 32

// sigMetrics are the catalog ids with a deviation feature, in vector order.
// The p99s (noisy tails of their means), tensor activity (follows SM
// activity), GPU memory used (fixed at start-up) and decode time (TPOT
// times output length) add nothing the others lack.
var sigMetrics = []string{
	m.GatewayE2E, m.E2E, m.TTFT, m.TPOT, m.QueueTime, m.PrefillTime,
	m.ThroughputRPS, m.ArrivalRPS, m.PromptTPS, m.GenerationTPS, m.RunningSeqs, m.QueueDepth,
	m.MeanPromptTokens, m.SMUtil, m.DRAMActive, m.KVCacheUsage, m.SMClock, m.MemClock,
	m.Power, m.GPUTemp, m.KVCacheHitRate, m.RejectionRate, m.ErrorRate, m.PreemptionRate,
}

// sigRatioNames name the ratio features, in vector order after sigMetrics.
var sigRatioNames = []string{
	"ttft_over_tpot", "queue_share", "gateway_excess", "kv_usage",
	"prefix_hit_change", "sm_per_seq_change", "error_level", "rejection_level",
}

// zSquash is the z at which a deviation feature saturates.
const zSquash = 50

// Signature is a case signature (see SigDim), features in ±1.
type Signature [SigDim]float32

// FeatureName names feature i of a signature: a catalog id or a ratio.
func FeatureName(i int) string {
	switch {
	case i < 0 || i >= SigDim:
		return ""
	case i < len(sigMetrics):
		return sigMetrics[i]
	}
	return sigRatioNames[i-len(sigMetrics)]
}

// NewSignature computes the signature of s. It never panics: NaN and
// infinite values, missing fields and missing history give neutral (0)
// features.
func NewSignature(s m.Snapshot) Signature {
	return signatureOf(s, Deviations(s))
}

// signatureOf computes the signature from s and its deviations.
func signatureOf(s m.Snapshot, base map[string]Deviation) Signature {
	var sig Signature
	for i, id := range sigMetrics {
		d, ok := base[id]
		if !ok {
			continue
		}
		mt, _ := m.Lookup(id)
		z := d.Z
		if mt.Bad == m.Down {
			z = -z
		}
		sig[i] = float32(squash(z))
	}
	cur := s.Current
	get := func(id string) (float64, bool) {
		x, ok := cur.Get(id)
		if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	}
	r := len(sigMetrics)
	if ttft, ok := get(m.TTFT); ok {
		if tpot, ok := get(m.TPOT); ok && tpot > 0 && ttft > 0 {
			sig[r] = clip1(math.Log10(ttft/tpot) / 3)
		}
	}
	if sh, ok := queueShare(cur); ok {
		sig[r+1] = clip1(sh)
	}
	if gap, ok := gatewayGap(cur); ok {
		if g, _ := get(m.GatewayE2E); g > 0 {
			sig[r+2] = clip1(gap / g)
		}
	}
	if kv, ok := get(m.KVCacheUsage); ok {
		sig[r+3] = clip1(kv)
	}
	if hit, ok := get(m.KVCacheHitRate); ok {
		if d, ok := base[m.KVCacheHitRate]; ok && d.Std > 0 {
			sig[r+4] = clip1(hit - d.Mean)
		}
	}
	if sm, ok := get(m.SMUtil); ok {
		run, ok := get(m.RunningSeqs)
		dsm, ok1 := base[m.SMUtil]
		drun, ok2 := base[m.RunningSeqs]
		if ok && ok1 && ok2 && dsm.Std > 0 && drun.Std > 0 && run > 0 && drun.Mean > 0 && dsm.Mean > 0 && sm > 0 {
			sig[r+5] = clip1(math.Log2((sm/run)/(dsm.Mean/drun.Mean)) / 3)
		}
	}
	if e, ok := get(m.ErrorRate); ok {
		sig[r+6] = clip1(e / 0.1)
	}
	if rej, ok := get(m.RejectionRate); ok {
		sig[r+7] = clip1(rej)
	}
	return sig
}

// squash maps a signed z to ±1 on a log scale.
func squash(z float64) float64 {
	if math.IsNaN(z) {
		return 0
	}
	v := math.Log1p(math.Abs(z)) / math.Log1p(zSquash)
	if v > 1 {
		v = 1
	}
	if z < 0 {
		return -v
	}
	return v
}

// clip1 clips x to ±1 as a float32, NaN to 0.
func clip1(x float64) float32 {
	switch {
	case math.IsNaN(x):
		return 0
	case x > 1:
		return 1
	case x < -1:
		return -1
	}
	return float32(x)
}

// Codes. A stored signature is 7 bits a feature, packed eight to a
// uint64: byte = round(x·63) + 64, in 1..127 (64 is "no change"). The
// high bit of every byte stays clear, so absDiff can take the per-byte
// |a-b| of eight features at once with plain 64-bit arithmetic (SWAR)
// instead of eight loads, subtractions and multiplications: Go does not
// vectorise loops, and the byte-wise form keeps the scan near memory
// speed. Distances are L1 (the sum of |a-b|), which is also less swayed
// than L2 by a single feature that differs a lot.
const (
	sigWords  = SigDim / 8
	codeScale = 63
	codeZero  = 64
)

// code is a packed signature.
type code [sigWords]uint64

// encode packs sig.
func (sig *Signature) encode() code {
	var c code
	for i, x := range sig {
		v := math.Round(float64(x)*codeScale) + codeZero
		if !(v >= 1) { // also NaN
			v = 1
			if math.IsNaN(float64(x)) {
				v = codeZero
			}
		}
		if v > 127 {
			v = 127
		}
		c[i/8] |= uint64(v) << (8 * (i % 8))
	}
	return c
}

// feature unpacks feature i of c as -63..63.
func (c *code) feature(i int) int {
	return int(c[i/8]>>(8*(i%8))&0xff) - codeZero
}

// SWAR constants: the high bit and the low seven bits of every byte, and
// the low byte of every 16-bit lane.
const (
	hi7    = 0x8080808080808080
	lane16 = 0x00ff00ff00ff00ff
	sum16  = 0x0001000100010001
)

// absDiff returns the per-byte |a-b| of two words of 7-bit bytes. Setting
// each byte's high bit before subtracting keeps every byte of the
// difference positive, so no borrow crosses bytes; flipping the high bit
// back leaves a-b as a signed byte, whose absolute value is its ones'
// complement plus one where negative (at most 127 + 1, so that addition
// cannot carry into the next byte either).
func absDiff(a, b uint64) uint64 {
	d := ((a | hi7) - b) ^ hi7
	neg := (d & hi7) >> 7 // 0x01 in the bytes where a < b
	return (d ^ (neg * 0xff)) + neg
}

// lanes folds the eight byte sums of d into four 16-bit lanes.
func lanes(d uint64) uint64 { return d&lane16 + (d>>8)&lane16 }

// laneSum adds the four 16-bit lanes of t.
func laneSum(t uint64) uint32 { return uint32((t * sum16) >> 48) }

// Review says how a case's label was established. Only reviewed labels
// teach the matcher: an unreviewed diagnosis is the engine's own guess,
// and learning from it would only repeat its mistakes.
type Review int

// Review kinds.
const (
	// Confirmed: an engineer marked the engine's diagnosis correct.
	Confirmed Review = iota
	// Corrected: an engineer replaced the engine's cause with another.
	Corrected
	// Truth: a label known by construction (a simulated fault, a
	// reproduced incident).
	Truth
)

// LabelledCase is a snapshot with its true root cause, as the knowledge
// base learns it. The cause may be any id, including one an engineer
// created that no rule covers.
type LabelledCase struct {
	ID       string
	Snapshot m.Snapshot
	Cause    string
	Review   Review
	// At is when the incident happened; zero means the snapshot's time.
	At time.Time
	// Confidence is the uncalibrated confidence of the diagnosis the
	// review confirmed or corrected (Diagnosis.Uncalibrated); 0 means
	// unknown. Reviews with it teach the calibration (calibration.go).
	Confidence float64
	// RulesCause is what the rules alone named for the snapshot
	// (Engine.RulesCause); "" means unknown (a case stored before it was
	// kept). The classifier learns from it where the rules go wrong.
	RulesCause string
}

// Neighbour is one stored case close to a query.
type Neighbour struct {
	ID         string
	RootCause  string
	Similarity float64
	// Shared lists the features (catalog ids or ratio names) on which both
	// cases deviate the same way, strongest first: what made them close.
	Shared []string
	weight float64
}

// caseMeta is what the knowledge base keeps beside each vector.
type caseMeta struct {
	id     string
	at     int64 // unix seconds
	cause  uint16
	rules  uint16  // the rules' own cause: 1 + its index in ruleCauses, 0 unknown
	conf   float32 // uncalibrated confidence of the reviewed diagnosis, 0 unknown
	review Review
}

// KnowledgeBase holds labelled cases for similar-case matching. Codes
// live in one flat uint64 slice (SigDim bytes a case) so a query is a
// single sequential scan; labels and ids sit in a parallel slice
// read only for the k nearest. It is safe for concurrent use: queries take
// a read lock, Add and Replace a write lock.
type KnowledgeBase struct {
	mu     sync.RWMutex
	vecs   []uint64 // sigWords a case
	meta   []caseMeta
	causes []string
	index  map[string]uint16
	// ruleCauses are the distinct causes the rules named for the stored
	// cases (caseMeta.rules), in first-seen order.
	ruleCauses []string
	ruleIndex  map[string]uint16
	// Per cause: the summed features and the case indices in insertion
	// order, for explaining away (explain.go), and the summed squared
	// features, for the learned feature weights (weights.go).
	sums    [][SigDim]int64
	sqs     [][SigDim]int64
	byCause [][]int32
	// gen counts changes, so fits derived from the content (the
	// calibration) know when to refit.
	gen uint64
}

// NewKnowledgeBase returns an empty knowledge base.
func NewKnowledgeBase() *KnowledgeBase {
	return &KnowledgeBase{index: map[string]uint16{}}
}

// maxCauses bounds the distinct cause ids (engineer-created ones included).
const maxCauses = math.MaxUint16

// Add learns one labelled case.
func (kb *KnowledgeBase) Add(c LabelledCase) error {
	return kb.addSigned(c.Signed())
}

// caseTime is the incident time of c.
func caseTime(c LabelledCase) time.Time {
	if !c.At.IsZero() {
		return c.At
	}
	return c.Snapshot.At
}

// AddSignature learns a case from a precomputed signature.
func (kb *KnowledgeBase) AddSignature(id string, sig Signature, cause string, review Review, at time.Time) error {
	return kb.addSigned(SignedCase{ID: id, Signature: sig, Cause: cause, Review: review, At: at})
}

// addSigned learns c.
func (kb *KnowledgeBase) addSigned(c SignedCase) error {
	id, sig, review, at := c.ID, c.Signature, c.Review, c.At
	cause := strings.TrimSpace(c.Cause)
	if cause == "" {
		return fmt.Errorf("diagnose: knowledge base: case %q has no cause", id)
	}
	if review < Confirmed || review > Truth {
		return fmt.Errorf("diagnose: knowledge base: case %q has an unknown review kind %d", id, review)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.index == nil {
		kb.index = map[string]uint16{}
	}
	ci, ok := kb.index[cause]
	if !ok {
		if len(kb.causes) >= maxCauses {
			return fmt.Errorf("diagnose: knowledge base: more than %d distinct causes", maxCauses)
		}
		ci = uint16(len(kb.causes))
		kb.causes = append(kb.causes, cause)
		kb.index[cause] = ci
	}
	enc := sig.encode()
	kb.account(ci, len(kb.meta), &enc, 1)
	kb.vecs = append(kb.vecs, enc[:]...)
	var t int64
	if !at.IsZero() {
		t = at.Unix()
	}
	kb.meta = append(kb.meta, caseMeta{id: id, at: t, cause: ci, review: review, conf: confOf(c.Confidence), rules: kb.ruleCode(c.RulesCause)})
	kb.gen++
	return nil
}

// ruleCode is the caseMeta.rules code of the rules' cause r, adding it to
// ruleCauses when new; "" (unknown) and causes beyond maxCauses are 0.
// The caller holds the write lock.
func (kb *KnowledgeBase) ruleCode(r string) uint16 {
	r = strings.TrimSpace(r)
	if r == "" {
		return 0
	}
	if kb.ruleIndex == nil {
		kb.ruleIndex = map[string]uint16{}
	}
	if i, ok := kb.ruleIndex[r]; ok {
		return i + 1
	}
	if len(kb.ruleCauses) >= maxCauses-1 {
		return 0
	}
	i := uint16(len(kb.ruleCauses))
	kb.ruleCauses = append(kb.ruleCauses, r)
	kb.ruleIndex[r] = i
	return i + 1
}

// Put learns c, replacing the stored case with the same ID if there is one
// (a relabelled incident), else adding it.
func (kb *KnowledgeBase) Put(c LabelledCase) error { return kb.PutSigned(c.Signed()) }

// putFrom learns the one case of fresh under id, replacing the stored case
// with that id if there is one, else adding it.
func (kb *KnowledgeBase) putFrom(fresh *KnowledgeBase, id string) error {
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if kb.index == nil {
		kb.index = map[string]uint16{}
	}
	md := fresh.meta[0]
	cause := fresh.causes[0]
	ci, ok := kb.index[cause]
	if !ok {
		if len(kb.causes) >= maxCauses {
			return fmt.Errorf("diagnose: knowledge base: more than %d distinct causes", maxCauses)
		}
		ci = uint16(len(kb.causes))
		kb.causes = append(kb.causes, cause)
		kb.index[cause] = ci
	}
	md.cause = ci
	md.rules = 0
	if fresh.meta[0].rules > 0 {
		md.rules = kb.ruleCode(fresh.ruleCauses[fresh.meta[0].rules-1])
	}
	kb.gen++
	var nc code
	copy(nc[:], fresh.vecs)
	for i := range kb.meta {
		if kb.meta[i].id == id {
			var old code
			copy(old[:], kb.vecs[i*sigWords:(i+1)*sigWords])
			kb.account(kb.meta[i].cause, i, &old, -1)
			kb.account(ci, i, &nc, 1)
			kb.meta[i] = md
			copy(kb.vecs[i*sigWords:(i+1)*sigWords], fresh.vecs)
			return nil
		}
	}
	kb.account(ci, len(kb.meta), &nc, 1)
	kb.meta = append(kb.meta, md)
	kb.vecs = append(kb.vecs, fresh.vecs...)
	return nil
}

// Replace swaps the whole content for cases (the console reloads from the
// store this way); on error the old content stays.
func (kb *KnowledgeBase) Replace(cases []LabelledCase) error {
	signed := make([]SignedCase, len(cases))
	for i, c := range cases {
		signed[i] = c.Signed()
	}
	return kb.ReplaceSigned(signed)
}

// swap takes over the content of fresh.
func (kb *KnowledgeBase) swap(fresh *KnowledgeBase) {
	kb.mu.Lock()
	kb.vecs, kb.meta, kb.causes, kb.index = fresh.vecs, fresh.meta, fresh.causes, fresh.index
	kb.ruleCauses, kb.ruleIndex = fresh.ruleCauses, fresh.ruleIndex
	kb.sums, kb.sqs, kb.byCause = fresh.sums, fresh.sqs, fresh.byCause
	kb.gen += fresh.gen + 1
	kb.mu.Unlock()
}

// Len is the number of stored cases.
func (kb *KnowledgeBase) Len() int {
	if kb == nil {
		return 0
	}
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	return len(kb.meta)
}

// BytesPerCase is the memory one stored case takes, not counting its id's
// bytes: the code (SigDim bytes, the only part a query scans) plus its
// metadata (id string header 16, time 8, cause and rules' cause 2 each,
// confidence 4, review 8: 40) and its entry in its cause's index list (4).
const BytesPerCase = SigDim + 44

// Similarity scale: the mean absolute feature difference (features in
// ±1) at which similarity is one half. Two snapshots of one fault at
// different severities differ by about 0.1 per feature.
const simHalf = 0.08

// similarityOf maps an L1 code distance to a similarity in 0-1.
func similarityOf(d uint32) float64 {
	mad := float64(d) / (SigDim * codeScale)
	return 1 / (1 + (mad/simHalf)*(mad/simHalf))
}

// Nearest returns the k stored cases closest to sig, most similar first.
func (kb *KnowledgeBase) Nearest(sig Signature, k int) []Neighbour {
	return kb.Match(sig, k, time.Time{}).Neighbours
}

// hit is one scanned case: its index and distance.
type hit struct {
	idx int
	d   uint32
}

// scanNearest returns the k codes of vecs nearest q, nearest first, keeping
// the k best in a max-heap. Each case costs four words of straight-line
// SWAR arithmetic and one well-predicted comparison with the k-th best:
// abandoning a case after its first half was measured slower, because
// that branch is unpredictable.
func scanNearest(q *code, vecs []uint64, k int) []hit {
	n := len(vecs) / sigWords
	if k > n {
		k = n
	}
	if k <= 0 {
		return nil
	}
	q0, q1, q2, q3 := q[0], q[1], q[2], q[3]
	heap := make([]hit, 0, k)
	bound := uint32(math.MaxUint32)
	for i := 0; i < n; i++ {
		v := vecs[i*sigWords : i*sigWords+sigWords : i*sigWords+sigWords]
		// Two byte-wise |a-b| (at most 126 each) add without carrying
		// out of a byte; the lanes fold then widens them.
		s := laneSum(lanes(absDiff(q0, v[0])+absDiff(q1, v[1])) + lanes(absDiff(q2, v[2])+absDiff(q3, v[3])))
		if s < bound {
			heap, bound = keepNearest(heap, k, hit{i, s})
		}
	}
	return sortHits(heap)
}

// keepNearest adds x to heap, a max-heap of at most k hits by distance,
// and returns it with the distance a later hit must beat: the farthest
// kept once k are kept.
func keepNearest(heap []hit, k int, x hit) ([]hit, uint32) {
	if len(heap) < k {
		heap = append(heap, x)
		siftUp(heap, len(heap)-1)
		if len(heap) < k {
			return heap, math.MaxUint32
		}
		return heap, heap[0].d
	}
	heap[0] = x
	siftDown(heap, 0)
	return heap, heap[0].d
}

// sortHits orders hits nearest first, ties by index.
func sortHits(heap []hit) []hit {
	sort.Slice(heap, func(a, b int) bool {
		if heap[a].d != heap[b].d {
			return heap[a].d < heap[b].d
		}
		return heap[a].idx < heap[b].idx
	})
	return heap
}

// siftUp and siftDown maintain a max-heap on the distance.
func siftUp(h []hit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].d >= h[i].d {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []hit, i int) {
	for {
		l, big := 2*i+1, i
		if l < len(h) && h[l].d > h[big].d {
			big = l
		}
		if r := l + 1; r < len(h) && h[r].d > h[big].d {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// sharedMin is the smallest feature (of 63) both cases need on the same
// side to count as a shared deviation: about z = 3 on the squashed scale.
const sharedMin = 20

// maxShared bounds the shared features listed per neighbour.
const maxShared = 5

// shared lists the features on which q and v both deviate the same way,
// strongest common deviation first.
func shared(q, v *code) []string {
	type f struct {
		i int
		s int
	}
	var fs []f
	for i := 0; i < SigDim; i++ {
		a, b := q.feature(i), v.feature(i)
		if a*b <= 0 {
			continue
		}
		s := min(abs(a), abs(b))
		if s >= sharedMin {
			fs = append(fs, f{i, s})
		}
	}
	sort.SliceStable(fs, func(a, b int) bool { return fs[a].s > fs[b].s })
	out := make([]string, 0, min(len(fs), maxShared))
	for _, x := range fs {
		if len(out) == maxShared {
			break
		}
		if name := FeatureName(x.i); name != "" {
			out = append(out, name)
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Matching weights. Each neighbour votes for its cause with weight
// similarity² x review x recency:
//
//   - review: a correction counts 1.5, a confirmation or a known truth 1. A
//     correction is the strongest lesson the archive holds: an engineer
//     looked at a case the rules got wrong and named the cause; a
//     confirmation mostly repeats what the rules already say.
//   - recency: a half-life of 90 days on the age of the case at the time
//     of the query, never below 0.25. Deployments change (GPUs, engine
//     versions, traffic), so newer lessons describe the current system
//     better, but incidents recur after months, so old cases keep a
//     quarter of their say. A case newer than the query (a replay) counts
//     in full.
const (
	correctedWeight = 1.5
	recencyHalfLife = 90 * 24 * time.Hour
	recencyFloor    = 0.25
)

// voteWeight is the weight of neighbour nb of a query at time at.
func voteWeight(sim float64, review Review, caseAt int64, at time.Time) float64 {
	w := sim * sim
	if review == Corrected {
		w *= correctedWeight
	}
	if caseAt != 0 && !at.IsZero() {
		age := at.Sub(time.Unix(caseAt, 0))
		if age > 0 {
			w *= math.Max(recencyFloor, math.Exp2(-float64(age)/float64(recencyHalfLife)))
		}
	}
	return w
}

// Match is the matcher's verdict on one query.
type Match struct {
	Neighbours []Neighbour
	// Votes is each cause's share of the weighted vote, in 0-1.
	Votes map[string]float64
	// Support is the summed vote weight: the effective number of close,
	// recent, reviewed cases behind the votes.
	Support float64
}

// Match finds the k nearest cases to sig and tallies their votes at time
// at (zero: no recency weighting).
func (kb *KnowledgeBase) Match(sig Signature, k int, at time.Time) Match {
	res := Match{Votes: map[string]float64{}}
	if kb == nil || k <= 0 {
		return res
	}
	q := sig.encode()
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	var top []hit
	w, weighted := kb.featureWeights()
	if weighted {
		top = scanNearestWeighted(&q, kb.vecs, k, &w)
	} else {
		top = scanNearest(&q, kb.vecs, k)
	}
	total := 0.0
	for _, h := range top {
		md := kb.meta[h.idx]
		d := h.d
		if weighted {
			d /= weightUnit
		}
		sim := similarityOf(d)
		nb := Neighbour{ID: md.id, RootCause: kb.causes[md.cause], Similarity: sim, weight: voteWeight(sim, md.review, md.at, at)}
		var v code
		copy(v[:], kb.vecs[h.idx*sigWords:(h.idx+1)*sigWords])
		nb.Shared = shared(&q, &v)
		res.Neighbours = append(res.Neighbours, nb)
		res.Votes[nb.RootCause] += nb.weight
		total += nb.weight
	}
	res.Support = total
	if total > 0 {
		for c := range res.Votes {
			res.Votes[c] /= total
		}
	}
	return res
}

// confOf stores a confidence in 0-1 as a float32, anything else as
// unknown (0).
func confOf(c float64) float32 {
	if !(c > 0 && c <= 1) {
		return 0
	}
	return float32(c)
}
