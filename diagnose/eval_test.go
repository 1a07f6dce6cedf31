package diagnose

import (
	"math"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

func TestEvaluationReport(t *testing.T) {
	var ev Evaluation
	diag := func(cause string, conf float64, cands ...string) Diagnosis {
		d := Diagnosis{RootCause: cause, Confidence: conf}
		for _, c := range cands {
			d.Candidates = append(d.Candidates, Candidate{RootCause: c})
		}
		return d
	}
	ev.Add(m.CauseQueueBacklog, diag(m.CauseQueueBacklog, 0.95, m.CauseQueueBacklog))
	ev.Add(m.CauseQueueBacklog, diag(m.CauseMemoryBandwidthBound, 0.55, m.CauseMemoryBandwidthBound, m.CauseQueueBacklog))
	ev.Add(m.CauseNone, diag(m.CauseNone, 0.9))
	ev.Add(m.CauseGPUThrottling, diag(m.CauseHostOverhead, 0.35, m.CauseHostOverhead, m.CauseMemoryBandwidthBound, m.CauseSpecDecodeDegradation, m.CauseGPUThrottling))
	r := ev.Report()

	if r.Cases != 4 {
		t.Fatalf("cases = %d, want 4", r.Cases)
	}
	if r.Top1 != 0.5 || r.Top3 != 0.75 {
		t.Errorf("top1 = %v, top3 = %v; want 0.5, 0.75", r.Top1, r.Top3)
	}
	byCause := map[string]CauseScore{}
	for _, c := range r.Causes {
		byCause[c.Cause] = c
	}
	q := byCause[m.CauseQueueBacklog]
	if q.Support != 2 || q.Predicted != 1 || q.Correct != 1 || q.Precision != 1 || q.Recall != 0.5 {
		t.Errorf("queue_backlog score = %+v", q)
	}
	if h := byCause[m.CauseHostOverhead]; h.Precision != 0 || h.Predicted != 1 || h.Support != 0 {
		t.Errorf("host_overhead score = %+v", h)
	}
	total := 0
	for _, row := range r.Confusion {
		for _, n := range row {
			total += n
		}
	}
	if total != 4 || len(r.Confusion) != len(r.Labels) {
		t.Errorf("confusion holds %d cases over %d labels", total, len(r.Labels))
	}
	var count int
	for _, b := range r.Bins {
		count += b.Count
		if b.Count > 0 && (b.MeanConfidence < b.Lo || b.MeanConfidence > b.Hi) {
			t.Errorf("bin %.1f-%.1f has mean confidence %v", b.Lo, b.Hi, b.MeanConfidence)
		}
	}
	if count != 4 {
		t.Errorf("calibration bins hold %d cases, want 4", count)
	}
	// Bins: 0.95 right, 0.9 right, 0.55 wrong, 0.35 wrong.
	wantECE := (0.05 + 0.1 + 0.55 + 0.35) / 4
	if math.Abs(r.ECE-wantECE) > 1e-9 {
		t.Errorf("ECE = %v, want %v", r.ECE, wantECE)
	}
}

func TestEvaluationSecondaryLabels(t *testing.T) {
	var ev Evaluation
	c := m.Case{Label: m.CauseTransportLatency, Secondary: []string{m.CauseQueueBacklog}}
	ev.AddCase(c, Diagnosis{RootCause: m.CauseQueueBacklog})
	ev.AddCase(m.Case{Label: m.CauseNone}, Diagnosis{RootCause: m.CauseNone})
	ev.AddCase(c, Diagnosis{RootCause: m.CauseEngineErrors})
	r := ev.Report()
	if r.Top1 != 1.0/3 || r.Top1AnyLabel != 2.0/3 || r.MultiFault != 2 {
		t.Errorf("top1 %v, any label %v, multi %d; want 1/3, 2/3, 2", r.Top1, r.Top1AnyLabel, r.MultiFault)
	}
}

func TestEvaluationEmpty(t *testing.T) {
	var ev Evaluation
	r := ev.Report()
	if r.Cases != 0 || r.Top1 != 0 || len(r.Confusion) != 0 {
		t.Errorf("empty report = %+v", r)
	}
}

func TestEvaluateSyntheticCorpus(t *testing.T) {
	var cases []m.Case
	for cause, f := range faults {
		cases = append(cases, m.Case{Snapshot: synth(7, f), Label: cause})
	}
	r := Evaluate(New(Options{}), cases)
	if r.Cases != len(faults) {
		t.Fatalf("cases = %d, want %d", r.Cases, len(faults))
	}
	if r.Top1 < 1 {
		t.Errorf("top-1 = %.2f on the hand-made signatures, want 1", r.Top1)
	}
}

// TestEvaluateCountsHiddenFaults: a fault whose readings all stay inside
// their baseline's noise is counted apart, and the top-1 accuracy on the
// visible cases leaves it out; the time outside the engine counts as a
// reading of its own.
func TestEvaluateCountsHiddenFaults(t *testing.T) {
	hidden := m.Case{Snapshot: synth(1, nil), Label: m.CauseHostOverhead}
	healthy := m.Case{Snapshot: synth(2, nil), Label: m.CauseNone}
	loud := m.Case{Snapshot: synth(3, faults[m.CauseKVCacheEviction]), Label: m.CauseKVCacheEviction}
	if Visible(hidden.Snapshot) || !Visible(loud.Snapshot) {
		t.Fatalf("visible: hidden %v, loud %v", Visible(hidden.Snapshot), Visible(loud.Snapshot))
	}
	// Gateway and engine E2E each within their noise, their gap not: the
	// gateway adds a steady 60 ms, then 120.
	gap := synth(4, nil)
	for i, p := range gap.History {
		p.Values[m.GatewayE2E] = p.Values[m.E2E] + 60 + float64(i%3)
	}
	gap.Current[m.GatewayE2E] = gap.Current[m.E2E] + 120
	if base, _ := deviationsAndCounts(gap); math.Abs(base[m.GatewayE2E].Z) > AnomalyZ || math.Abs(base[m.E2E].Z) > AnomalyZ {
		t.Fatalf("gateway z %.1f, engine z %.1f: the case needs both inside their noise", base[m.GatewayE2E].Z, base[m.E2E].Z)
	}
	if !Visible(gap) {
		t.Error("a gateway gap beyond its noise is not visible")
	}
	r := Evaluate(New(Options{}), []m.Case{hidden, healthy, loud})
	if r.FaultCases != 2 || r.HiddenFaults != 1 {
		t.Errorf("fault cases %d, hidden %d; want 2 and 1", r.FaultCases, r.HiddenFaults)
	}
	if r.VisibleCases != 1 || r.Top1Visible != 1 {
		t.Errorf("visible cases %d at top-1 %.2f; want 1 at 1.00", r.VisibleCases, r.Top1Visible)
	}
}
