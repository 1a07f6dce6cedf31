package diagnose

import (
	"fmt"
	"sort"

	m "github.com/casebook/casebook/metrics"
)

// SourceTrace marks a candidate supported by a GPU kernel trace.
const SourceTrace = "trace"

// KernelEvidence is one finding from a GPU kernel trace attached to an
// incident (level 4 of the latency decomposition), for example "GPU idle
// 38% of the step" supporting host_overhead. Cause is a taxonomy id, or
// unknown when the finding explains no known cause.
type KernelEvidence struct {
	Cause    string
	Key      string // what was measured, e.g. "idle_share"
	Value    float64
	Baseline float64 // the same measure in a healthy baseline trace; 0 when none
	Text     string
}

// kernelSupport is how much one kernel finding adds to a cause's score.
// Kernel traces are a short sample of one rank, so they corroborate what
// the metrics show rather than outvote them.
const kernelSupport = 0.1

// FoldKernelEvidence adds kernel-trace findings to a diagnosis: each becomes
// evidence (metric "kernel:<key>"), and raises the score of the cause it
// supports. It only changes the named root cause when the metrics left it
// unexplained (unknown) and the trace points at one cause; a trace never
// overrides a cause the metrics support, and never turns "none" into an
// incident.
func FoldKernelEvidence(d Diagnosis, ev []KernelEvidence) Diagnosis {
	if len(ev) == 0 {
		return d
	}
	support := map[string]float64{}
	for _, e := range ev {
		d.Evidence = append(d.Evidence, Evidence{
			Metric: "kernel:" + e.Key, Value: roundSig(e.Value), BaselineMean: roundSig(e.Baseline), Text: e.Text,
		})
		if _, ok := m.LookupCause(e.Cause); !ok || e.Cause == m.CauseUnknown || e.Cause == m.CauseNone {
			continue
		}
		support[e.Cause] += kernelSupport
	}
	causes := make([]string, 0, len(support))
	for c := range support {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	for _, c := range causes {
		found := false
		for i := range d.Candidates {
			if d.Candidates[i].RootCause == c {
				d.Candidates[i].Score = round3(min(1, d.Candidates[i].Score+support[c]))
				found = true
				break
			}
		}
		if !found {
			d.Candidates = append(d.Candidates, Candidate{RootCause: c, Score: round3(support[c]), Source: SourceTrace})
		}
		if c == d.RootCause {
			d.Confidence = round3(min(0.99, d.Confidence+support[c]/2))
			d.Notes = append(d.Notes, fmt.Sprintf("The kernel trace supports %s.", causeTitle(c)))
		}
	}
	sort.SliceStable(d.Candidates, func(i, j int) bool { return d.Candidates[i].Score > d.Candidates[j].Score })
	if d.RootCause == m.CauseUnknown && len(causes) == 1 {
		c := causes[0]
		d.Notes = append(d.Notes, fmt.Sprintf("The metrics matched no known pattern; the kernel trace points at %s.", causeTitle(c)))
		d.RootCause = c
		d.Title = causeTitle(c)
		d.Actions = actionsFor(c)
		d.Confidence = round3(min(d.Confidence, 0.5))
	}
	return d
}
