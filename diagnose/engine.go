package diagnose

import (
	"fmt"
	"math"
	"sort"

	m "github.com/casebook/casebook/metrics"
)

// Options tunes the engine. The zero value means every default.
type Options struct {
	// Rules replaces the built-in rule table (Rules()) when non-nil.
	Rules []Rule
	// MinScore is the ranked score a cause needs to be named; below it an
	// anomalous snapshot is "unknown". Default 0.3.
	MinScore float64
	// MaxCandidates bounds the candidate list. Default 5.
	MaxCandidates int
	// Cases is the knowledge base of labelled cases for similar-case
	// matching; nil gives the engine an empty one of its own (rules only
	// until Learn fills it). The engine reads it at every diagnosis, so
	// cases added to it later count at once.
	Cases *KnowledgeBase
	// Neighbours is how many nearest cases vote. Default 10.
	Neighbours int
	// MatchPrior is the vote weight at which matching and rules count
	// equally (see fuseMatch). Default 1.5.
	MatchPrior float64
}

// Engine diagnoses snapshots. Its only mutable state is its knowledge
// base, which locks itself; it is safe for concurrent use.
type Engine struct {
	rules         []Rule
	minScore      float64
	maxCandidates int
	cases         *KnowledgeBase
	neighbours    int
	matchPrior    float64
	calib         calibrator
	model         classifierCache
}

// New returns an engine with opts, defaults filled in.
func New(opts Options) *Engine {
	e := &Engine{rules: opts.Rules, minScore: opts.MinScore, maxCandidates: opts.MaxCandidates,
		cases: opts.Cases, neighbours: opts.Neighbours, matchPrior: opts.MatchPrior}
	if e.cases == nil {
		e.cases = NewKnowledgeBase()
	}
	if e.neighbours <= 0 {
		e.neighbours = 10
	}
	if e.matchPrior <= 0 || math.IsNaN(e.matchPrior) {
		e.matchPrior = 1.5
	}
	if e.rules == nil {
		e.rules = Rules()
	}
	if e.minScore <= 0 {
		e.minScore = 0.3
	}
	if e.maxCandidates <= 0 {
		e.maxCandidates = 5
	}
	return e
}

// EngineVersion identifies the rule set and build that produced a diagnosis.
func EngineVersion() string { return "rules-4/" + BuildVersion }

// Cases is the engine's knowledge base.
func (e *Engine) Cases() *KnowledgeBase { return e.cases }

// Learn replaces the cases the engine matches against (the console calls
// it with every reviewed incident at start and after each label). On error
// the previous cases stay.
func (e *Engine) Learn(cases []LabelledCase) error { return e.cases.Replace(cases) }

// LearnCase learns one case, replacing an earlier case with its ID (the
// console calls it when an incident is labelled or relabelled).
func (e *Engine) LearnCase(c LabelledCase) error { return e.cases.Put(c) }

// tailOf maps each p99 metric to the mean it is the tail of.
var tailOf = map[string]string{m.E2EP99: m.E2E, m.TTFTP99: m.TTFT, m.TPOTP99: m.TPOT}

// Snapshot-level decision constants. A single metric at |z| just over 3 is
// expected now and then among thirty metrics, so a snapshot counts as
// anomalous only with two anomalies or one beyond strongZ; a rule at or
// above absoluteScore (absolute physics such as a 10% error rate) makes it
// anomalous regardless.
const (
	strongZ       = 4.5
	absoluteScore = 0.6
)

// Diagnose names the root cause of s. It never panics on odd input: missing
// fields, short history and extreme values give a weaker diagnosis, not an
// error.
func (e *Engine) Diagnose(s m.Snapshot) Diagnosis { return e.diagnose(s, true) }

// RulesCause is the cause the rules alone name for s, before the
// knowledge base has a say: what a labelled case stores as its
// LabelledCase.RulesCause.
func (e *Engine) RulesCause(s m.Snapshot) string { return e.diagnose(s, false).RootCause }

// diagnose is Diagnose, with the knowledge base (matching and the learned
// calibration) only when withCases.
func (e *Engine) diagnose(s m.Snapshot, withCases bool) Diagnosis {
	s, recent := SplitRecent(s)
	base, counts := deviationsAndCounts(s)
	in := Input{Snapshot: s, Baseline: base, Recent: recent}
	foot := footing(s, counts)
	baseVals := baselineValues(base, counts)

	var anomalous []string
	signals, maxBad := 0, 0.0
	for _, mt := range m.Catalog {
		d, ok := base[mt.ID]
		if !ok {
			continue
		}
		if d.Anomalous {
			anomalous = append(anomalous, mt.ID)
		}
		if mean, isTail := tailOf[mt.ID]; isTail {
			// A p99 is estimated from a minute's slowest few requests; on
			// its own it is too noisy to call an incident.
			if md, ok := base[mean]; !ok || badZ(mean, md) < 2 {
				continue
			}
		}
		if d.Anomalous {
			signals++
		}
		if bz := badZ(mt.ID, d); bz > maxBad {
			maxBad = bz
		}
	}
	isAnom := func(id string) bool { return base[id].Anomalous }

	findings := make([]Finding, 0, len(e.rules))
	missingSet := map[string]bool{}
	for _, r := range e.rules {
		f := blendAbsolute(safeEvaluate(r, in), s, base, baseVals)
		findings = append(findings, f)
		for _, id := range f.Missing {
			missingSet[id] = true
		}
	}
	rankedList := rankCauses(findings, in, anomalous)

	top, second := 0.0, 0.0
	if len(rankedList) > 0 {
		top = rankedList[0].score
	}
	if len(rankedList) > 1 {
		second = rankedList[1].score
	}
	// One metric far out in its bad direction that a rule explains is a
	// fault on its way, even before users feel it.
	significant := signals >= 2 || maxBad >= strongZ || top >= absoluteScore || (signals >= 1 && top >= e.minScore)
	if significant && top < e.minScore && volumeChange(base) && !impactBeyondLoad(s.Current, base) {
		// No cause fits and users see no more than the load explains:
		// a change of traffic volume that the service absorbs
		// (throughput following arrivals, the batch, cache and step time
		// following both) is not an incident.
		significant = false
	}

	d := Diagnosis{
		Candidates:    []Candidate{},
		Evidence:      []Evidence{},
		CausalChain:   []string{},
		SimilarCases:  []SimilarCase{},
		EngineVersion: EngineVersion(),
	}
	switch {
	case !significant:
		d.RootCause = m.CauseNone
		d.Confidence = round3(noneConfidence(top, maxBad) * footingFactor(foot))
		d.Candidates = append(d.Candidates, Candidate{RootCause: m.CauseNone, Score: round3(1 - top), Source: SourceBaseline})
	case top >= e.minScore:
		w := rankedList[0]
		d.RootCause = w.finding.RootCause
		d.Confidence = round3(calibrate(top, second) * footingFactor(foot))
		if w.finding.profilingMissing {
			d.Confidence = round3(d.Confidence * noProfilingFactor)
			d.Notes = append(d.Notes, noteNoProfiling)
		}
		d.Evidence = append(d.Evidence, w.finding.Evidence...)
		d.CausalChain = chain(d.RootCause, base, isAnom)
	default:
		d.RootCause = m.CauseUnknown
		d.Confidence = unknownConfidence(top)
		d.Candidates = append(d.Candidates, Candidate{RootCause: m.CauseUnknown, Score: round3(1 - top), Source: SourceBaseline})
		for _, id := range anomalous {
			d.CausalChain = append(d.CausalChain, id)
		}
	}
	for _, r := range rankedList {
		if len(d.Candidates) >= e.maxCandidates {
			break
		}
		d.Candidates = append(d.Candidates, Candidate{RootCause: r.finding.RootCause, Score: round3(r.score), Source: SourceRule})
	}
	d.Evidence = appendAnomalies(d.Evidence, s, base, anomalous)
	switch {
	case foot == 0:
		d.Notes = append(d.Notes, noteNoBaseline)
	case foot < 0.9:
		d.Notes = append(d.Notes, fmt.Sprintf(noteShortBaseline, 100*foot))
	}
	if withCases && e.cases.Len() > 0 {
		sig := signatureOf(s, base)
		mt := e.cases.Match(sig, e.neighbours, s.At)
		rulesCause := d.RootCause
		changed, order := e.explainAway(&d, sig, s, recent)
		if !changed {
			e.nameMildFault(&d, sig)
		}
		probs := e.model.forKB(e.cases).probs(sig, rulesCause)
		if _, ok := e.fuseMatch(&d, mt, probs, order); ok || d.RootCause != rulesCause {
			d.Evidence = d.Evidence[:0]
			d.Evidence = appendAnomalies(d.Evidence, s, base, anomalous)
			d.CausalChain = chain(d.RootCause, base, isAnom)
		}
	}
	d.Uncalibrated = d.Confidence
	if withCases {
		if fit := e.calib.forKB(e.cases); fit != nil {
			d.Confidence = round3(fit.apply(d.Confidence))
		}
	}
	d.Title = causeTitle(d.RootCause)
	d.Severity = severity(in, d.RootCause, foot)
	d.Actions = actionsFor(d.RootCause)
	for _, mt := range m.Catalog {
		if missingSet[mt.ID] {
			d.Missing = append(d.Missing, mt.ID)
			if why := s.Absent[mt.ID]; why != "" {
				// The source said why it cannot provide the metric (its
				// engine has no equivalent): the rules that need it stood
				// down for that reason.
				d.Notes = append(d.Notes, fmt.Sprintf(noteAbsent, mt.ID, why))
			}
		}
	}
	return d
}

// volumeChange reports whether the traffic itself moved: arrivals or
// throughput beyond AnomalyZ either way.
func volumeChange(base map[string]Deviation) bool {
	for _, id := range []string{m.ArrivalRPS, m.ThroughputRPS} {
		if d, ok := base[id]; ok && math.Abs(d.Z) > AnomalyZ {
			return true
		}
	}
	return false
}

// userImpact reports whether requests are slower, failing or served less
// than they arrive: a latency (mean or tail) or the error rate beyond
// AnomalyZ in its bad direction, or throughput falling further than
// arrivals.
func userImpact(base map[string]Deviation) bool {
	for _, id := range []string{m.GatewayE2E, m.E2E, m.E2EP99, m.TTFT, m.TTFTP99, m.TPOT, m.TPOTP99, m.QueueTime, m.ErrorRate} {
		if d, ok := base[id]; ok && badZ(id, d) > AnomalyZ {
			return true
		}
	}
	thr, ok := base[m.ThroughputRPS]
	if !ok || thr.Z > -AnomalyZ {
		return false
	}
	arr, ok := base[m.ArrivalRPS]
	return !ok || arr.Z > thr.Z/2
}

// impactBeyondLoad reports whether users see more than a change of load
// explains. Below capacity, more requests make bigger batches and slower
// steps, so latency may grow with the load but not clearly beyond it
// (loadLatencyMargin, where the backlog rule starts to read admitted
// overload), and no queue builds; with less load every latency may only
// fall. Errors beyond AnomalyZ, or throughput falling by more than the
// arrivals (by a fifth), are impact whatever the load.
func impactBeyondLoad(cur m.Values, base map[string]Deviation) bool {
	if !userImpact(base) {
		return false
	}
	rel := func(id string) (float64, bool) {
		d, ok := base[id]
		x, has := cur.Get(id)
		if !ok || !has || d.Mean <= 0 {
			return 0, false
		}
		return x / d.Mean, true
	}
	load, ok := rel(m.ArrivalRPS)
	if !ok {
		if load, ok = rel(m.ThroughputRPS); !ok {
			return true
		}
	}
	if d, ok := base[m.ErrorRate]; ok && badZ(m.ErrorRate, d) > AnomalyZ {
		return true
	}
	if thr, ok := rel(m.ThroughputRPS); ok && thr < 0.8*load {
		return true
	}
	if sh, ok := queueShare(cur); ok && sh > 0.1 {
		return true
	}
	for _, id := range []string{m.GatewayE2E, m.E2E, m.TTFT, m.TPOT, m.QueueTime} {
		if d, ok := base[id]; ok && badZ(id, d) > AnomalyZ {
			if r, ok := rel(id); ok && r > loadLatencyMargin*math.Max(load, 1) {
				return true
			}
		}
	}
	return false
}

// fuseMatch combines the rules' answer in d with the votes of similar
// cases, and reports the new cause when matching overturned the rules.
//
// The rules' answer is read as a distribution: its cause at the rules'
// confidence, the rest spread over the other rule candidates by score.
// The neighbours' votes are a second distribution, trusted by their
// support S (the summed similarity² x review x recency weights): the mix is
//
//	fused(c) = (1-λ)·rules(c) + λ·votes(c),  λ = S / (S + MatchPrior)
//
// so a few distant cases barely move the answer, ten close ones agreeing
// outweigh a confident rule, and a split vote leaves the rule standing.
// Once the knowledge base is large enough for the learned classifier
// (classifier.go), its probabilities join the votes as classifierWeight
// more cases of support: votes(c) becomes (S·votes(c) + Q·p(c)) / (S + Q)
// and S becomes S + Q.
// The cause with the highest fused score is named, at that score as its
// confidence; it may be a cause no rule covers.
func (e *Engine) fuseMatch(d *Diagnosis, mt Match, probs map[string]float64, order *PairVerdict) (string, bool) {
	for _, nb := range mt.Neighbours {
		d.SimilarCases = append(d.SimilarCases, SimilarCase{ID: nb.ID, RootCause: nb.RootCause, Similarity: round3(nb.Similarity), Shared: nb.Shared})
	}
	q := 0.0
	if len(probs) > 0 {
		q = classifierWeight
	}
	if mt.Support+q <= 0 {
		return "", false
	}
	if q > 0 {
		votes := map[string]float64{}
		for c, v := range mt.Votes {
			votes[c] += mt.Support * v / (mt.Support + q)
		}
		for c, p := range probs {
			votes[c] += q * p / (mt.Support + q)
		}
		mt.Votes = votes
		mt.Support += q
	}
	lambda := mt.Support / (mt.Support + e.matchPrior)
	rules := map[string]float64{d.RootCause: d.Confidence}
	rest := 0.0
	for _, c := range d.Candidates {
		if c.RootCause != d.RootCause && c.Source == SourceRule {
			rest += c.Score
		}
	}
	if rest > 0 {
		for _, c := range d.Candidates {
			if c.RootCause != d.RootCause && c.Source == SourceRule {
				rules[c.RootCause] += (1 - d.Confidence) * c.Score / rest
			}
		}
	}
	fused := map[string]float64{}
	for c, p := range rules {
		fused[c] += (1 - lambda) * p
	}
	for c, v := range mt.Votes {
		fused[c] += lambda * v
	}
	best, bestScore := d.RootCause, fused[d.RootCause]
	causes := make([]string, 0, len(fused))
	for c := range fused {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	for _, c := range causes {
		if fused[c] > bestScore {
			best, bestScore = c, fused[c]
		}
	}
	matchCands := make([]Candidate, 0, len(mt.Votes))
	for _, c := range causes {
		if v := mt.Votes[c]; v >= 0.1 {
			matchCands = append(matchCands, Candidate{RootCause: c, Score: round3(lambda * v), Source: SourceMatch})
		}
	}
	sort.SliceStable(matchCands, func(i, j int) bool { return matchCands[i].Score > matchCands[j].Score })
	for _, c := range matchCands {
		if len(d.Candidates) >= e.maxCandidates+2 {
			break
		}
		d.Candidates = append(d.Candidates, c)
	}
	if order != nil && best == order.Secondary && d.RootCause == order.Primary {
		// The votes side with the fault that showed second: the louder
		// one, which its single cases resemble. Onset order outranks
		// resemblance.
		d.Notes = append(d.Notes, fmt.Sprintf(noteOrderKept, causeTitle(best), causeTitle(d.RootCause)))
		best, bestScore = d.RootCause, fused[d.RootCause]
	}
	if best == d.RootCause {
		d.Confidence = round3(bestScore)
		return "", false
	}
	agree, n := 0, 0
	for _, nb := range mt.Neighbours {
		n++
		if nb.RootCause == best {
			agree++
		}
	}
	d.Notes = append(d.Notes, fmt.Sprintf(noteOverturned, causeTitle(d.RootCause), causeTitle(best), agree, n, 100*mt.Votes[best], 100*d.Confidence))
	d.RootCause = best
	d.Confidence = round3(bestScore)
	// The winner leads the candidate list.
	for i, c := range d.Candidates {
		if c.RootCause == best && c.Source == SourceMatch {
			copy(d.Candidates[1:i+1], d.Candidates[:i])
			d.Candidates[0] = c
			break
		}
	}
	return best, true
}

// safeEvaluate runs a rule and turns a panic in a custom rule into an empty
// finding, so one bad rule cannot take the engine down.
func safeEvaluate(r Rule, in Input) (f Finding) {
	defer func() {
		if recover() != nil {
			f = Finding{RootCause: r.ID()}
		}
	}()
	f = r.Evaluate(in)
	if math.IsNaN(f.Score) || math.IsInf(f.Score, 0) {
		f.Score = 0
	}
	return f
}

// maxEvidence bounds the evidence list.
const maxEvidence = 10

// appendAnomalies adds the anomalous metrics the rule did not already cite,
// strongest first, up to maxEvidence entries.
func appendAnomalies(ev []Evidence, s m.Snapshot, base map[string]Deviation, anomalous []string) []Evidence {
	have := map[string]bool{}
	for _, e := range ev {
		have[e.Metric] = true
	}
	rest := make([]string, 0, len(anomalous))
	for _, id := range anomalous {
		if !have[id] {
			rest = append(rest, id)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool {
		return badZ(rest[i], base[rest[i]]) > badZ(rest[j], base[rest[j]])
	})
	for _, id := range rest {
		if len(ev) >= maxEvidence {
			break
		}
		x, _ := s.Current.Get(id)
		dv := base[id]
		ev = append(ev, Evidence{Metric: id, Value: x, BaselineMean: dv.Mean, Z: round3(dv.Z), Text: evidenceText(id, x, dv, "")})
	}
	for i := range ev {
		ev[i].Z = round3(ev[i].Z)
		ev[i].BaselineMean = roundSig(ev[i].BaselineMean)
	}
	return ev
}

// Calibration. The confidence of a named cause is a fixed mapping of two
// things the ranking produces:
//
//   - strength: the winning score s1, ramped from 0.3 (barely named) to 0.8
//     (every signal of the signature present);
//   - margin: (s1 - s2) / s1, how clearly it beats the runner-up s2.
//
// confidence = 0.55 + 0.44 * strength * (0.4 + 0.6 * margin)
//
// A named cause has cleared its rule's gate (the signature's defining
// signal) and beaten ten other rules, so even a bare pass is right more
// often than not (0.55); a strong match tied with another cause reads 0.73
// and a strong, unopposed one 0.99. The two offsets (0.55 here, 0.7 for
// "none") were set from the calibration table `casebook eval` prints for
// the simulator's corpora of seeds 1-3 (expected calibration error 0.13
// before, about 0.07 after); the shape of the mapping is not fitted.
func calibrate(s1, s2 float64) float64 {
	if s1 <= 0 {
		return 0
	}
	strength := ramp(s1, 0.3, 0.8)
	margin := math.Max(0, (s1-s2)/s1)
	return round3(0.55 + 0.44*strength*(0.4+0.6*margin))
}

// noProfilingFactor scales the confidence of a cause inferred without the
// DCGM profiling fields: the duty cycle and power it rests on also move
// with load, so such findings are wrong more often.
const noProfilingFactor = 0.9

// footingFactor scales a confidence by the share of metrics with a
// baseline: a diagnosis from absolute limits alone keeps 70% of the
// confidence the same scores would earn with a full history. Absolute
// limits are general (they hold for any deployment), so they are weaker
// evidence of this deployment's fault than its own history is.
func footingFactor(foot float64) float64 { return 0.7 + 0.3*math.Max(0, math.Min(1, foot)) }

// noneConfidence: nothing crossed the bar. Incidents are opened because
// something looked wrong, and a clean snapshot rules out large faults, not
// small ones below the 3-sigma bar, so "none" is never near-certain: at
// most 0.7, less as the largest bad-direction z nears the bar and as the
// best rule score rises.
func noneConfidence(top, maxBad float64) float64 {
	c := 0.7 - 0.2*ramp(maxBad, 2, strongZ) - 0.3*top
	return round3(math.Max(0.2, math.Min(0.7, c)))
}

// unknownConfidence: anomalous, no pattern. "Unknown" is a statement about
// the rule table, not about the service, so it stays low; the weaker the
// best rule, the surer we are that none of them applies.
func unknownConfidence(top float64) float64 {
	return round3(math.Max(0.1, 0.45-top))
}

// severity grades user-facing impact: errors and latency multiples against
// the baseline, and lost throughput. Critical: 5% of requests failing, a
// latency at 3x its baseline or half the throughput gone. Warning: 1%
// failing, +20% latency or -10% throughput. Info otherwise (waste, not
// pain).
//
// Without a baseline (footing under one half) latency multiples cannot be
// read, so a named cause that costs latency is at least a warning, and
// critical when requests spend half their time queued.
func severity(in Input, cause string, foot float64) Severity {
	if cause == m.CauseNone {
		return SeverityInfo
	}
	cur := in.Snapshot.Current
	errRate, _ := cur.Get(m.ErrorRate)
	lat := 1.0
	for _, id := range []string{m.GatewayE2E, m.E2E, m.E2EP99, m.TTFT, m.TTFTP99, m.TPOT, m.TPOTP99} {
		x, ok := cur.Get(id)
		d, dok := in.Baseline[id]
		if ok && dok && d.Mean > 0 && d.Z > AnomalyZ {
			lat = math.Max(lat, x/d.Mean)
		}
	}
	thrLoss := 0.0
	if x, ok := cur.Get(m.ThroughputRPS); ok {
		if d, ok := in.Baseline[m.ThroughputRPS]; ok && d.Mean > 0 && d.Z < -AnomalyZ {
			thrLoss = 1 - x/d.Mean
		}
	}
	unbased := foot < 0.5 && cause != m.CauseUnknown && cause != m.CauseGPUUnderutilized
	queued := 0.0
	if unbased {
		queued, _ = queueShare(cur)
	}
	switch {
	case errRate >= 0.05 || lat >= 3 || thrLoss >= 0.5 || queued >= 0.5:
		return SeverityCritical
	case errRate >= 0.01 || lat >= 1.2 || thrLoss >= 0.1 || unbased:
		return SeverityWarning
	}
	return SeverityInfo
}

// roundSig rounds to six significant digits: baselines are estimates, and
// their last bits are noise.
func roundSig(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// round3 rounds to three decimals so output stays stable and readable.
func round3(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1000) / 1000
}
