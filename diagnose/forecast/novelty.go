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
		st.nov.older = d.noveltySustainPoints(st) - 1
	}
	r := st.nov.add(v)
	st.novRatio = r
	if d.opts.NoveltyAlone <= 0 {
		return
	}
	if d.opts.NoveltySustain > 0 {
		// A lasting episode is judged against what came before it.
		r = st.nov.oldRatio
	}
	switch {
	case r > d.opts.NoveltyAlone:
		if !st.novRun {
			st.novRun, st.novSeen, st.novRaised = true, 0, false
			st.novFrom = st.last - int64(st.nov.m-1)*st.interval
		}
		st.novQuiet = 0
		st.novSeen++
		// One odd point makes a span's worth of novel stretches as
		// they slide over it; NoveltySustain asks for more before the
		// episode is new behaviour rather than a blip.
		if !st.novRaised && st.novSeen >= d.noveltySustainPoints(st) {
			st.novStart, st.novRaised = true, true
		}
	case st.novRun:
		// A novel episode ends after a whole stretch of familiar ones.
		st.novQuiet++
		if st.novQuiet >= st.nov.m {
			st.novRun = false
		}
	}
}

// noveltySustainPoints is how many stretches of a novel episode must be
// beyond NoveltyAlone before it alerts: NoveltySustain spans, at least one.
func (d *Detector) noveltySustainPoints(st *seriesState) int {
	return max(1, int(math.Ceil(d.opts.NoveltySustain*float64(st.nov.m))))
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
	keep   int       // distances in the record at most, and values kept at least once full
	rank   float64   // quantile of the record the ratio is read against
	vals   []float64 // the series, oldest first: the last keep to keep*9/8
	dists  []float64 // dists[dhead:]: distances in the record or waiting for it, oldest first
	dhead  int
	queued int       // how many of the newest dists wait to enter the record
	sorted []float64 // the record, sorted
	// row[j] is the squared distance of the latest stretch to the one
	// ending at vals[m-1+j].
	row     []float64
	slidden int // points since row was computed afresh; noveltyRefresh forces it
	// older is how many more points the second distance leaves out:
	// the latest stretch's distance to its nearest stretch ending more
	// than m+older points before it, over the same quantile, is
	// oldRatio. A new behaviour that lasts matches itself after a span;
	// against the stretches before it, it stays new.
	older    int
	oldRatio float64
}

// noveltyRefresh is how many points the distances slide from one to the
// next before they are computed afresh, so rounding errors of the running
// sums never build up.
const noveltyRefresh = 1024

func newNovelty(m, keep int, rank float64) *novelty {
	m = max(m, 2)
	keep = max(keep, 4*m)
	// Every slice is allocated once at its largest, so a series costs
	// the same from its first point to its last.
	most := keep + keep/8
	return &novelty{m: m, keep: keep, rank: rank, slidden: noveltyRefresh,
		vals: make([]float64, 0, most+1), row: make([]float64, 0, most),
		dists: make([]float64, 0, most+m), sorted: make([]float64, 0, keep+1)}
}

// add appends v and returns the ratio of the latest stretch's distance
// to the record's rank quantile: above 1, the stretch is farther from
// its nearest earlier match than that share of past stretches were from
// theirs. NaN while the record is young.
func (n *novelty) add(v float64) float64 {
	n.vals = append(n.vals, v)
	if len(n.vals) > n.keep+n.keep/8 {
		n.vals = append(n.vals[:0], n.vals[len(n.vals)-n.keep:]...)
		n.slidden = noveltyRefresh // its stretches moved
	}
	if len(n.vals) < 2*n.m {
		return math.NaN()
	}
	d, old := n.nearest()
	if math.IsNaN(d) {
		d = math.Inf(1)
	}
	n.oldRatio = math.NaN()
	// A stretch's distance enters the record once m points old, so the
	// stretch being judged never sets its own threshold.
	n.dists = append(n.dists, d)
	n.queued++
	if n.queued > n.m {
		n.insert(n.dists[len(n.dists)-n.queued])
		n.queued--
	}
	if len(n.dists)-n.dhead-n.queued > n.keep {
		n.remove(n.dists[n.dhead])
		n.dhead++
		if n.dhead >= n.keep/8 {
			n.dists = append(n.dists[:0], n.dists[n.dhead:]...)
			n.dhead = 0
		}
	}
	if len(n.sorted) < noveltyMinRecord {
		return math.NaN()
	}
	q := n.sorted[min(len(n.sorted)-1, int(n.rank*float64(len(n.sorted))))]
	if q <= 0 {
		q = math.SmallestNonzeroFloat64
	}
	n.oldRatio = old / q
	return d / q
}

// nearest is the distance of the latest stretch to its nearest earlier
// stretch that ends at least m points before it, and to its nearest one
// that ends at least m+older points before it (NaN when there is none).
// The squared distances to every candidate slide from the previous
// point's in one pass: the stretch ending at t differs from the one
// ending at t-1 by its newest point in and its oldest out, and so does
// each candidate.
func (n *novelty) nearest() (nearest, older float64) {
	x, m := n.vals, n.m
	t := len(x) - 1
	cands := t - 2*m + 2      // stretches ending at m-1 .. t-m
	oldEnd := cands - n.older // row[:oldEnd] end m+older points back or more
	best, bestOld := math.Inf(1), math.Inf(1)
	if len(n.row) != cands-1 || n.slidden >= noveltyRefresh {
		n.row = n.row[:0]
		finite := true
		for s := m - 1; s <= t-m; s++ {
			d := sqDist(x, t, s, m)
			n.row = append(n.row, d)
			best = min(best, d)
			if len(n.row) <= oldEnd {
				bestOld = min(bestOld, d)
			}
			finite = finite && d <= math.MaxFloat64
		}
		n.slidden = 0
		if !finite {
			// Values so far apart that their squares overflow: a
			// running sum cannot take an infinite term back out, so
			// compute afresh until they are gone.
			n.slidden = noveltyRefresh
		}
	} else {
		n.row = append(n.row, 0)
		xt, xo := x[t], x[t-m]
		// Candidates from oldEnd on end too recently for the second
		// distance; the older ones count for both, as best takes
		// bestOld in below.
		split := max(min(oldEnd, cands), 1)
		for j := cands - 1; j >= split; j-- {
			best = min(best, n.slide(j, xt, xo))
		}
		for j := split - 1; j >= 1; j-- {
			bestOld = min(bestOld, n.slide(j, xt, xo))
		}
		n.row[0] = sqDist(x, t, m-1, m)
		if oldEnd > 0 {
			bestOld = min(bestOld, n.row[0])
		} else {
			best = min(best, n.row[0])
		}
		n.slidden++
	}
	best = min(best, bestOld)
	if oldEnd <= 0 {
		bestOld = math.NaN()
	}
	return math.Sqrt(max(best, 0)), math.Sqrt(max(bestOld, 0))
}

// slide moves row[j], the squared distance to the candidate ending at
// vals[m-1+j], on by one point: the latest stretch took xt in and let
// xo out, and the candidate, a point later, is what row[j-1] was.
// Rows go from the highest j down, so row[j-1] is still the previous
// point's.
func (n *novelty) slide(j int, xt, xo float64) float64 {
	x, m := n.vals, n.m
	s := m - 1 + j
	in, out := xt-x[s], xo-x[s-m]
	d := n.row[j-1] + in*in - out*out
	n.row[j] = d
	return d
}

// sqDist is the squared distance between the stretches of m points
// ending at a and b.
func sqDist(x []float64, a, b, m int) float64 {
	sum := 0.0
	for k := range m {
		e := x[a-k] - x[b-k]
		sum += e * e
	}
	return sum
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
