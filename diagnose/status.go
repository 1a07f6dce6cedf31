package diagnose

import (
	"time"

	"github.com/casebook/casebook/metrics"
)

// A live status must last, not only be unusual. Traffic arrives in
// bursts: a few seconds of code-completion requests can fill an engine's
// prefill budget, and the minute that holds them (and, when the burst
// falls on a window's edge, the next) shows a TTFT several times the
// hour's median, tens of sigma off, with nothing wrong. A deviation that
// holds for three one-minute readings is a finding: the same three points
// the detector waits for before it opens an incident.
const (
	// statusRun is how many consecutive one-minute readings, the current
	// one included, must deviate the same way.
	statusRun = 3
	// runSlack widens the look-back so that readings a few seconds off
	// the minute still count.
	runSlack = 15 * time.Second
)

// StatusDeviations is Deviations for a live status badge: a deviation
// stays anomalous only when the metric was also anomalous, the same way
// and by a material amount (metrics.Material), in each of the previous
// statusRun-1 minutes' readings. A reading without
// that many earlier minutes flags nothing.
//
// Diagnosis keeps using Deviations: once something else is wrong, a
// burst-sized move is evidence, not noise.
func StatusDeviations(s metrics.Snapshot) map[string]Deviation {
	base, recent := SplitRecent(s)
	b := newHistoryBaseline(base.History)
	out, _ := b.deviations(s.Current)
	var prev []map[string]Deviation
	if !s.At.IsZero() {
		// Earlier readings whose one-minute windows do not overlap the
		// current one.
		for _, p := range recent {
			age := s.At.Sub(p.At)
			if age >= time.Minute && age < time.Duration(statusRun-1)*time.Minute+runSlack {
				d, _ := b.deviations(p.Values)
				prev = append(prev, d)
			}
		}
	}
	for id, d := range out {
		if d.Anomalous && !persists(id, d, prev) {
			d.Anomalous = false
			out[id] = d
		}
	}
	return out
}

// persists reports whether id deviates the same way, anomalously and by a
// material amount, in every earlier reading, and there are enough of them.
func persists(id string, d Deviation, prev []map[string]Deviation) bool {
	if len(prev) < statusRun-1 {
		return false
	}
	for _, p := range prev {
		e, ok := p[id]
		if !ok || !e.Anomalous || (e.Z > 0) != (d.Z > 0) || !metrics.Material(id, e.Mean, e.Mean+e.Z*e.Std) {
			return false
		}
	}
	return true
}
