package diagnose

import (
	"math"

	"github.com/casebook/casebook/metrics"
)

// Input is what a rule reads: the snapshot and every metric's deviation
// from the scope's own baseline (see Deviations).
type Input struct {
	Snapshot metrics.Snapshot
	Baseline map[string]Deviation
	// Recent are the points of the last RecentWindow before the current
	// values, oldest first, which the baseline leaves out (SplitRecent):
	// what moved on the way to the current values.
	Recent []metrics.Point
}

// Finding is a rule's verdict on one snapshot.
type Finding struct {
	RootCause string
	// Score is the strength of the match in 0-1; 0 means the rule did not
	// fire.
	Score float64
	// Evidence lists the readings that support the finding, built from the
	// metrics the rule read.
	Evidence []Evidence
	// Missing lists catalog ids the rule wanted but the snapshot lacked.
	Missing []string
	// profilingMissing is set when the rule would have read the DCGM
	// profiling fields (DRAM activity) and had to infer from the default
	// counters (GPU_UTIL duty cycle, power, batch and token rate) instead.
	profilingMissing bool
	// beyondUpstream is set when the rule measured that no upstream
	// anomaly can account for the size of its own: causal ranking then
	// does not demote it as a symptom.
	beyondUpstream bool
	// absDiscount (0-1) is the share of the cause's absolute signature
	// (absolute.go) that the rule's physical checks rule out: the
	// absolute reading sees the current values only and cannot tell,
	// say, a queue of too much load from one behind lost capacity.
	absDiscount float64
}

// Rule recognises one root cause.
type Rule interface {
	// ID is the root-cause id the rule recognises (a metrics.Causes id).
	ID() string
	// Title is the rule's human-readable name.
	Title() string
	// Evaluate scores the snapshot. It must not panic on missing fields or
	// extreme values.
	Evaluate(in Input) Finding
}

// ruleFunc is a Rule built from a scoring function over a reader.
type ruleFunc struct {
	id    string
	score func(r *reader) float64
	// wants lists the metrics the rule reads when they are there; absent
	// ones are reported as missing even when the rule stops early.
	wants []string
}

func (f ruleFunc) ID() string    { return f.id }
func (f ruleFunc) Title() string { return causeTitle(f.id) }

func (f ruleFunc) Evaluate(in Input) Finding {
	r := &reader{in: in}
	for _, id := range f.wants {
		r.has(id)
	}
	s := f.score(r)
	if math.IsNaN(s) || s < 0 {
		s = 0
	}
	if s > 1 {
		s = 1
	}
	fd := Finding{RootCause: f.id, Score: s, Missing: r.missing, beyondUpstream: r.beyondUpstream, profilingMissing: r.profilingMissing, absDiscount: r.absDiscount}
	if s > 0 {
		fd.Evidence = r.evidence
	}
	return fd
}

// reader gives rules access to values and deviations and records what they
// read: which metrics were missing and which readings are evidence.
type reader struct {
	in       Input
	missing  []string
	evidence []Evidence
	noted    map[string]bool
	// beyondUpstream, profilingMissing and absDiscount: see Finding.
	beyondUpstream, profilingMissing bool
	absDiscount                      float64
}

// val returns the current value of id, recording it as missing if absent.
func (r *reader) val(id string) (float64, bool) {
	x, ok := r.in.Snapshot.Current.Get(id)
	if !ok {
		for _, m := range r.missing {
			if m == id {
				return 0, false
			}
		}
		r.missing = append(r.missing, id)
	}
	return x, ok
}

// has reports whether id is present, recording it as missing otherwise.
func (r *reader) has(id string) bool {
	_, ok := r.val(id)
	return ok
}

// z returns the signed z of id, 0 when absent or without baseline.
func (r *reader) z(id string) float64 {
	if _, ok := r.val(id); !ok {
		return 0
	}
	return r.in.Baseline[id].Z
}

// mean returns the baseline mean of id and whether it is known.
func (r *reader) mean(id string) (float64, bool) {
	d, ok := r.in.Baseline[id]
	if !ok {
		return 0, false
	}
	return d.Mean, true
}

// rel returns current / baseline mean of id, 1 when unknown.
func (r *reader) rel(id string) float64 {
	x, ok := r.val(id)
	m, mok := r.mean(id)
	if !ok || !mok || m <= 0 {
		return 1
	}
	return x / m
}

// up is the strength of an upward deviation of id: 0 below z=2, 1 at z>=6.
func (r *reader) up(id string) float64 { return ramp(r.z(id), 2, 6) }

// down is the strength of a downward deviation of id.
func (r *reader) down(id string) float64 { return ramp(-r.z(id), 2, 6) }

// note records id as evidence with an optional remark key from texts.go.
// Absent metrics are skipped.
func (r *reader) note(id, remark string) {
	x, ok := r.in.Snapshot.Current.Get(id)
	if !ok {
		return
	}
	if r.noted == nil {
		r.noted = map[string]bool{}
	}
	if r.noted[id] {
		return
	}
	r.noted[id] = true
	d := r.in.Baseline[id]
	r.evidence = append(r.evidence, Evidence{
		Metric: id, Value: x, BaselineMean: d.Mean, Z: d.Z,
		Text: evidenceText(id, x, d, remark),
	})
}

// noteIf records id as evidence when strength is positive.
func (r *reader) noteIf(strength float64, id, remark string) {
	if strength > 0 {
		r.note(id, remark)
	}
}

// ramp maps x linearly from 0 at lo to 1 at hi, clamped.
func ramp(x, lo, hi float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case x <= lo:
		return 0
	case x >= hi:
		return 1
	}
	return (x - lo) / (hi - lo)
}

// knee is how far x has entered the saturation region that starts at k:
// 0 below k-0.1, 1 at k+0.05 and above. Queueing and preemption grow
// non-linearly past a utilisation knee, so rules read the knee rather than
// a straight threshold.
func knee(x, k float64) float64 { return ramp(x, k-0.1, k+0.05) }

// max returns the largest of xs (0 for none).
func maxOf(xs ...float64) float64 {
	m := 0.0
	for _, x := range xs {
		if x > m {
			m = x
		}
	}
	return m
}

// RuleGap is a built-in rule that reads metrics a source lacks.
type RuleGap struct {
	// Cause is the rule's root-cause id.
	Cause string
	// Missing lists the catalog ids the rule reads that the source lacks,
	// in the rule's order.
	Missing []string
}

// Gaps lists, in rule order, the built-in rules that read any of the
// missing catalog ids: the rules a source without them leaves to infer
// from other metrics, or to stand down. A diagnosis of such a source
// names the same metrics in its Missing list.
func Gaps(missing []string) []RuleGap {
	lacks := map[string]bool{}
	for _, id := range missing {
		lacks[id] = true
	}
	var out []RuleGap
	for _, r := range Rules() {
		f, ok := r.(ruleFunc)
		if !ok {
			continue
		}
		g := RuleGap{Cause: f.id}
		for _, id := range f.wants {
			if lacks[id] {
				g.Missing = append(g.Missing, id)
			}
		}
		if len(g.Missing) > 0 {
			out = append(out, g)
		}
	}
	return out
}
