package forecast

import (
	"math"
	"sort"
	"time"

	"github.com/casebook/casebook/metrics"
)

const (
	// noveltyMinRecord is how many past distances a series needs before
	// its novelty is judged: fewer give no stable quantile.
	noveltyMinRecord = 50
	// noveltyMaxPoints is how many past points the shape test keeps, at
	// any sampling interval and beyond History: the longer the record,
	// the fewer routine shapes look new (a week at 1-minute data, 35
	// days at 5-minute, over a year at hourly). Each point costs one
	// pass over them.
	noveltyMaxPoints = 10080
)

// feedNovelty adds v to the series' shape test and notes whether the
// latest stretch is novel (DetectorOptions.NoveltyRank).
func (d *Detector) feedNovelty(st *seriesState, v float64) {
	st.novRatio, st.novStart = math.NaN(), false
	if d.opts.NoveltyRank <= 0 {
		return
	}
	if st.nov == nil {
		// The stretch is a duration; wait for a few gaps to know the
		// interval it spans.
		if st.interval <= 0 || st.stats.Points < 10 {
			return
		}
		span := int64(d.opts.NoveltySpan / time.Second)
		st.nov = newNovelty(int((span+st.interval/2)/st.interval), noveltyMaxPoints, d.opts.NoveltyRank)
	}
	r := st.nov.add(v)
	st.novRatio = r
	if d.opts.NoveltyAlone <= 0 {
		return
	}
	switch {
	case r > d.opts.NoveltyAlone:
		st.novStart = !st.novRun
		st.novRun, st.novQuiet = true, 0
	case st.novRun:
		// A novel episode ends after a whole stretch of familiar ones.
		st.novQuiet++
		if st.novQuiet >= st.nov.m {
			st.novRun = false
		}
	}
}

// novelEnough reports whether the current run passes the shape test:
// some stretch ending in it was beyond the NoveltyRank quantile, or the
// test is off or not yet judged.
func (d *Detector) novelEnough(st *seriesState) bool {
	if d.opts.NoveltyRank <= 0 || math.IsNaN(st.runNovelty) || st.runNovelty >= 1 {
		return true
	}
	if !st.familiar {
		st.stats.Familiar++
		st.familiar = true
	}
	return false
}

// novelAlone reports whether the latest point began a stretch
// NoveltyAlone times beyond the quantile, with the direction of its
// error e from the forecast, when that is a bad direction for the metric.
func (d *Detector) novelAlone(st *seriesState, e float64) (metrics.Direction, bool) {
	if !st.novStart {
		return 0, false
	}
	dir := metrics.Up
	if e < 0 {
		dir = metrics.Down
	}
	return dir, st.metric.Bad == metrics.Both || dir == st.metric.Bad
}

// maxKnown is the larger of a and b, ignoring a NaN.
func maxKnown(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Max(a, b)
}

// novelty measures how unlike anything earlier in the series its latest
// stretch of m points is. Each stretch's distance is the Euclidean
// distance, in the series' units, to its nearest earlier stretch that
// does not overlap it (the left nearest neighbour of a matrix profile).
// A routine burst has happened before and has a near match; a failure
// usually has not. The distance is read against the series' own record
// of such distances: ratio is the latest distance over the record's rank
// quantile, so it needs no unit and no noise model.
type novelty struct {
	m      int       // points per stretch
	keep   int       // values (and distances) kept at most
	rank   float64   // quantile of the record the ratio is read against
	vals   []float64 // the series, oldest first; trimmed to keep
	dists  []float64 // distances not yet in the record, or in it, oldest first
	queued int       // how many of the newest dists wait to enter the record
	sorted []float64 // the record, sorted
}

func newNovelty(m, keep int, rank float64) *novelty {
	m = max(m, 2)
	keep = max(keep, 4*m)
	return &novelty{m: m, keep: keep, rank: rank}
}

// add appends v and returns the ratio of the latest stretch's distance
// to the record's rank quantile: above 1, the stretch is farther from
// its nearest earlier match than that share of past stretches were from
// theirs. NaN while the record is young.
func (n *novelty) add(v float64) float64 {
	n.vals = append(n.vals, v)
	if len(n.vals) > 2*n.keep {
		n.vals = append(n.vals[:0], n.vals[len(n.vals)-n.keep:]...)
	}
	if len(n.vals) < 2*n.m {
		return math.NaN()
	}
	d := n.nearest()
	// A stretch's distance enters the record once m points old, so the
	// stretch being judged never sets its own threshold.
	n.dists = append(n.dists, d)
	n.queued++
	if n.queued > n.m {
		n.insert(n.dists[len(n.dists)-n.queued])
		n.queued--
	}
	if len(n.dists)-n.queued > n.keep {
		n.remove(n.dists[0])
		n.dists = n.dists[1:]
	}
	if len(n.sorted) < noveltyMinRecord {
		return math.NaN()
	}
	q := n.sorted[min(len(n.sorted)-1, int(n.rank*float64(len(n.sorted))))]
	if q <= 0 {
		q = math.SmallestNonzeroFloat64
	}
	return d / q
}

// nearest is the distance of the latest stretch to its nearest earlier
// stretch that ends at least m points before it, abandoning a candidate
// as soon as it is farther than the best so far.
func (n *novelty) nearest() float64 {
	x, m := n.vals, n.m
	t := len(x) - 1
	best := math.Inf(1)
	for s := m - 1; s <= t-m; s++ {
		sum := 0.0
		for k := 0; k < m && sum < best; k++ {
			e := x[t-k] - x[s-k]
			sum += e * e
		}
		if sum < best {
			best = sum
		}
	}
	return math.Sqrt(best)
}

func (n *novelty) insert(d float64) {
	i := sort.SearchFloat64s(n.sorted, d)
	n.sorted = append(n.sorted, 0)
	copy(n.sorted[i+1:], n.sorted[i:])
	n.sorted[i] = d
}

func (n *novelty) remove(d float64) {
	i := sort.SearchFloat64s(n.sorted, d)
	if i < len(n.sorted) && n.sorted[i] == d {
		n.sorted = append(n.sorted[:i], n.sorted[i+1:]...)
	}
}
