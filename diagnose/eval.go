package diagnose

import (
	"math"
	"sort"

	m "github.com/casebook/casebook/metrics"
)

// Evaluation accumulates diagnoses of labelled cases and reports accuracy,
// per-cause precision and recall, the confusion matrix and the calibration
// of the confidence. The zero value is ready to use; it is not safe for
// concurrent use.
type Evaluation struct {
	n, top1, top3 int
	// withSecondary counts top-1 hits on the label or one of the case's
	// secondary labels (several faults at once).
	withSecondary, multi int
	// visible counts cases with some reading beyond AnomalyZ (Visible),
	// visibleTop1 the top-1 hits among them.
	visible, visibleTop1 int
	// faults and hiddenFaults count cases labelled with a fault, and
	// those of them that are not Visible.
	faults, hiddenFaults int
	confusion            map[string]map[string]int // label -> predicted -> count
	bins                 [calibrationBins]binAcc
}

// calibrationBins is the number of equal-width confidence bins.
const calibrationBins = 10

type binAcc struct {
	n, correct int
	confSum    float64
}

// AddCase records the diagnosis d of a labelled case, crediting a top-1
// hit on a secondary label separately (Top1AnyLabel).
func (ev *Evaluation) AddCase(c m.Case, d Diagnosis) {
	ev.Add(c.Label, d)
	fault := c.Label != m.CauseNone
	if fault {
		ev.faults++
	}
	if Visible(c.Snapshot) {
		ev.visible++
		if d.RootCause == c.Label {
			ev.visibleTop1++
		}
	} else if fault {
		ev.hiddenFaults++
	}
	if len(c.Secondary) > 0 {
		ev.multi++
	}
	if d.RootCause == c.Label {
		return
	}
	for _, s := range c.Secondary {
		if s == d.RootCause {
			ev.withSecondary++
			return
		}
	}
}

// Add records the diagnosis d of a case labelled label. Top-3 counts the
// label among the primary root cause and the next distinct candidates.
func (ev *Evaluation) Add(label string, d Diagnosis) {
	if ev.confusion == nil {
		ev.confusion = map[string]map[string]int{}
	}
	ev.n++
	if ev.confusion[label] == nil {
		ev.confusion[label] = map[string]int{}
	}
	ev.confusion[label][d.RootCause]++
	correct := d.RootCause == label
	if correct {
		ev.top1++
	}
	ranked := []string{d.RootCause}
	for _, c := range d.Candidates {
		if len(ranked) == 3 {
			break
		}
		dup := false
		for _, r := range ranked {
			dup = dup || r == c.RootCause
		}
		if !dup {
			ranked = append(ranked, c.RootCause)
		}
	}
	for _, r := range ranked {
		if r == label {
			ev.top3++
			break
		}
	}
	conf := d.Confidence
	if math.IsNaN(conf) {
		conf = 0
	}
	b := int(conf * calibrationBins)
	if b >= calibrationBins {
		b = calibrationBins - 1
	}
	if b < 0 {
		b = 0
	}
	ev.bins[b].n++
	ev.bins[b].confSum += conf
	if correct {
		ev.bins[b].correct++
	}
}

// CauseScore is the precision and recall of one root cause.
type CauseScore struct {
	Cause     string  `json:"cause"`
	Support   int     `json:"support"`   // cases labelled with the cause
	Predicted int     `json:"predicted"` // cases diagnosed as the cause
	Correct   int     `json:"correct"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
}

// CalibrationBin is one confidence bin: cases diagnosed with a confidence
// in [Lo, Hi), their mean confidence and how many were right.
type CalibrationBin struct {
	Lo             float64 `json:"lo"`
	Hi             float64 `json:"hi"`
	Count          int     `json:"count"`
	MeanConfidence float64 `json:"mean_confidence"`
	Accuracy       float64 `json:"accuracy"`
}

// EvalReport is the result of an evaluation.
type EvalReport struct {
	Cases int     `json:"cases"`
	Top1  float64 `json:"top1_accuracy"`
	Top3  float64 `json:"top3_accuracy"`
	// Top1AnyLabel counts a diagnosis naming a secondary label of a
	// multi-fault case as right too; MultiFault is how many cases had one.
	Top1AnyLabel float64 `json:"top1_any_label_accuracy"`
	MultiFault   int     `json:"multi_fault_cases"`
	// VisibleCases have some reading beyond AnomalyZ of its baseline
	// (Visible); Top1Visible is the top-1 accuracy among them. A fault
	// whose every reading stays inside its noise cannot be told from a
	// healthy snapshot by any detector, so the gap between the two
	// accuracies is what the corpus makes unknowable.
	VisibleCases int     `json:"visible_cases"`
	Top1Visible  float64 `json:"top1_visible_accuracy"`
	// FaultCases are labelled with a fault; HiddenFaults of them are not
	// Visible.
	FaultCases   int `json:"fault_cases"`
	HiddenFaults int `json:"hidden_faults"`
	// Causes lists every cause seen as a label or a prediction, in
	// taxonomy order, then any others sorted.
	Causes []CauseScore `json:"causes"`
	// Confusion[i][j] counts cases labelled Labels[i] diagnosed Labels[j].
	Labels    []string         `json:"labels"`
	Confusion [][]int          `json:"confusion"`
	Bins      []CalibrationBin `json:"calibration"`
	// ECE is the expected calibration error: the count-weighted mean of
	// |accuracy - mean confidence| over the bins.
	ECE float64 `json:"expected_calibration_error"`
}

// Report summarises what was added so far.
func (ev *Evaluation) Report() EvalReport {
	r := EvalReport{Cases: ev.n, Causes: []CauseScore{}, Labels: []string{}, Confusion: [][]int{}, Bins: []CalibrationBin{}}
	if ev.n == 0 {
		return r
	}
	r.Top1 = float64(ev.top1) / float64(ev.n)
	r.Top3 = float64(ev.top3) / float64(ev.n)
	r.Top1AnyLabel = float64(ev.top1+ev.withSecondary) / float64(ev.n)
	r.MultiFault = ev.multi
	r.VisibleCases = ev.visible
	r.FaultCases, r.HiddenFaults = ev.faults, ev.hiddenFaults
	if ev.visible > 0 {
		r.Top1Visible = float64(ev.visibleTop1) / float64(ev.visible)
	}

	seen := map[string]bool{}
	for label, row := range ev.confusion {
		seen[label] = true
		for pred := range row {
			seen[pred] = true
		}
	}
	for _, c := range m.Causes {
		if seen[c.ID] {
			r.Labels = append(r.Labels, c.ID)
			delete(seen, c.ID)
		}
	}
	var extra []string
	for id := range seen {
		extra = append(extra, id)
	}
	sort.Strings(extra)
	r.Labels = append(r.Labels, extra...)

	for _, label := range r.Labels {
		row := make([]int, len(r.Labels))
		for j, pred := range r.Labels {
			row[j] = ev.confusion[label][pred]
		}
		r.Confusion = append(r.Confusion, row)
	}
	for i, c := range r.Labels {
		cs := CauseScore{Cause: c}
		for j := range r.Labels {
			cs.Support += r.Confusion[i][j]
			cs.Predicted += r.Confusion[j][i]
		}
		cs.Correct = r.Confusion[i][i]
		if cs.Predicted > 0 {
			cs.Precision = float64(cs.Correct) / float64(cs.Predicted)
		}
		if cs.Support > 0 {
			cs.Recall = float64(cs.Correct) / float64(cs.Support)
		}
		r.Causes = append(r.Causes, cs)
	}
	for i, b := range ev.bins {
		cb := CalibrationBin{Lo: float64(i) / calibrationBins, Hi: float64(i+1) / calibrationBins, Count: b.n}
		if b.n > 0 {
			cb.MeanConfidence = b.confSum / float64(b.n)
			cb.Accuracy = float64(b.correct) / float64(b.n)
			r.ECE += float64(b.n) / float64(ev.n) * math.Abs(cb.Accuracy-cb.MeanConfidence)
		}
		r.Bins = append(r.Bins, cb)
	}
	return r
}

// Evaluate diagnoses every case with e and reports the result.
func Evaluate(e *Engine, cases []m.Case) EvalReport {
	var ev Evaluation
	for _, c := range cases {
		ev.AddCase(c, e.Diagnose(c.Snapshot))
	}
	return ev.Report()
}

// Visible reports whether any reading of s lies beyond AnomalyZ of its
// baseline, in either direction: a catalog metric, or the time spent
// outside the engine (gateway minus engine E2E) or before the engine's
// queue (TTFT minus queue and prefill), which some faults move alone.
// The recent minutes are left out of the baseline, as in diagnosis.
func Visible(s m.Snapshot) bool {
	base, _ := deviationsAndCounts(s)
	for _, d := range base {
		if math.Abs(d.Z) > AnomalyZ {
			return true
		}
	}
	s, _ = SplitRecent(s)
	for _, f := range []func(m.Values) (float64, bool){gatewayGap, frontendTime} {
		if d := deriveDeviation(s, f, 2, m.Up); d.ok && math.Abs(d.dev.Z) > AnomalyZ {
			return true
		}
	}
	return false
}
