package diagnose

import (
	"slices"
	"time"

	"github.com/casebook/casebook/metrics"
)

// A live status must last, not only be unusual. Traffic arrives in
// bursts: a few seconds of code-completion requests can fill an engine's
// prefill budget, and the minute that holds them (and, when the burst
// falls on a window's edge, the next) shows a TTFT several times the
// hour's median, tens of sigma off, with nothing wrong; near the daily
// peak a cluster of such bursts can hold a model's E2E at twice its mean
// for three minutes, and clear by itself. A deviation that holds for five
// one-minute readings is a finding, the `for: 5m` of a typical alert rule.
// (The detector opens an incident after three points; a badge is read by
// everyone, an incident by whoever is looking into it.)
//
// Where bursts are frequent, five in a row also happen by chance: at a
// busy hour a model's TPOT p99 sits at one decode step most minutes and
// at one full prefill step in a quarter of them, in runs of up to five or
// six. Such a metric is judged against its own excursions: a run is a
// finding only while the baseline hour holds fewer than burstRuns earlier
// excursions at least half as long. A fault is one excursion that keeps
// growing, so it is flagged once it is twice as long as the hour's bursts,
// however much of the hour it has filled; bursts are many and short.
const (
	// statusRun is how many consecutive one-minute readings, the current
	// one included, must deviate the same way.
	statusRun = 5
	// runSlack widens the gap allowed between readings of one run so
	// that readings a few seconds off the minute still count.
	runSlack = 15 * time.Second
	// burstRuns is how many earlier excursions at least half as long as
	// the current one make it the metric's usual pattern, not an event.
	burstRuns = 2
)

// StatusDeviations is Deviations for a live status badge: a deviation
// stays anomalous only when the metric was also anomalous, the same way
// and by a material amount (metrics.Material), in each of the previous
// statusRun-1 minutes' readings, and the baseline hour holds fewer than
// burstRuns earlier excursions of such readings at least half as long. A reading
// without a time or without that many earlier minutes flags nothing.
//
// Diagnosis keeps using Deviations: once something else is wrong, a
// burst-sized move is evidence, not noise.
func StatusDeviations(s metrics.Snapshot) map[string]Deviation {
	base, recent := SplitRecent(s)
	b := newHistoryBaseline(base.History)
	out, _ := b.deviations(s.Current)
	var earlier []scoredReading // scored once, when something deviates
	for id, d := range out {
		if !d.Anomalous {
			continue
		}
		if earlier == nil && !s.At.IsZero() {
			earlier = scoreEarlier(b, s.At, append(base.History, recent...))
		}
		run, asLong := runs(id, d.Z > 0, s.At, earlier)
		if run < statusRun || asLong >= burstRuns {
			d.Anomalous = false
			out[id] = d
		}
	}
	return out
}

// scoredReading is one earlier reading scored against the baseline.
type scoredReading struct {
	at   time.Time
	devs map[string]Deviation
}

// scoreEarlier scores the readings before `at` against b, oldest first.
func scoreEarlier(b historyBaseline, at time.Time, points []metrics.Point) []scoredReading {
	out := make([]scoredReading, 0, len(points))
	for _, p := range points {
		if p.At.IsZero() || !p.At.Before(at) {
			continue
		}
		d, _ := b.deviations(p.Values)
		out = append(out, scoredReading{at: p.At, devs: d})
	}
	slices.SortFunc(out, func(x, y scoredReading) int { return x.at.Compare(y.at) })
	return out
}

// runs walks the readings back from the current one at `at` and returns
// how many of them in a row, the current one included, deviate in id
// anomalously and materially in the direction up says (the run), and how
// many earlier excursions held at least half as many such readings as
// the current excursion. Bursts flicker, so an excursion goes on through
// one quiet reading: its flagged readings are at most two minutes (plus
// runSlack) apart.
func runs(id string, up bool, at time.Time, earlier []scoredReading) (run, asLong int) {
	flagged := func(r scoredReading) bool {
		e, ok := r.devs[id]
		return ok && e.Anomalous && (e.Z > 0) == up && metrics.Material(id, e.Mean, e.Mean+e.Z*e.Std)
	}
	const step, lull = time.Minute + runSlack, 2*time.Minute + runSlack
	run = 1
	for i, next := len(earlier)-1, at; i >= 0 && next.Sub(earlier[i].at) <= step && flagged(earlier[i]); i-- {
		run++
		next = earlier[i].at
	}
	// n counts the flagged readings of the excursion being walked, last
	// is its oldest so far; cur is the current excursion's count once
	// the walk has left it.
	current, n, last, cur := true, 1, at, 0
	for i := len(earlier) - 1; i >= 0; i-- {
		r := earlier[i]
		if !flagged(r) {
			continue
		}
		if last.Sub(r.at) > lull { // a new excursion begins
			if current {
				cur, current = n, false
			} else if 2*n >= cur {
				asLong++
			}
			n = 0
		}
		n++
		last = r.at
	}
	if current {
		cur = n
	} else if 2*n >= cur {
		asLong++
	}
	return run, asLong
}
