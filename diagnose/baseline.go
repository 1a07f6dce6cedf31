package diagnose

import (
	"math"
	"sort"
	"time"

	"github.com/casebook/casebook/internal/robust"
	"github.com/casebook/casebook/metrics"
)

// Baseline tuning. A z-score beyond AnomalyZ in a metric's bad direction is
// an anomaly. History shorter than minHistory gives no z at all: with two
// points there is no honest estimate of spread.
const (
	AnomalyZ   = 3.0
	minHistory = 3
	// robustBelow is the history length under which the median and MAD are
	// used instead of the mean and standard deviation.
	robustBelow = 12
	// outlierRatio: when the standard deviation exceeds the MAD-based scale
	// by this factor, the history holds outliers (a spike, a gap filled with
	// zeros) and the robust estimate is used.
	outlierRatio = 1.6
	// relFloor is the smallest scale relative to the baseline level: a flat
	// history must not make a 1% wiggle look like a 10-sigma event. See
	// relFloorOf for the units where it differs.
	relFloor = 0.05
	// maxZ bounds reported z-scores so JSON stays readable.
	maxZ = 1000
)

// absFloor is the smallest scale per metric in the metric's own unit, for
// baselines near zero where the relative floor vanishes.
func absFloor(m metrics.Metric) float64 {
	switch m.ID {
	case metrics.ErrorRate:
		return 0.004
	case metrics.PreemptionRate:
		return 0.05
	case metrics.KVCacheUsage:
		// One KV block of a few tens of thousands: small caches-in-use are
		// common at low load, and their growth is the pressure signal.
		return 0.001
	}
	switch m.Unit {
	case "ms":
		return 2
	case "req/s":
		return 0.2
	case "tok/s":
		return 5
	case "count":
		return 1
	case "tokens":
		return 8
	case "ratio":
		return 0.02
	case "MHz":
		return 15
	case "W":
		return 5
	case "C":
		return 1.5
	case "1/s":
		return 0.05
	}
	return 1e-6
}

// relFloorOf is the relative scale floor of a metric. Clocks are read
// exactly and sit flat at their target, so a 1% step is already real;
// Celsius is not a ratio scale, so temperature has only its absolute floor.
func relFloorOf(m metrics.Metric) float64 {
	switch m.Unit {
	case "MHz":
		return 0.01
	case "C":
		return 0
	}
	return relFloor
}

// stats is the location and scale of one history.
type stats struct {
	n      int
	center float64 // mean, or median when robust
	// up and down are the scales above and below the center (equal today;
	// kept apart so a skew-aware scale can slot in).
	up, down   float64
	robust, ok bool
}

// estimate computes a floored location and scale for hist. buf is scratch
// space of at least len(hist) entries; it is overwritten.
//
// Normally the mean and standard deviation. When the history is short, or
// its standard deviation is inflated by outliers (a spike, a gap filled with
// zeros), the median and 1.4826 x MAD instead, so a few bad points cannot
// mask a real change. Either scale is floored (see absFloor and relFloor).
func estimate(hist []float64, floor, rel float64, buf []float64) stats {
	st := stats{n: len(hist)}
	if len(hist) == 0 {
		return st
	}
	var sum float64
	for _, x := range hist {
		sum += x
	}
	mean := sum / float64(len(hist))
	var ss float64
	for _, x := range hist {
		d := x - mean
		ss += d * d
	}
	std := 0.0
	if len(hist) > 1 {
		std = math.Sqrt(ss / float64(len(hist)-1))
	}
	st.center, st.up, st.down = mean, std, std
	if len(hist) < minHistory {
		return st
	}
	st.ok = true
	med, mad := medianMAD(hist, buf)
	madScale := 1.4826 * mad
	if len(hist) < robustBelow || std > outlierRatio*math.Max(madScale, floor) {
		st.robust = true
		st.center, st.up, st.down = med, madScale, madScale
	}
	f := math.Max(floor, rel*math.Abs(st.center))
	if st.up < f || math.IsNaN(st.up) {
		st.up = f
	}
	if st.down < f || math.IsNaN(st.down) {
		st.down = f
	}
	return st
}

// medianMAD returns the median of hist and the median absolute deviation
// from it, using buf as scratch. It selects rather than sorts: this runs
// for every metric of every snapshot.
func medianMAD(hist, buf []float64) (float64, float64) {
	b := append(buf[:0], hist...)
	med := median(b)
	for i, x := range b {
		b[i] = math.Abs(x - med)
	}
	return med, median(b)
}

// median returns the median of b, reordering b.
func median(b []float64) float64 { return robust.MedianInPlace(b) }

// deviation scores the current value x against st for a metric that goes
// bad in direction bad.
func deviation(x float64, st stats, bad metrics.Direction) Deviation {
	d := Deviation{Mean: st.center, Std: st.up}
	if st.n == 0 {
		d.Mean = x
	}
	if x < st.center {
		d.Std = st.down
	}
	if !st.ok || d.Std <= 0 {
		return d
	}
	z := (x - st.center) / d.Std
	if math.IsNaN(z) {
		z = 0
	}
	d.Z = math.Max(-maxZ, math.Min(maxZ, z))
	switch bad {
	case metrics.Up:
		d.Anomalous = d.Z > AnomalyZ
	case metrics.Down:
		d.Anomalous = d.Z < -AnomalyZ
	default:
		d.Anomalous = math.Abs(d.Z) > AnomalyZ
	}
	return d
}

// Deviations returns the deviation of every catalog id present in s.Current
// from its history. The baseline is the mean and standard deviation of the
// history, or its median and MAD when the history is short or holds
// outliers; the scale never drops below a per-metric floor. Ids with fewer
// than three history points get their mean but a zero z and are never
// anomalous.
//
// History points from the last RecentWindow before s.At are not part of
// the baseline (see SplitRecent).
func Deviations(s metrics.Snapshot) map[string]Deviation {
	out, _ := deviationsAndCounts(s)
	return out
}

// RecentWindow is how far before the snapshot's time a history point is
// recent rather than baseline: a fault's first minutes would otherwise
// pull the baseline towards the fault. The recent points tell the order
// in which the metrics moved (see explain.go).
const RecentWindow = 5 * time.Minute

// SplitRecent returns s with only its baseline history (points older than
// RecentWindow before s.At, and points with no time) and the recent
// points, oldest first. A snapshot with no time has no recent points.
func SplitRecent(s metrics.Snapshot) (metrics.Snapshot, []metrics.Point) {
	if s.At.IsZero() {
		return s, nil
	}
	cut := s.At.Add(-RecentWindow)
	n := 0
	for _, p := range s.History {
		if !p.At.IsZero() && !p.At.Before(cut) {
			n++
		}
	}
	if n == 0 {
		return s, nil
	}
	base := make([]metrics.Point, 0, len(s.History)-n)
	recent := make([]metrics.Point, 0, n)
	for _, p := range s.History {
		if !p.At.IsZero() && !p.At.Before(cut) {
			recent = append(recent, p)
		} else {
			base = append(base, p)
		}
	}
	sort.SliceStable(recent, func(i, j int) bool { return recent[i].At.Before(recent[j].At) })
	s.History = base
	return s, recent
}

// deviationsAndCounts is Deviations that also returns, per id present in
// s.Current, how many history points carried it.
func deviationsAndCounts(s metrics.Snapshot) (map[string]Deviation, map[string]int) {
	s, _ = SplitRecent(s)
	return newHistoryBaseline(s.History).deviations(s.Current)
}

// historyBaseline is the baseline estimate of every catalog metric over
// one history, so that several current values (a snapshot's and its
// recent points') are scored against it without estimating it again.
type historyBaseline struct {
	stats map[string]stats
	// rps is the history's median throughput, 0 when unknown.
	rps float64
}

func newHistoryBaseline(history []metrics.Point) historyBaseline {
	b := historyBaseline{stats: make(map[string]stats, len(metrics.Catalog))}
	hist := make([]float64, 0, len(history))
	buf := make([]float64, len(history))
	for _, m := range metrics.Catalog {
		hist = hist[:0]
		for _, p := range history {
			if v, ok := p.Values.Get(m.ID); ok {
				hist = append(hist, v)
			}
		}
		b.stats[m.ID] = estimate(hist, absFloor(m), relFloorOf(m), buf)
		if m.ID == metrics.ThroughputRPS && len(hist) >= 3 {
			copy(buf, hist)
			b.rps = math.Max(0, median(buf[:len(hist)]))
		}
	}
	return b
}

// deviations scores every catalog id present in cur against the baseline
// and returns, per id, how many history points carried it.
func (b historyBaseline) deviations(cur metrics.Values) (map[string]Deviation, map[string]int) {
	out := make(map[string]Deviation, len(cur))
	counts := make(map[string]int, len(cur))
	fewer := b.fewerRequests(cur)
	for _, m := range metrics.Catalog {
		x, ok := cur.Get(m.ID)
		if !ok {
			continue
		}
		st := b.stats[m.ID]
		if perRequest[m.ID] && fewer < 1 {
			// The current value averages fewer requests than each
			// baseline minute did, so it scatters more: the standard
			// error of a mean grows as one over the root of its count.
			st.up /= math.Sqrt(fewer)
			st.down /= math.Sqrt(fewer)
		}
		out[m.ID] = deviation(x, st, m.Bad)
		counts[m.ID] = st.n
	}
	return out, counts
}

// perRequest lists the metrics that are means or quantiles over the
// requests finished in the window: their noise depends on how many there
// were.
var perRequest = map[string]bool{
	metrics.GatewayE2E: true, metrics.E2E: true, metrics.E2EP99: true, metrics.TTFT: true,
	metrics.TTFTP99: true, metrics.TPOT: true, metrics.TPOTP99: true, metrics.QueueTime: true,
	metrics.PrefillTime: true, metrics.DecodeTime: true, metrics.MeanPromptTokens: true,
}

// fewerRequests is cur's request count relative to the baseline's typical
// minute (throughput now over its history median), capped at 1; 1 when
// either is unknown.
func (b historyBaseline) fewerRequests(cur metrics.Values) float64 {
	now, ok := cur.Get(metrics.ThroughputRPS)
	if !ok || b.rps <= 0 {
		return 1
	}
	// A window with no finished request has no per-request values at
	// all; floor the ratio so a near-idle minute is not silenced.
	return math.Max(0.01, math.Min(1, now/b.rps))
}

// derived is a quantity computed from two catalog metrics at every instant
// (a gap, a share, a ratio), scored against its own history like a metric.
type derived struct {
	value float64
	dev   Deviation
	ok    bool
}

// deriveDeviation evaluates f on the current values and on every history
// point where it is defined, and scores the current value against that
// derived history. floor is the smallest scale; bad the bad direction.
func deriveDeviation(s metrics.Snapshot, f func(metrics.Values) (float64, bool), floor float64, bad metrics.Direction) derived {
	x, ok := f(s.Current)
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		return derived{}
	}
	hist := make([]float64, 0, len(s.History))
	for _, p := range s.History {
		if v, ok := f(p.Values); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			hist = append(hist, v)
		}
	}
	buf := make([]float64, len(hist))
	return derived{value: x, dev: deviation(x, estimate(hist, floor, relFloor, buf), bad), ok: true}
}
