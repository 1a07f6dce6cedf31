package forecast

import (
	"math"
	"sort"

	"github.com/casebook/casebook/metrics"
)

// How often a series itself goes as far as a run.
//
// The band's z assumes normal noise, which intermittent and bursty series
// (errors, queue depth, disk writes) do not have: most samples are equal
// and the bursts are many standard errors out. So the detector also asks
// how often the series went as far before. The depth of a run of k points
// is its shallowest point, m: its distance from the forecast on the run's
// side, in the series' own units (the standard error of a series that is
// zero most of the time swings by orders of magnitude from one fit to the
// next; its bursts do not). In the record of past one-step-ahead errors,
// every k-point window has such a depth; the windows beyond the band's
// current half-width form episodes, runs of such windows, each counted
// once at its deepest, so a day-long outage is one episode and not three
// hundred windows (runs declustering, as in peaks-over-threshold
// extreme-value analysis). The run's rate is how many episodes per day of
// record went at least m deep: counted when at least minEpisodes did, else
// from a generalised Pareto tail fitted to the excesses of the deeper half
// of the episodes over the shallower half's deepest (moment estimates),
// once there are 2*minTailEpisodes, else from an exponential tail of the
// few episodes' excesses over the band, and from the normal model the
// band assumes only when the record holds no episode. A run alerts when its rate is within the false-alert budget,
// DetectorOptions.FalsePerDay: a routine burst that recurs every other day
// has a rate of about 0.5 a day, and a burst far beyond the series' own
// bursts a small one.
//
// The record holds every judged point's error, alerts included, once it is
// recordDelay old: a burst the series makes every other day is its normal,
// whether or not the first few alerted, but the hours of an anomaly that
// builds up slowly do not make the rest of it look routine.

const (
	minEpisodes     = 3
	minTailEpisodes = 5
	// minRecordDays is how much record the rate needs before it is
	// trusted; with less, the normal model decides.
	minRecordDays = 1.0
)

// runDepths returns the depth of every k-point window of the errors e (in
// time order) on side s (+1 up, -1 down, 0 either): the smallest of
// s*e[i], or of |e[i]| for s = 0, over the window.
func runDepths(e []float64, k, s int) []float64 {
	if k < 1 || len(e) < k {
		return nil
	}
	at := func(i int) float64 {
		switch s {
		case 1:
			return e[i]
		case -1:
			return -e[i]
		}
		return math.Abs(e[i])
	}
	out := make([]float64, 0, len(e)-k+1)
	for i := 0; i+k <= len(e); i++ {
		m := at(i)
		for j := i + 1; j < i+k; j++ {
			m = math.Min(m, at(j))
		}
		out = append(out, m)
	}
	return out
}

// episodePeaks returns the deepest window of each episode: each maximal
// run of consecutive window depths beyond u.
func episodePeaks(depths []float64, u float64) []float64 {
	var peaks []float64
	in := false
	for _, d := range depths {
		switch {
		case d > u && in:
			peaks[len(peaks)-1] = math.Max(peaks[len(peaks)-1], d)
		case d > u:
			peaks, in = append(peaks, d), true
		default:
			in = false
		}
	}
	return peaks
}

// episodeRate is how many episodes a day, in days of record, went at least
// m deep, given the episodes' peaks beyond the band: counted with at least
// minEpisodes, else from a generalised Pareto tail of the peaks' excesses
// over their median (peaks over threshold: the median keeps half the
// peaks for the fit and puts the threshold among them, so bursts of one
// size give a short tail and bursts of every size a long one), once there
// are 2*minTailEpisodes, else from an exponential tail of the peaks'
// excesses over the band's half-width u. ok is false with no episode.
func episodeRate(peaks []float64, u, m, days float64) (rate float64, ok bool) {
	if days <= 0 {
		return 0, false
	}
	ge := 0
	for _, p := range peaks {
		if p >= m {
			ge++
		}
	}
	if ge >= minEpisodes {
		return float64(ge) / days, true
	}
	if len(peaks) == 0 {
		return 0, false
	}
	if len(peaks) < 2*minTailEpisodes {
		// Too few episodes for a shape: an exponential tail of their
		// excesses over the band (a Pareto tail of shape 0). A short
		// record of a bursty series still says how large its bursts
		// run, which the normal model, many orders of magnitude too
		// confident for such a series, does not.
		var mean float64
		for _, p := range peaks {
			mean += p - u
		}
		mean /= float64(len(peaks))
		base := float64(len(peaks)) / days
		if m <= u || mean <= 0 {
			return base, true
		}
		return base * math.Exp(-(m-u)/mean), true
	}
	s := append([]float64(nil), peaks...)
	sort.Float64s(s)
	top := s[len(s)/2:]
	u = s[len(s)/2-1]
	var mean, sq float64
	for _, p := range top {
		mean += p - u
		sq += (p - u) * (p - u)
	}
	nu := len(top)
	base := float64(nu) / days
	if m <= u {
		return base, true
	}
	mean /= float64(nu)
	if mean <= 0 {
		return 0, true // no episode ever went beyond u
	}
	vari := sq/float64(nu) - mean*mean
	// Method-of-moments shape, clipped to [0, 0.5]: an exponential tail
	// at 0, heavy tails up to finite variance.
	xi := 0.0
	if vari > 0 {
		xi = math.Min(math.Max(0.5*(1-mean*mean/vari), 0), 0.5)
	}
	sigma := mean * (1 - xi)
	x := m - u
	if xi == 0 {
		return base * math.Exp(-x/sigma), true
	}
	return base * math.Pow(1+xi*x/sigma, -1/xi), true
}

// normalRunProb is the probability of k independent standard normal
// points all at least m out on one side (both sides when either is 1).
func normalRunProb(m float64, k int, either bool) float64 {
	p := 0.5 * math.Erfc(m/math.Sqrt2)
	if either {
		p *= 2
	}
	return math.Pow(math.Min(p, 1), float64(k))
}

// maxRunPoints caps the points of a run its probability is judged on, and
// recordPoints the record of past errors it is judged against (two weeks
// at 5-minute data, 56 days at hourly data, 2.8 days at 1-minute data).
const (
	maxRunPoints = 60
	recordPoints = 4032
	recordDelay  = 86400 // seconds
)

// remember queues a judged point's error for the record, and moves those
// older than recordDelay into it.
func (st *seriesState) remember(p obs) {
	st.pending = append(st.pending, p)
	i := 0
	for i < len(st.pending) && st.pending[i].t <= p.t-recordDelay {
		st.record.add(st.pending[i], recordPoints)
		i++
	}
	if i > 0 {
		st.pending = append(st.pending[:0], st.pending[i:]...)
	}
}

// errors returns the ring's errors in time order.
func (r *ring) errors() []float64 {
	out := make([]float64, 0, len(r.pts))
	for i := range r.pts {
		out = append(out, r.pts[(r.next+i)%len(r.pts)].e)
	}
	return out
}

// runDepth returns the current run's last k points (at most
// maxRunPoints), its side (+1 up, -1 down, 0 either, for a run that swung
// across the band) and its depth m: its shallowest point's distance from
// the forecast on that side. k is 0 when there is no run.
func (st *seriesState) runDepth() (k, side int, m float64) {
	k = min(len(st.runZ), maxRunPoints)
	if k == 0 {
		return 0, 0, 0
	}
	side = 1
	if st.alertDir == metrics.Down {
		side = -1
	}
	if st.swung {
		side = 0
	}
	m = math.Inf(1)
	for _, z := range st.runZ[len(st.runZ)-k:] {
		switch side {
		case 1:
			m = math.Min(m, z)
		case -1:
			m = math.Min(m, -z)
		default:
			m = math.Min(m, math.Abs(z))
		}
	}
	return k, side, m
}

// runRate is how many runs as deep as the current one over its last
// points (at most maxRunPoints) the series made a day in its record, or,
// before the record has enough episodes, the rate the normal model gives
// runs of that depth at the series' sampling interval.
func (d *Detector) runRate(st *seriesState, hw float64) float64 {
	k, side, m := st.runDepth()
	if k == 0 || st.interval <= 0 {
		return math.NaN()
	}
	perDay := 86400 / float64(st.interval)
	e := st.record.errors()
	if days := float64(len(e)) / perDay; days >= minRecordDays {
		if r, ok := episodeRate(episodePeaks(runDepths(e, k, side), hw), hw, m, days); ok {
			return r
		}
	}
	if hw <= 0 {
		return 0
	}
	return normalRunProb(m*d.opts.Model.withDefaults().Z/hw, k, side == 0) * perDay
}

// runProb is the probability of a run as deep as the current one under
// the series' own record: of the record's windows of as many points on
// the run's side, the share at least as deep, counted as a conformal
// p-value, (1 + windows as deep) / (1 + windows). For a series that
// behaves as its record did, P(prob <= a) <= a for every a, whatever the
// shape of its noise (zero-inflated, bursty, heavy-tailed), so the number
// is calibrated where the band's normal z is not; it cannot go below
// 1 / (1 + windows), about 2.5e-4 with a full record. Before the record
// covers minRecordDays, it is the normal model's probability of the run
// (the band's half-width hw is Z standard errors), which is not
// calibrated for such series.
func (d *Detector) runProb(st *seriesState, hw float64) float64 {
	k, side, m := st.runDepth()
	if k == 0 || st.interval <= 0 {
		return math.NaN()
	}
	e := st.record.errors()
	if float64(len(e))*float64(st.interval)/86400 >= minRecordDays {
		return conformalP(runDepths(e, k, side), m)
	}
	if hw <= 0 {
		return 1
	}
	return normalRunProb(m*d.opts.Model.withDefaults().Z/hw, k, side == 0)
}

// conformalP is the conformal p-value of x among past scores: (1 + the
// scores at least x) / (1 + the scores).
func conformalP(scores []float64, x float64) float64 {
	ge := 0
	for _, s := range scores {
		if s >= x {
			ge++
		}
	}
	return float64(1+ge) / float64(1+len(scores))
}

// improbable reports whether the current run's rate is within the
// false-alert budget, FalsePerDay. It counts each probable run once.
func (d *Detector) improbable(st *seriesState) bool {
	b := d.budget(st)
	if b <= 0 || math.IsNaN(st.runP) {
		return true
	}
	if st.runP <= b {
		return true
	}
	if !st.probable {
		st.stats.Probable++
		st.probable = true
	}
	return false
}

// budget is the false-alert budget per day that applies to the series:
// FalsePerDay when set, else BurstyPerDay for a bursty series, else none
// (0).
func (d *Detector) budget(st *seriesState) float64 {
	switch {
	case d.opts.FalsePerDay > 0:
		return d.opts.FalsePerDay
	case st.bursty && d.opts.BurstyPerDay > 0:
		return d.opts.BurstyPerDay
	}
	return 0
}

// rareEnough reports whether the current run's probability under the
// series' record is within MaxProb. It counts each probable run once, as
// improbable does.
func (d *Detector) rareEnough(st *seriesState) bool {
	if d.opts.MaxProb <= 0 || math.IsNaN(st.band.Prob) || st.band.Prob <= d.opts.MaxProb {
		return true
	}
	if !st.probable {
		st.stats.Probable++
		st.probable = true
	}
	return false
}
