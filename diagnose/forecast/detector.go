package forecast

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// DetectorOptions configures a Detector. The zero value means the defaults
// documented on each field.
type DetectorOptions struct {
	// Scope is copied into every alert.
	Scope metrics.Scope
	// Consecutive is how many points in a row must leave the band in the
	// bad direction to raise an alert (default 3: three minutes at
	// 1-minute data). For, when set, replaces it.
	Consecutive int
	// For, when positive, sets the run per series by time, like a
	// Prometheus rule's "for": as many points in a row as cover For at
	// the series' inferred sampling interval, and never fewer than two,
	// since one sample alone may be an artefact of its collection (For
	// 3m: three points at 1-minute data, two at 5-minute or hourly data),
	// unless it is deep enough to stand alone (SingleZ).
	For time.Duration
	// SingleZ applies with For set, on a series sampled no more often
	// than For: one sample then spans the whole of For, so it alerts
	// alone when it is at least SingleZ standard errors out. The default
	// is the depth as improbable, for normal noise, as three points in a
	// row at the band's edge (the default run at 1-minute data): the z
	// whose one-sided tail is that of the band's Z, cubed (5.85 at Z=3).
	// Negative turns single-sample alerts off.
	SingleZ float64
	// EchoZ guards the Consecutive rule against autocorrelated noise: when
	// recent one-step-ahead errors are correlated (lag-1 correlation rho),
	// one large shock decays over several points, and a run only fires once
	// its last point is EchoZ conditional standard errors beyond the decay
	// of its first, (z_k - rho^k z_0) / sqrt(1 - rho^2k) >= EchoZ, so a
	// sustained shift fires and a decaying shock does not (default 2;
	// negative turns the guard off).
	EchoZ float64
	// Clear is how many points in a row back inside the band end an alert
	// (default 5, at least Consecutive), so an anomaly that hovers at the
	// band's edge stays one alert.
	Clear int
	// ClearFor, with For set, replaces Clear by a duration at the
	// series' own sampling interval: an alert ends once the series has
	// been back inside the band for ClearFor, and never on fewer than
	// one point (default 5 minutes, Clear at 1-minute data). Counted in
	// points, an hourly series would hold an alert open for five hours
	// after the anomaly ended and miss the next one.
	ClearFor time.Duration
	// Refit is how old a model may get before it is refitted (default 1 h).
	Refit time.Duration
	// History is how much past data each series keeps for fitting
	// (default 14 days: two weekly cycles).
	History time.Duration
	// MaxPoints caps the history per series whatever its sampling rate
	// (default 40,320: four weeks at 1-minute data, 11 hours at 1-second
	// data), which bounds memory at about 1 MiB and a refit at about
	// 15 ms per series.
	MaxPoints int
	// Warmup is the number of points a series needs before it can alert
	// (default 30).
	Warmup int
	// ShiftPoints is how many points in a row outside the band on one side
	// count as a persistent level shift rather than an anomaly; the series
	// is then refitted on the new level and any alert ends with a message
	// saying so (default 240: four hours at 1-minute data). A series
	// that then returns to the level it left has ended the episode: the
	// step is dropped and the return does not alert.
	ShiftPoints int
	// ShiftFor, with For set, replaces ShiftPoints by a duration at the
	// series' own sampling interval (default 4 h, ShiftPoints at 1-minute
	// data), so an hourly series adopts a lasting new level after hours
	// rather than ten days, and never before a run could alert.
	ShiftFor time.Duration
	// ShiftAlerts raises an alert when a level shift in a bad direction
	// that no alert covered is absorbed. FalsePerDay, RoutinePerDay and
	// NoveltyRank judge a run by the series' past bursts, which can hold
	// a transient as deep; a level held for ShiftFor is a change of
	// regime whatever the bursts did (default off: the shift is only
	// reported, as Shifted).
	ShiftAlerts bool
	// LocalWindow is how many recent points, taken while no alert is
	// open, give the local correction: the median of their forecast
	// errors is added to the forecast, so a series that runs a little
	// above or below its seasonal shape for hours does not alert on it
	// (default 60; negative turns the correction off).
	LocalWindow int
	// CalibrationWindow is how many recent one-step-ahead errors calibrate
	// the band: when their robust spread exceeds the model's in-sample
	// standard error, the band widens by the ratio, up to 4 times
	// (default 1440; negative turns calibration off).
	CalibrationWindow int
	// RoutinePerDay: a series that made excursions at least as deep (less
	// the band's half-width, or the spread of its excursions' depths when
	// wider), in the same direction, this often over the last week (on average per
	// day, counting only days it has been observed, from the second day
	// on) is doing what it routinely does, such as a batch job's bursts;
	// such an excursion does not alert, and a deeper one still does
	// (default 2; negative turns the rule off). So is one that recurs
	// at the same time of day (within an hour) on at least half of the
	// last seven days the series was observed, and on two at least, such
	// as a nightly job the daily seasonality is too smooth to follow.
	RoutinePerDay float64
	// FalsePerDay is the budget of false alerts per series and day: a
	// run alerts only when the series made runs as deep at most this
	// often a day in its own record (see tail.go: episodes of as many
	// points at least as far out, counted once each, with a Pareto tail
	// beyond the deepest; the normal model's rate before the record has
	// enough). Routine bursts of an intermittent or heavy-tailed series
	// are frequent in its record however far out the band puts them.
	// Zero or negative (the default) turns the rule off: on the public
	// labelled sets it trades recall for precision (README).
	FalsePerDay float64
	// MaxProb, when positive, lets a run alert only when its probability
	// under the series' own record (Alert.Prob, a conformal p-value) is at
	// most MaxProb: for a series behaving as in its record, at most a
	// share MaxProb of its runs long enough to alert would. Zero (the
	// default) turns the rule off.
	MaxProb float64
	// BurstyPerDay is the false-alert budget per day for series whose
	// history is intermittent or heavy-tailed (bursty.go) when FalsePerDay
	// is not set: such a series' run alerts only when the series made runs
	// as deep at most this often a day in its own record, as with
	// FalsePerDay; other series keep their band alone. Zero or negative
	// (the default) turns it off: on the public labelled sets it trades
	// held-out recall for precision, and on the simulator, whose metrics
	// have an anomaly a day, it finds the anomalies of zero-inflated
	// metrics routine (README).
	BurstyPerDay float64
	// NoveltyRank, when positive, turns on the shape test (novelty.go):
	// each stretch of NoveltySpan is compared with every earlier stretch
	// of the series, and its distance to the nearest (in the series'
	// units) is read against the same distances of the series' past
	// stretches. A run out of the band then alerts only when some
	// stretch ending in it is farther from its nearest earlier match than
	// the share NoveltyRank of past stretches were from theirs (0.5 to
	// 0.999): a burst the series has made before has a near match, a
	// failure usually has none. Zero (the default) turns it off.
	NoveltyRank float64
	// NoveltyAlone, with NoveltyRank set, also raises an alert, in band
	// or out of it, when a stretch is NoveltyAlone times farther from
	// its nearest earlier match than that quantile: a shape the series
	// has never made, such as a flat line where it always moved, or a
	// slow drift, that the band alone misses. Zero (the default) turns
	// it off.
	NoveltyAlone float64
	// NoveltySustain, with NoveltyAlone, is how many spans (NoveltySpan
	// at the series' sampling interval) of a novel episode's stretches
	// must be beyond NoveltyAlone, in all, before it alerts: one odd
	// point makes one span of novel stretches as they slide over it,
	// new behaviour (a changed pattern, a drift, a flat line) keeps
	// making them. An episode ends after a whole span of familiar
	// stretches. Zero (the default) alerts on the first.
	NoveltySustain float64
	// NoveltySpan is the stretch of time whose shape the novelty test
	// compares, in points at the series' sampling interval and never
	// fewer than two (default 30 minutes).
	NoveltySpan time.Duration
	// Model configures the fits. Its AbsFloor, when zero, comes from the
	// metric's unit.
	Model Options
	// Lookup resolves a metric id to its catalog entry for the bad
	// direction and unit (default metrics.Lookup). Unknown ids alert in
	// both directions with no unit floor.
	Lookup func(id string) (metrics.Metric, bool)
}

func (o DetectorOptions) withDefaults() DetectorOptions {
	if o.Consecutive <= 0 {
		o.Consecutive = 3
	}
	if o.EchoZ == 0 {
		o.EchoZ = 2
	}
	if o.Clear <= 0 {
		o.Clear = 5
	}
	if o.Clear < o.Consecutive {
		o.Clear = o.Consecutive
	}
	if o.ClearFor <= 0 {
		o.ClearFor = 5 * time.Minute
	}
	if o.Refit <= 0 {
		o.Refit = time.Hour
	}
	if o.History <= 0 {
		o.History = 14 * Day
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 40320
	}
	if o.Warmup <= 0 {
		o.Warmup = 30
	}
	if o.ShiftPoints <= 0 {
		o.ShiftPoints = 240
	}
	if o.ShiftFor <= 0 {
		o.ShiftFor = 4 * time.Hour
	}
	if o.LocalWindow == 0 {
		o.LocalWindow = 60
	}
	if o.RoutinePerDay == 0 {
		o.RoutinePerDay = 2
	}
	if o.CalibrationWindow == 0 {
		o.CalibrationWindow = 1440
	}
	if o.ShiftPoints <= o.Consecutive {
		o.ShiftPoints = o.Consecutive + 1
	}
	if o.Lookup == nil {
		o.Lookup = metrics.Lookup
	}
	if o.SingleZ == 0 {
		o.SingleZ = equalTailZ(o.Model.withDefaults().Z, 3)
	}
	if o.NoveltySpan <= 0 {
		o.NoveltySpan = 30 * time.Minute
	}
	return o
}

// equalTailZ is the z whose one-sided normal tail equals that of z, n
// times over: the depth of one point as improbable as n independent
// points at z.
func equalTailZ(z float64, n int) float64 {
	tail := math.Pow(0.5*math.Erfc(z/math.Sqrt2), float64(n))
	return math.Sqrt2 * math.Erfcinv(2*tail)
}

// State is what an Alert reports.
type State string

// Alert states.
const (
	// Firing: the series has left its band in the bad direction for
	// Consecutive points.
	Firing State = "firing"
	// Resolved: a firing series is back in its band for Clear points,
	// or its departure turned out to be a persistent level shift (the
	// message says which).
	Resolved State = "resolved"
	// Shifted: a persistent level shift that no alert covered was
	// absorbed by a refit (in the good direction, or any direction
	// without ShiftAlerts); informational.
	Shifted State = "shifted"
)

// Alert is one detector event for one metric.
type Alert struct {
	Scope    metrics.Scope
	Metric   string
	State    State
	Start    time.Time // first point of the out-of-band run
	At       time.Time // the point that produced this event
	Value    float64
	Forecast float64
	Lower    float64
	Upper    float64
	// Direction is the side the value left the band on: Up or Down.
	Direction metrics.Direction
	// Z is the value's distance from the forecast in robust standard
	// errors (signed).
	Z float64
	// P is how many runs as deep as the alerting one the series made a
	// day (see DetectorOptions.FalsePerDay): the chance of one in a day
	// of normal operation, for rates well below 1; 0 when not judged
	// (FalsePerDay off).
	P float64
	// Prob is the probability of a run as deep as the alerting one under
	// the series' own record of forecast errors (a conformal p-value,
	// calibrated whatever the shape of the noise; see runProb), set on
	// Firing events; the normal model's while the record is young.
	Prob    float64
	Message string
}

// String renders the alert on one line.
func (a Alert) String() string {
	s := fmt.Sprintf("%s %s %s value=%.6g forecast=%.6g band=%.6g..%.6g z=%+.1f p=%.2g",
		a.At.UTC().Format(time.RFC3339), a.State, a.Metric, a.Value, a.Forecast, a.Lower, a.Upper, a.Z, a.P)
	if a.Message != "" {
		s += " (" + a.Message + ")"
	}
	return s
}

// Stats counts what a series' input looked like.
type Stats struct {
	Points     int // accepted points
	NaN        int // NaN or infinite values skipped
	OutOfOrder int // duplicate or earlier timestamps skipped
	Gaps       int // gaps that reset the consecutive count
	Refits     int
	Shifts     int
	Routine    int // excursions not alerted because the series makes them routinely
	Probable   int // runs not alerted because the series' record makes them probable
	Familiar   int // runs not alerted because a stretch like them happened before (NoveltyRank)
}

// Detector raises alerts when a series leaves its seasonal forecast band in
// its bad direction. It keeps a short history per metric and refits each
// model on past data only. It is safe for concurrent use.
type Detector struct {
	opts   DetectorOptions
	mu     sync.Mutex
	series map[string]*seriesState
}

// NewDetector returns a detector with the options' defaults filled in.
func NewDetector(opts DetectorOptions) *Detector {
	return &Detector{opts: opts.withDefaults(), series: map[string]*seriesState{}}
}

type seriesState struct {
	metric   metrics.Metric
	known    bool
	opts     Options
	hist     []point
	head     int // hist[head:] is live
	model    *Model
	fittedAt int64
	fitN     int
	last     int64
	hasLast  bool
	interval int64 // estimated sampling interval, seconds
	diffs    []int64
	shifts   []time.Time

	firing   bool
	badRun   int
	zFirst   float64 // z of the run's first point
	swung    bool    // the run crossed from one side of the band to the other
	rho      float64 // lag-1 correlation of recent one-step-ahead errors
	badStart int64
	inRun    int
	outRun   int
	outSide  int
	step     step // the latest level shift absorbed
	outStart int64
	outVals  []float64
	alertDir metrics.Direction
	stats    Stats
	band     Band // the last judged point

	// Recent excursions (runs of at least Consecutive points out of the
	// band in a bad direction, alerted or not), for the routine rule.
	excursions []excursion
	runPeak    float64   // the current run's largest distance from the forecast
	routine    bool      // the current run was found routine
	runZ       []float64 // the current run's errors, in the series' units
	runP       float64   // the current run's daily rate, NaN when not judged
	bursty     bool      // the history looks intermittent or heavy-tailed (bursty.go)
	probable   bool      // the current run was found probable

	// The shape test (NoveltyRank), fed every point.
	nov         *novelty
	novRatio    float64 // the latest stretch's novelty ratio, NaN when not judged
	runNovelty  float64 // the current run's largest novelty ratio, NaN when none judged
	familiar    bool    // the current run was found familiar
	novRun      bool    // stretches are beyond NoveltyAlone
	novStart    bool    // ... and the latest point made the episode alert
	novQuiet    int     // points since the last stretch beyond NoveltyAlone
	novSeen     int     // stretches of the episode beyond NoveltyAlone
	novRaised   bool    // the episode has alerted
	novFrom     int64   // when the episode's first novel stretch began
	novFiring   bool    // the open alert was raised by NoveltyAlone
	shiftFiring bool    // the open alert was raised by an absorbed level shift (ShiftAlerts)

	// Local correction and calibration, fed while no alert is open.
	local    ring // recent points
	localErr []float64
	offset   float64
	calib    ring  // standardised one-step-ahead errors
	record   ring  // errors in the series' units of every judged point, alerts included
	pending  []obs // points not yet old enough for the record
	inflate  float64
}

// anomalous reports whether the series is in an anomaly: an alert is open
// and it is not one for a level shift, whose points are the new level.
func (st *seriesState) anomalous() bool {
	return st.firing && !st.shiftFiring
}

// step is a level shift the model absorbed: when it began and by how much
// the level moved.
type step struct {
	at    time.Time
	delta float64
}

// excursion is one past run out of the band: when it began, on which side,
// and how far from the forecast it went.
type excursion struct {
	t    int64
	dir  metrics.Direction
	peak float64
}

// obs is a point with its error against the current model.
type obs struct {
	t    int64
	v, e float64
}

// ring is a fixed-capacity ring of recent observations.
type ring struct {
	pts  []obs
	next int
}

func (r *ring) add(p obs, capacity int) {
	if capacity <= 0 {
		return
	}
	if len(r.pts) < capacity {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.next] = p
	r.next = (r.next + 1) % capacity
}

// Stats returns the input counters of one metric.
func (d *Detector) Stats(metric string) Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.series[metric]; ok {
		return st.stats
	}
	return Stats{}
}

// Model returns the current model of one metric, nil before the first fit.
func (d *Detector) Model(metric string) *Model {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.series[metric]; ok {
		return st.model
	}
	return nil
}

// Firing reports whether the metric has an open alert.
func (d *Detector) Firing(metric string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.series[metric]
	return ok && st.firing
}

// Band is how the detector judged one point: the forecast, the band and
// the value's distance from the forecast in standard errors.
type Band struct {
	At              time.Time
	Value, Forecast float64
	Lower, Upper, Z float64
	// P is the daily rate of runs as deep as the one this point belongs
	// to (Alert.P), NaN when the point is in no run, was not judged or
	// FalsePerDay is off.
	P float64
	// Prob is Alert.Prob of the run this point belongs to, NaN when the
	// point is in no run in the bad direction long enough to alert.
	Prob float64
	// Novelty is how far the stretch ending at this point is from its
	// nearest earlier match, over the NoveltyRank quantile of past
	// stretches' distances; NaN when NoveltyRank is off or the record
	// is young.
	Novelty float64
}

// LastBand returns how the metric's latest point was judged; false when no
// point has been judged yet (before the first fit and during warm-up).
func (d *Detector) LastBand(metric string) (Band, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.series[metric]
	if !ok || st.band.At.IsZero() {
		return Band{}, false
	}
	return st.band, true
}

// Observe feeds one point of one metric and returns an event when an alert
// opens or ends or the series shifted level. Points must come in time
// order: a duplicate or earlier timestamp, NaN or an infinite value is
// counted and skipped. The point is judged against a model fitted on
// earlier points only, and then added to the history.
func (d *Detector) Observe(metric string, t time.Time, v float64) (Alert, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st, ok := d.series[metric]
	if !ok {
		st = d.newSeries(metric)
		d.series[metric] = st
	}
	return d.observe(st, metric, t.Unix(), v)
}

func (d *Detector) newSeries(metric string) *seriesState {
	st := &seriesState{opts: d.opts.Model}
	st.metric, st.known = d.opts.Lookup(metric)
	if !st.known {
		st.metric = metrics.Metric{ID: metric, Bad: metrics.Both}
	}
	if st.opts.AbsFloor == 0 {
		st.opts.AbsFloor = UnitFloor(st.metric.Unit)
	}
	return st
}

func (d *Detector) observe(st *seriesState, metric string, sec int64, v float64) (Alert, bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		st.stats.NaN++
		return Alert{}, false
	}
	if st.hasLast && sec <= st.last {
		st.stats.OutOfOrder++
		return Alert{}, false
	}
	if st.hasLast {
		gap := sec - st.last
		st.noteDiff(gap)
		if st.interval > 0 && gap > 5*st.interval && gap > 2*60 {
			// A gap breaks runs: K points in a row must be K
			// consecutive samples.
			st.stats.Gaps++
			st.badRun, st.outRun, st.outVals = 0, 0, st.outVals[:0]
		}
		if time.Duration(gap)*time.Second > d.opts.History {
			st.hist, st.head, st.model = st.hist[:0], 0, nil
		}
	}
	st.last, st.hasLast = sec, true
	st.stats.Points++
	defer func() { st.append(point{t: sec, v: v, anom: st.anomalous()}, d.opts.History, d.opts.MaxPoints) }()
	d.feedNovelty(st, v)

	d.maybeRefit(st, sec)
	if st.model == nil || len(st.hist)-st.head < d.opts.Warmup {
		return Alert{}, false
	}
	at := time.Unix(sec, 0).UTC()
	if st.inflate == 0 {
		st.inflate = 1
	}
	f, hw := st.model.band(sec, st.offset, st.inflate)
	lo, hi := f-hw, f+hw
	defer d.learn(st, sec, v, f, hw)
	// After this point is judged: its own run must not explain it.
	defer st.remember(obs{sec, v, v - f})
	side := 0
	switch {
	case v > hi:
		side = 1
	case v < lo:
		side = -1
	}
	if side != 0 && st.reverts(v, f) {
		// Back at the level the latest shift left: that was one episode,
		// which has ended; refit without its step and judge the point
		// against the old level.
		d.dropStep(st, sec)
		f, hw = st.model.band(sec, st.offset, st.inflate)
		lo, hi = f-hw, f+hw
		side = 0
		switch {
		case v > hi:
			side = 1
		case v < lo:
			side = -1
		}
	}
	se := st.model.sigmaAtSec(sec) * st.inflate
	z := 0.0
	if se > 0 {
		z = (v - f) / se
	}
	st.band = Band{At: at, Value: v, Forecast: f, Lower: lo, Upper: hi, Z: z, P: math.NaN(), Prob: math.NaN(), Novelty: st.novRatio}
	mk := func(state State, start int64, dir metrics.Direction, msg string) Alert {
		p, prob := 0.0, 0.0
		if state == Firing && !math.IsNaN(st.runP) {
			p = st.runP
		}
		if state == Firing && !math.IsNaN(st.band.Prob) {
			prob = st.band.Prob
		}
		return Alert{Scope: d.opts.Scope, Metric: metric, State: state, Start: time.Unix(start, 0).UTC(),
			At: at, Value: v, Forecast: f, Lower: lo, Upper: hi, Direction: dir, Z: z, P: p, Prob: prob, Message: msg}
	}

	// Persistent departures on one side are level shifts, in either
	// direction: refit on the new level instead of alerting forever.
	if side != 0 && side == st.outSide {
		st.outRun++
	} else {
		st.outRun, st.outSide, st.outStart, st.outVals = 0, side, sec, st.outVals[:0]
		if side != 0 {
			st.outRun = 1
		}
	}
	if side != 0 {
		st.outVals = append(st.outVals, v)
	}
	if st.outRun >= d.shiftNeed(st) {
		msg := d.absorbShift(st, sec, v)
		wasFiring := st.firing
		start := st.outStart
		st.firing, st.badRun, st.inRun, st.outRun, st.outSide, st.outVals = false, 0, 0, 0, 0, st.outVals[:0]
		st.novFiring, st.shiftFiring = false, false
		if wasFiring {
			return mk(Resolved, start, st.alertDir, msg), true
		}
		if d.opts.ShiftAlerts && (st.metric.Bad == metrics.Both || side == int(st.metric.Bad)) {
			// The new level is the band's now: the alert ends at the
			// first points back inside it.
			st.firing, st.shiftFiring, st.badStart, st.alertDir = true, true, start, dirOf(side)
			return mk(Firing, start, st.alertDir, msg), true
		}
		return mk(Shifted, start, dirOf(side), msg), true
	}

	bad := side != 0 && (st.metric.Bad == metrics.Both || side == int(st.metric.Bad))
	// Depth is in the series' own units, not band widths: the band
	// widens and narrows over a week, the routine bursts do not.
	depth := math.Abs(v - f)
	if !st.firing {
		switch {
		case !bad:
			if st.badRun > 0 && d.qualifies(st) {
				d.noteExcursion(st, sec)
			}
			st.badRun = 0
		case st.badRun == 0:
			st.badRun, st.badStart, st.alertDir, st.zFirst, st.swung = 1, sec, dirOf(side), z, false
			st.runPeak, st.routine, st.probable = depth, false, false
			st.runNovelty, st.familiar = st.novRatio, false
			st.runZ = append(st.runZ[:0], v-f)
		default:
			// Only a Both metric can be bad on either side; a run
			// that swings across the band is still out of it.
			if dirOf(side) != st.alertDir {
				st.alertDir, st.swung = dirOf(side), true
			}
			st.badRun++
			st.runPeak = math.Max(st.runPeak, depth)
			st.runNovelty = maxKnown(st.runNovelty, st.novRatio)
			st.runZ = append(st.runZ, v-f)
		}
		st.runP = math.NaN()
		if bad && d.budget(st) > 0 {
			st.runP = d.runRate(st, hw)
			st.band.P = st.runP
		}
		if bad && d.qualifies(st) {
			st.band.Prob = d.runProb(st, hw)
		}
		if d.qualifies(st) && d.notEcho(st, z) && !d.isRoutine(st, sec, hw) && d.improbable(st) && d.rareEnough(st) && d.novelEnough(st) {
			st.firing, st.inRun = true, 0
			return mk(Firing, st.badStart, st.alertDir, ""), true
		}
		if dir, ok := d.novelAlone(st, v-f); ok {
			st.firing, st.inRun, st.novFiring, st.badRun = true, 0, true, 0
			st.badStart, st.alertDir = st.novFrom, dir
			return mk(Firing, st.badStart, dir, "a shape unlike any earlier stretch of the series"), true
		}
		return Alert{}, false
	}
	if bad && dirOf(side) == st.alertDir || st.novFiring && st.novRun {
		// An alert the shape test raised stays open while the stretches
		// stay unlike the series' past.
		st.inRun = 0
		st.runPeak = math.Max(st.runPeak, depth)
		return Alert{}, false
	}
	st.inRun++
	if st.inRun >= d.clearNeed(st) {
		d.noteExcursion(st, sec)
		st.firing, st.badRun, st.inRun, st.novFiring, st.shiftFiring = false, 0, 0, false, false
		return mk(Resolved, st.badStart, st.alertDir, ""), true
	}
	return Alert{}, false
}

// need is how many points in a row out of the band raise an alert on this
// series: Consecutive, or with For set, the points that cover For (at
// least two, fewer than ShiftPoints).
func (d *Detector) need(st *seriesState) int {
	if d.opts.For <= 0 || st.interval <= 0 {
		return d.opts.Consecutive
	}
	n := int((int64(d.opts.For/time.Second) + st.interval - 1) / st.interval)
	return min(max(n, 2), d.opts.ShiftPoints-1)
}

// clearNeed is how many points in a row back inside the band end an
// alert: Clear, or with For set, the points that cover ClearFor at the
// series' sampling interval (at least one).
func (d *Detector) clearNeed(st *seriesState) int {
	if d.opts.For <= 0 || st.interval <= 0 {
		return d.opts.Clear
	}
	n := int((int64(d.opts.ClearFor/time.Second) + st.interval - 1) / st.interval)
	return max(n, 1)
}

// reverts reports whether v, out of the band around f, is back nearer
// the level the latest absorbed shift left than the level it moved to,
// while the model still holds that shift's step.
func (st *seriesState) reverts(v, f float64) bool {
	s := st.step
	if s.delta == 0 || len(st.shifts) == 0 || !st.shifts[len(st.shifts)-1].Equal(s.at) {
		return false
	}
	// Nearer the old level than the new one.
	return (v-f)*s.delta < 0 && math.Abs(v-f) >= math.Abs(s.delta)/2
}

// dropStep ends the episode of the latest absorbed shift: the model
// loses its step. The episode's points stay in the history: if it
// recurs (a young series' first weekend), the seasonal terms learn it.
func (d *Detector) dropStep(st *seriesState, sec int64) {
	st.shifts = st.shifts[:len(st.shifts)-1]
	st.step = step{}
	// The local correction learnt the episode's level.
	st.local, st.offset = ring{}, 0
	st.outRun, st.outSide, st.outVals = 0, 0, st.outVals[:0]
	d.refit(st, sec)
}

// shiftNeed is how many points a departure lasts before it is a level
// shift: ShiftPoints, or with For set, the points that cover ShiftFor at
// the series' sampling interval, more than a run needs to alert.
func (d *Detector) shiftNeed(st *seriesState) int {
	if d.opts.For <= 0 || st.interval <= 0 {
		return d.opts.ShiftPoints
	}
	n := int((int64(d.opts.ShiftFor/time.Second) + st.interval - 1) / st.interval)
	return max(n, d.need(st)+1)
}

// qualifies reports whether the current run is long enough to alert, or
// began with a point deep enough to alert alone: with For set, on a series
// sampled no more often than For, one at least SingleZ standard errors out
// (see DetectorOptions.SingleZ).
func (d *Detector) qualifies(st *seriesState) bool {
	if st.badRun >= d.need(st) {
		return true
	}
	return st.badRun > 0 && d.opts.For > 0 && d.opts.SingleZ >= 0 && st.interval >= int64(d.opts.For/time.Second) &&
		math.Abs(st.zFirst) >= d.opts.SingleZ
}

// routineWindow is how far back the routine rule looks, and
// maxExcursions how many excursions a series remembers at most: a series
// that left its band more often than that in a week is routinely out of
// it, and its latest excursions are enough to show so.
const (
	routineWindow  = 7 * 86400
	maxExcursions  = 256
	dailyTolerance = 3600 // seconds: how far from the time of day a daily excursion may recur
)

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// noteExcursion records the run that just ended and forgets those older
// than the routine window or beyond maxExcursions.
func (d *Detector) noteExcursion(st *seriesState, sec int64) {
	keep := st.excursions[:0]
	for _, e := range st.excursions {
		if e.t >= sec-routineWindow {
			keep = append(keep, e)
		}
	}
	if len(keep) >= maxExcursions {
		keep = append(keep[:0], keep[len(keep)-maxExcursions+1:]...)
	}
	st.excursions = append(keep, excursion{t: st.badStart, dir: st.alertDir, peak: st.runPeak})
}

// isRoutine reports whether the current run is no deeper than excursions
// the series made at least RoutinePerDay times a day over the days of the
// routine window it has been observed, or at the same time of day (within
// dailyTolerance) on two days and at least half of those days. Depths are
// alike within the band's half-width hw, or within the spread of the
// series' own excursion depths when that is wider: bursts of a heavy-tailed
// series (bytes written, requests queued) vary far more from one to the
// next than the band is wide, and a burst is no news for being a little
// deeper than the last few. It counts each routine run once.
func (d *Detector) isRoutine(st *seriesState, sec int64, hw float64) bool {
	if d.opts.RoutinePerDay < 0 || len(st.hist) <= st.head {
		return false
	}
	span := min(sec-st.hist[st.head].t, routineWindow)
	if span < 86400 {
		return false
	}
	tol := math.Max(hw, st.depthSpread(sec))
	n := 0
	var days uint8 // bit k-1: an alike excursion k days ago, within an hour of the time of day
	for _, e := range st.excursions {
		if e.t >= sec-routineWindow && e.peak >= st.runPeak-tol && st.sameSide(e) {
			n++
			age := st.badStart - e.t
			k := (age + 43200) / 86400
			if k >= 1 && k <= 7 && abs64(age-k*86400) <= dailyTolerance {
				days |= 1 << (k - 1)
			}
		}
	}
	observed := min(span/86400, 7)
	daily := bits.OnesCount8(days)
	routine := float64(n) >= d.opts.RoutinePerDay*float64(span)/86400 ||
		daily >= 2 && int64(2*daily) >= observed
	if routine && !st.routine {
		st.stats.Routine++
	}
	st.routine = routine
	return routine
}

// sameSide reports whether excursion e left the band on the current
// run's side (either side, for a metric bad both ways).
func (st *seriesState) sameSide(e excursion) bool {
	return e.dir == st.alertDir || st.metric.Bad == metrics.Both
}

// depthSpread is the robust spread of the depths of the excursions on the
// current run's side within the routine window, 0 with fewer than three.
func (st *seriesState) depthSpread(sec int64) float64 {
	var peaks []float64
	for _, e := range st.excursions {
		if e.t >= sec-routineWindow && st.sameSide(e) {
			peaks = append(peaks, e.peak)
		}
	}
	if len(peaks) < 3 {
		return 0
	}
	return robustScale(peaks, median(peaks))
}

func dirOf(side int) metrics.Direction {
	if side > 0 {
		return metrics.Up
	}
	return metrics.Down
}

// absorbShift handles a persistent departure that began at st.outStart. A
// change of scale (a unit change such as seconds to milliseconds) restarts
// the history at the shift; a change of level adds a level step so the fit
// keeps its seasonal shape. It refits and returns the message for the event.
func (d *Detector) absorbShift(st *seriesState, sec int64, v float64) string {
	st.stats.Shifts++
	start := time.Unix(st.outStart, 0).UTC()
	post := append([]float64(nil), st.outVals...)
	newLevel := median(post)
	old := make([]float64, 0, len(st.hist)-st.head)
	for _, p := range st.hist[st.head:] {
		if p.t < st.outStart {
			old = append(old, p.v)
		}
	}
	oldLevel := median(old)
	ratio := math.Inf(1)
	if oldLevel != 0 && newLevel != 0 && (oldLevel > 0) == (newLevel > 0) {
		ratio = math.Max(newLevel/oldLevel, oldLevel/newLevel)
	}
	for i := st.head; i < len(st.hist); i++ {
		if st.hist[i].t >= st.outStart {
			st.hist[i].anom = false
		}
	}
	var msg string
	if ratio >= 5 || math.IsInf(ratio, 1) && oldLevel != 0 {
		// Keep only the points since the shift.
		kept := st.hist[:0]
		for _, p := range st.hist[st.head:] {
			if p.t >= st.outStart {
				kept = append(kept, p)
			}
		}
		st.hist, st.head, st.shifts = kept, 0, nil
		st.local, st.calib, st.record, st.pending, st.offset, st.inflate = ring{}, ring{}, ring{}, nil, 0, 1
		st.excursions = nil // depths in the old unit
		msg = fmt.Sprintf("scale change since %s: level %.6g -> %.6g (unit change?); forecast restarted from the new data",
			start.Format(time.RFC3339), oldLevel, newLevel)
	} else {
		st.shifts = append(st.shifts, start)
		if len(st.shifts) > 4 {
			st.shifts = st.shifts[len(st.shifts)-4:]
		}
		st.step = step{at: start, delta: newLevel - oldLevel}
		msg = fmt.Sprintf("level shift since %s: %.6g -> %.6g persisted %d points; refitted with a level step",
			start.Format(time.RFC3339), oldLevel, newLevel, len(post))
	}
	// The current point is appended after the refit; include the run.
	d.refit(st, sec)
	return msg
}

func (st *seriesState) noteDiff(gap int64) {
	if len(st.diffs) < 64 {
		st.diffs = append(st.diffs, gap)
	} else {
		st.diffs[st.stats.Points%64] = gap
	}
	// Re-estimate often while young, then every 64 points.
	if len(st.diffs) < 64 || st.stats.Points%64 == 0 {
		tmp := make([]int64, len(st.diffs))
		copy(tmp, st.diffs)
		sort.Slice(tmp, func(i, j int) bool { return tmp[i] < tmp[j] })
		st.interval = tmp[len(tmp)/2]
	}
}

// Interval returns the sampling interval the detector inferred for a
// metric (the median of recent gaps), 0 before the second point.
func (d *Detector) Interval(metric string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.series[metric]; ok {
		return time.Duration(st.interval) * time.Second
	}
	return 0
}

func (st *seriesState) append(p point, keep time.Duration, maxPoints int) {
	st.hist = append(st.hist, p)
	cut := p.t - int64(keep/time.Second)
	for st.head < len(st.hist) && st.hist[st.head].t < cut {
		st.head++
	}
	if n := len(st.hist) - st.head; n > maxPoints {
		st.head += n - maxPoints
	}
	if st.head > 1024 && st.head > len(st.hist)/2 {
		n := copy(st.hist, st.hist[st.head:])
		st.hist, st.head = st.hist[:n], 0
	}
}

func (d *Detector) maybeRefit(st *seriesState, sec int64) {
	n := len(st.hist) - st.head
	if n == 0 {
		return
	}
	due := st.model == nil ||
		sec-st.fittedAt >= int64(d.opts.Refit/time.Second) ||
		// Young series refit as their history doubles, so they move from
		// a level to a trend to a seasonal model quickly.
		(st.model.Kind() != KindSeasonal && n >= 2*st.fitN && n >= 8)
	if due {
		d.refit(st, sec)
	}
}

func (d *Detector) refit(st *seriesState, sec int64) {
	pts := st.hist[st.head:]
	// A seasonal model leaves alert periods out of its refits; a younger
	// one learns from everything it has, so that a poor early forecast
	// cannot keep itself alive.
	mature := st.model != nil && st.model.Kind() == KindSeasonal
	for _, p := range pts {
		if p.anom && mature {
			clean := make([]point, 0, len(pts))
			for _, q := range pts {
				if !q.anom {
					clean = append(clean, q)
				}
			}
			pts = clean
			break
		}
	}
	if len(pts) == 0 {
		st.model = nil
		return
	}
	opts := st.opts
	// A level step is kept for one weekly cycle: by then the history
	// after it holds a whole week, enough for the trend to carry the new
	// level. Kept longer, the steps at both ends of an excursion (the
	// first weekend a young series saw) would explain it away, and the
	// weekly terms could never learn it.
	live := st.shifts[:0]
	for _, t := range st.shifts {
		if sec-t.Unix() < int64(Week/time.Second) {
			live = append(live, t)
		}
	}
	st.shifts = live
	opts.Shifts = st.shifts
	st.model = fitSorted(pts, opts.withDefaults())
	st.fittedAt, st.fitN = sec, len(pts)
	vals := make([]float64, len(pts))
	for i, p := range pts {
		vals[i] = p.v
	}
	st.bursty = isBursty(vals)
	st.stats.Refits++
	d.recalibrate(st)
}

// learn feeds the calibration with the point's one-step-ahead error, and
// the local correction too when the point is inside the band, unless an
// alert is open (an anomaly must not teach the detector that it is
// normal, and a departure in the good direction must not move the band
// so that the return to normal looks like one in the bad direction). An
// open shift alert's points are the new normal and teach as usual.
func (d *Detector) learn(st *seriesState, sec int64, v, f, hw float64) {
	if st.anomalous() || st.model == nil {
		return
	}
	if v >= f-hw && v <= f+hw {
		st.local.add(obs{sec, v, v - f + st.offset}, d.opts.LocalWindow)
	}
	if se := st.model.sigmaAtSec(sec); se > 0 {
		st.calib.add(obs{sec, v, (v - f) / se}, d.opts.CalibrationWindow)
	}
	st.updateOffset()
}

// updateOffset sets the local correction to the median error of the
// recent points.
func (st *seriesState) updateOffset() {
	if len(st.local.pts) < 5 {
		st.offset = 0
		return
	}
	st.localErr = st.localErr[:0]
	for _, p := range st.local.pts {
		st.localErr = append(st.localErr, p.e)
	}
	st.offset = medianInPlace(st.localErr)
}

// recalibrate re-expresses the local errors against a new model and sets
// the band inflation from the recent one-step-ahead errors (their robust
// spread in units of the model's standard error, at least 1).
func (d *Detector) recalibrate(st *seriesState) {
	var buf [64]float64
	for i, p := range st.local.pts {
		st.local.pts[i].e = p.v - st.model.mean(p.t, buf[:])
	}
	st.updateOffset()
	st.inflate = 1
	if n := len(st.calib.pts); n >= 120 {
		u := make([]float64, n)
		for i, p := range st.calib.pts {
			u[i] = p.e
		}
		s := tailScale(u, median(u))
		st.inflate = math.Min(math.Max(s, 1), 4)
		st.rho = lag1(st.calib, d.opts.Model.withDefaults().Z)
	}
}

// lag1 is the lag-1 correlation of the ring's errors in time order, with
// errors clipped at +-clip so that a few large ones do not decide it,
// clamped to [0, 0.95].
func lag1(r ring, clip float64) float64 {
	n := len(r.pts)
	at := func(i int) float64 {
		v := r.pts[(r.next+i)%n].e
		return math.Max(-clip, math.Min(clip, v))
	}
	var num, den float64
	prev := at(0)
	den = prev * prev
	for i := 1; i < n; i++ {
		cur := at(i)
		num += cur * prev
		den += cur * cur
		prev = cur
	}
	if den == 0 {
		return 0
	}
	return math.Max(0, math.Min(0.95, num/den))
}

// notEcho reports whether the run's current point, at z, is more than the
// decaying echo of its first point under the recent lag-1 correlation.
func (d *Detector) notEcho(st *seriesState, z float64) bool {
	// A shock under positive correlation decays on its own side; a run
	// that swung across the band is no echo of its first point.
	if d.opts.EchoZ < 0 || st.rho <= 0 || st.badRun < 2 || st.swung {
		return true
	}
	r := math.Pow(st.rho, float64(st.badRun-1))
	sd := math.Sqrt(1 - r*r)
	if sd <= 0 {
		return true
	}
	excess := (z - r*st.zFirst) / sd
	if st.alertDir == metrics.Down {
		excess = -excess
	}
	return excess >= d.opts.EchoZ
}

// Group is the anomalies of one scope that fired in the same minute.
type Group struct {
	Scope   metrics.Scope
	Minute  time.Time // the minute, truncated, UTC
	Alerts  []Alert
	Metrics []string // the alerts' metrics, sorted
}

// GroupAlerts turns firing alerts into one group per scope and minute, so
// simultaneous anomalies of one scope open one incident. Events other than
// Firing are ignored. Groups come sorted by minute, then scope.
func GroupAlerts(alerts []Alert) []Group {
	type key struct {
		scope metrics.Scope
		min   int64
	}
	idx := map[key]int{}
	var out []Group
	for _, a := range alerts {
		if a.State != Firing {
			continue
		}
		m := a.At.UTC().Truncate(time.Minute)
		k := key{a.Scope, m.Unix()}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Group{Scope: a.Scope, Minute: m})
		}
		out[i].Alerts = append(out[i].Alerts, a)
		out[i].Metrics = append(out[i].Metrics, a.Metric)
	}
	for i := range out {
		sort.Strings(out[i].Metrics)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Minute.Equal(out[j].Minute) {
			return out[i].Minute.Before(out[j].Minute)
		}
		return out[i].Scope.String() < out[j].Scope.String()
	})
	return out
}
