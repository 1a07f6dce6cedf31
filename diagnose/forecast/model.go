package forecast

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/casebook/casebook/internal/robust"
	"github.com/casebook/casebook/metrics"
)

// Wall-clock periods of the seasonal terms.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// Options configures Fit. The zero value means the defaults documented on
// each field.
type Options struct {
	// DailyOrder is the number of Fourier pairs of the daily cycle
	// (default 6: the shortest harmonic has a 4 h period).
	DailyOrder int
	// WeeklyOrder is the number of Fourier pairs of the weekly cycle
	// (default 3).
	WeeklyOrder int
	// Changepoints is the number of trend changepoints, spread evenly over
	// the first ChangepointRange of the history (default 5).
	Changepoints int
	// ChangepointRange is the fraction of the history that may hold
	// changepoints (default 0.8), so the trend at the end, which is
	// extrapolated, rests on enough data.
	ChangepointRange float64
	// Z is the band half-width in robust standard errors (default 3).
	Z float64
	// MinSpan is the history span below which the model is a robust
	// level and spread only (default 3 h).
	MinSpan time.Duration
	// RelFloor is the smallest band half-width as a fraction of the
	// forecast's magnitude (default 0.02), so a near-constant series does
	// not alert on every wiggle.
	RelFloor float64
	// AbsFloor is the smallest band half-width in the series' unit
	// (default 0; UnitFloor gives one per catalog unit).
	AbsFloor float64
	// Shifts are instants of known level shifts; each adds a step
	// regressor so the fit keeps the seasonal shape across the shift.
	Shifts []time.Time
	// MaxRows caps the rows of the regression: longer histories are
	// reduced to medians of equal-width time bins first (default 1500).
	MaxRows int
	// Iterations is the number of Huber reweighting passes (default 5).
	Iterations int
	// WeekendOrder is the number of Fourier pairs of a separate daily
	// shape on Saturdays and Sundays (UTC), added with a weekend level when
	// the history covers a week (default 4). Traffic on weekends is
	// usually lower with a flatter day, which an additive weekly cycle
	// cannot express.
	WeekendOrder int
}

func (o Options) withDefaults() Options {
	if o.DailyOrder <= 0 {
		o.DailyOrder = 6
	}
	if o.WeeklyOrder <= 0 {
		o.WeeklyOrder = 3
	}
	if o.Changepoints <= 0 {
		o.Changepoints = 10
	}
	if o.ChangepointRange <= 0 || o.ChangepointRange > 1 {
		o.ChangepointRange = 0.8
	}
	if o.Z <= 0 {
		o.Z = 3
	}
	if o.MinSpan <= 0 {
		o.MinSpan = 3 * time.Hour
	}
	if o.RelFloor < 0 || math.IsNaN(o.RelFloor) {
		o.RelFloor = 0
	} else if o.RelFloor == 0 {
		o.RelFloor = 0.02
	}
	if o.AbsFloor < 0 || math.IsNaN(o.AbsFloor) || math.IsInf(o.AbsFloor, 0) {
		o.AbsFloor = 0
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1500
	}
	if o.Iterations <= 0 {
		o.Iterations = 5
	}
	if o.WeekendOrder <= 0 {
		o.WeekendOrder = 4
	}
	return o
}

// UnitFloor is the absolute band floor for a catalog unit: about the
// resolution at which the unit is reported, so quantised or near-constant
// series do not alert on one step of their resolution.
func UnitFloor(unit string) float64 {
	switch unit {
	case "ms":
		return 0.5
	case "ratio", "0-1":
		return 0.005
	case "req/s", "1/s":
		return 0.05
	case "tok/s", "tokens":
		return 1
	case "count":
		return 1
	case "MHz":
		return 15
	case "W":
		return 2
	case "C":
		return 1
	}
	return 0
}

// Kind says which terms a fitted model has; it grows with the history.
type Kind string

// Model kinds, from the least to the most history.
const (
	// KindLevel is a robust level (median) and spread (MAD): under MinSpan.
	KindLevel Kind = "level"
	// KindTrend adds a linear trend: under one day.
	KindTrend Kind = "trend"
	// KindDaily adds the daily Fourier terms: one to two days.
	KindDaily Kind = "daily"
	// KindSeasonal has the trend with changepoints and the daily and
	// weekly terms: two days or more.
	KindSeasonal Kind = "seasonal"
)

// ErrNoData is returned by Fit when no finite sample is given.
var ErrNoData = errors.New("forecast: no finite samples")

// Model is a fitted additive forecast of one series. It is immutable and
// safe for concurrent use.
type Model struct {
	kind     Kind
	opts     Options
	t0       int64   // origin, unix seconds
	span     float64 // seconds, > 0
	center   float64 // y standardisation
	scale    float64
	cps      []float64 // changepoints as fractions of span
	shifts   []float64 // step times as fractions of span
	daily    int
	weekly   int
	weekend  int // Fourier pairs of the weekend daily shape; 0 = none
	beta     []float64
	sigma    float64      // robust residual standard error
	hourly   *[24]float64 // per hour-of-day standard error, when known
	cyclic   bool         // a seasonal model whose history showed a daily cycle
	n        int
	from, to time.Time
}

// Kind reports which terms the model has.
func (m *Model) Kind() Kind { return m.kind }

// Sigma is the robust residual standard error over the whole history.
func (m *Model) Sigma() float64 { return m.sigma }

// N is the number of finite samples the model was fitted on.
func (m *Model) N() int { return m.n }

// Span returns the first and last sample times of the fit.
func (m *Model) Span() (from, to time.Time) { return m.from, m.to }

// String describes the model in one line.
func (m *Model) String() string {
	kind := string(m.kind)
	if m.kind == KindSeasonal && !m.cyclic {
		kind += " (no daily cycle found)"
	}
	return fmt.Sprintf("%s model on %d samples (%s .. %s), sigma %.4g",
		kind, m.n, m.from.UTC().Format(time.RFC3339), m.to.UTC().Format(time.RFC3339), m.sigma)
}

// Predict returns the forecast at t and the band around it. The band is
// Z robust standard errors (per hour of day once the history covers two
// days) and never narrower than the relative and absolute floors.
func (m *Model) Predict(t time.Time) (forecast, lower, upper float64) {
	f, hw := m.band(t.Unix(), 0, 1)
	return f, f - hw, f + hw
}

// band returns the forecast at sec moved by offset and the band's
// half-width with the standard error scaled by inflate.
func (m *Model) band(sec int64, offset, inflate float64) (f, hw float64) {
	var buf [64]float64
	f = m.mean(sec, buf[:]) + offset
	hw = m.opts.Z * m.sigmaAtSec(sec) * inflate
	if fl := m.opts.RelFloor * math.Abs(f); hw < fl {
		hw = fl
	}
	if hw < m.opts.AbsFloor {
		hw = m.opts.AbsFloor
	}
	return f, hw
}

// StdErr is the robust standard error of a value at t.
func (m *Model) StdErr(t time.Time) float64 { return m.sigmaAt(t) }

func (m *Model) sigmaAt(t time.Time) float64 { return m.sigmaAtSec(t.Unix()) }

func (m *Model) sigmaAtSec(sec int64) float64 {
	if m.hourly != nil {
		return m.hourly[hourOfDay(sec)]
	}
	return m.sigma
}

// isWeekend reports whether sec falls on a Saturday or Sunday, UTC.
func isWeekend(sec int64) bool {
	day := sec / 86400
	if sec < 0 && sec%86400 != 0 {
		day--
	}
	dow := (day + 4) % 7 // 1970-01-01 was a Thursday; Sunday = 0
	if dow < 0 {
		dow += 7
	}
	return dow == 0 || dow == 6
}

func hourOfDay(sec int64) int {
	h := (sec % 86400) / 3600
	if h < 0 {
		h += 24
	}
	return int(h)
}

func (m *Model) mean(sec int64, buf []float64) float64 {
	if m.kind == KindLevel {
		return m.center
	}
	x := m.features(sec, buf)
	var s float64
	for j, b := range m.beta {
		s += b * x[j]
	}
	return m.center + m.scale*s
}

func (m *Model) width() int {
	p := 2 + len(m.shifts)
	if m.kind == KindSeasonal {
		p += len(m.cps)
	}
	p += 2*m.daily + 2*m.weekly
	if m.weekend > 0 {
		p += 1 + 2*m.weekend
	}
	return p
}

// features writes the regressors at sec into buf and returns them: an
// intercept, the trend, the changepoint hinges, the level steps and the
// Fourier pairs.
func (m *Model) features(sec int64, buf []float64) []float64 {
	x := buf[:m.width()]
	u := float64(sec-m.t0) / m.span
	x[0] = 1
	x[1] = u
	if m.kind == KindTrend && u > 1 {
		// Under a day, the slope mixes trend with a part of the daily
		// cycle: hold the level reached instead of extrapolating it.
		x[1] = 1
	}
	j := 2
	if m.kind == KindSeasonal {
		for _, c := range m.cps {
			if u > c {
				x[j] = u - c
			} else {
				x[j] = 0
			}
			j++
		}
	}
	for _, s := range m.shifts {
		if u >= s {
			x[j] = 1
		} else {
			x[j] = 0
		}
		j++
	}
	d0 := j
	j = fourier(x, j, sec, 86400, m.daily)
	j = fourier(x, j, sec, 7*86400, m.weekly)
	if m.weekend > 0 {
		we := 0.0
		if isWeekend(sec) {
			we = 1
		}
		x[j] = we
		j++
		for k := 0; k < 2*m.weekend; k++ {
			x[j+k] = we * x[d0+k]
		}
	}
	return x
}

// fourier writes order pairs of cos/sin of the wall-clock phase of sec in
// a cycle of period seconds, using the angle-addition recurrence.
func fourier(x []float64, j int, sec, period int64, order int) int {
	if order == 0 {
		return j
	}
	ph := sec % period
	if ph < 0 {
		ph += period
	}
	s1, c1 := math.Sincos(2 * math.Pi * float64(ph) / float64(period))
	s, c := s1, c1
	for k := 0; k < order; k++ {
		x[j] = c
		x[j+1] = s
		j += 2
		c, s = c*c1-s*s1, s*c1+c*s1
	}
	return j
}

// Fit fits a model to the samples, which may be in any order and may hold
// NaN or infinite values (skipped). Which terms it has depends on the span
// of the history: see Kind.
func Fit(samples []metrics.Sample, opts Options) (*Model, error) {
	opts = opts.withDefaults()
	pts := make([]point, 0, len(samples))
	for _, s := range samples {
		if math.IsNaN(s.V) || math.IsInf(s.V, 0) || s.T.IsZero() {
			continue
		}
		pts = append(pts, point{t: s.T.Unix(), v: s.V})
	}
	if len(pts) == 0 {
		return nil, ErrNoData
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].t < pts[j].t })
	return fitSorted(pts, opts), nil
}

type point struct {
	t    int64
	v    float64
	anom bool // observed while an alert was open; left out of fits
}

func fitSorted(pts []point, opts Options) *Model {
	n := len(pts)
	m := &Model{opts: opts, n: n, from: time.Unix(pts[0].t, 0).UTC(), to: time.Unix(pts[n-1].t, 0).UTC()}
	vals := make([]float64, n)
	for i, p := range pts {
		vals[i] = p.v
	}
	center := median(vals)
	scale := robustScale(vals, center)
	span := float64(pts[n-1].t - pts[0].t)
	m.center, m.kind = center, KindLevel
	if span < opts.MinSpan.Seconds() || n < 10 || scale == 0 {
		m.sigma = scale
		return m
	}
	m.t0, m.span, m.scale = pts[0].t, span, scale
	m.kind = KindTrend
	switch {
	case span >= 2*86400:
		m.kind = KindSeasonal
		// The cycles are fitted only when the history shows a daily
		// one (season.go); the weekly terms and the weekend's own
		// shape refine a daily cycle and go with it.
		if m.cyclic, _ = periodic(pts, 86400); m.cyclic {
			m.daily, m.weekly = opts.DailyOrder, opts.WeeklyOrder
			if span >= 7*86400 {
				m.weekend = min(opts.WeekendOrder, opts.DailyOrder)
			}
		}
		for i := 1; i <= opts.Changepoints; i++ {
			m.cps = append(m.cps, opts.ChangepointRange*float64(i)/float64(opts.Changepoints+1))
		}
	case span >= 86400:
		m.kind = KindDaily
		m.daily = opts.DailyOrder
	}
	for _, s := range opts.Shifts {
		u := float64(s.Unix()-m.t0) / span
		if u > 0 && u < 1 {
			m.shifts = append(m.shifts, u)
		}
	}
	if p := m.width(); p > 64 {
		// Orders beyond the feature buffer are clamped to keep Predict
		// allocation-free.
		m.daily, m.weekly = min(m.daily, 12), min(m.weekly, 6)
		m.weekend = min(m.weekend, m.daily, 6)
		if len(m.shifts) > 8 {
			m.shifts = m.shifts[len(m.shifts)-8:]
		}
	}
	rows := binMedians(pts, opts.MaxRows)
	m.beta = m.solve(rows)
	m.residualScale(pts)
	return m
}

// row is one regression row: a time, a value and a weight (samples in the bin).
type row struct {
	t int64
	v float64
	w float64
}

// binMedians reduces sorted points to at most maxRows rows: medians of
// equal-width time bins, weighted by their sample counts.
func binMedians(pts []point, maxRows int) []row {
	n := len(pts)
	if n <= maxRows {
		rows := make([]row, n)
		for i, p := range pts {
			rows[i] = row{p.t, p.v, 1}
		}
		return rows
	}
	t0 := pts[0].t
	width := float64(pts[n-1].t-t0+1) / float64(maxRows)
	rows := make([]row, 0, maxRows)
	var buf []float64
	var ts int64
	for i := 0; i < n; {
		b := int(float64(pts[i].t-t0) / width)
		buf, ts = buf[:0], 0
		j := i
		for j < n && int(float64(pts[j].t-t0)/width) == b {
			buf = append(buf, pts[j].v)
			ts += pts[j].t - t0
			j++
		}
		rows = append(rows, row{t0 + ts/int64(len(buf)), medianInPlace(buf), float64(len(buf))})
		i = j
	}
	return rows
}

// solve runs ridge-regularised, Huber-weighted least squares (IRLS) on the
// standardised values and returns the coefficients.
func (m *Model) solve(rows []row) []float64 {
	p := m.width()
	nr := len(rows)
	X := make([]float64, nr*p)
	z := make([]float64, nr)
	for i, r := range rows {
		m.features(r.t, X[i*p:(i+1)*p])
		z[i] = (r.v - m.center) / m.scale
	}
	// Prior precision per coefficient (ridge), in standardised units: a
	// prior standard deviation tau gives a penalty 1/tau^2.
	pen := make([]float64, p)
	pen[0] = 1e-9
	pen[1] = 1.0 / (5 * 5)
	j := 2
	if m.kind == KindSeasonal {
		for range m.cps {
			pen[j] = 1.0 / (0.5 * 0.5)
			j++
		}
	}
	for range m.shifts {
		pen[j] = 1.0 / (10 * 10)
		j++
	}
	for ; j < p; j++ {
		pen[j] = 1.0 / (1 * 1)
	}
	w := make([]float64, nr)
	for i, r := range rows {
		w[i] = r.w
	}
	beta := make([]float64, p)
	res := make([]float64, nr)
	A := mat.NewSymDense(p, nil)
	b := mat.NewVecDense(p, nil)
	var chol mat.Cholesky
	ata := make([]float64, p*p)
	atb := make([]float64, p)
	for it := 0; it < m.opts.Iterations; it++ {
		clear(ata)
		clear(atb)
		for i := 0; i < nr; i++ {
			wi := w[i]
			if wi == 0 {
				continue
			}
			x := X[i*p : (i+1)*p]
			zi := z[i] * wi
			for a := 0; a < p; a++ {
				xa := x[a] * wi
				if xa == 0 {
					continue
				}
				atb[a] += x[a] * zi
				row := ata[a*p:]
				for c := a; c < p; c++ {
					row[c] += xa * x[c]
				}
			}
		}
		for a := 0; a < p; a++ {
			for c := a; c < p; c++ {
				v := ata[a*p+c]
				if a == c {
					v += pen[a]
				}
				A.SetSym(a, c, v)
			}
			b.SetVec(a, atb[a])
		}
		if ok := chol.Factorize(A); !ok {
			for a := 0; a < p; a++ {
				A.SetSym(a, a, A.At(a, a)+1e-6)
			}
			if ok := chol.Factorize(A); !ok {
				break
			}
		}
		var sol mat.VecDense
		if err := chol.SolveVecTo(&sol, b); err != nil {
			break
		}
		for a := 0; a < p; a++ {
			beta[a] = sol.AtVec(a)
		}
		// Huber weights from standardised residuals: a bin's median has
		// a variance that falls with its sample count.
		for i := 0; i < nr; i++ {
			x := X[i*p : (i+1)*p]
			var f float64
			for a := 0; a < p; a++ {
				f += beta[a] * x[a]
			}
			res[i] = (z[i] - f) * math.Sqrt(rows[i].w)
		}
		s := robustScale(res, median(res))
		if s == 0 {
			break
		}
		const huber = 1.345
		for i := 0; i < nr; i++ {
			a := math.Abs(res[i]) / s
			w[i] = rows[i].w
			if a > huber {
				w[i] *= huber / a
			}
		}
	}
	for _, v := range beta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			clear(beta)
			break
		}
	}
	return beta
}

// residualScale sets the robust standard error from the residuals of every
// raw sample of the last week, and per hour of day when that covers two
// days or more (shrunk towards the overall value with the weight of 30
// samples, so an hour with few samples keeps close to it).
func (m *Model) residualScale(pts []point) {
	// The spread of the last week is the one that matters now.
	cut := pts[len(pts)-1].t - 7*86400
	k := sort.Search(len(pts), func(i int) bool { return pts[i].t >= cut })
	pts = pts[k:]
	var buf [64]float64
	res := make([]float64, len(pts))
	for i, p := range pts {
		res[i] = p.v - m.mean(p.t, buf[:])
	}
	m.sigma = tailScale(res, median(res))
	if pts[len(pts)-1].t-pts[0].t < 2*86400 || m.sigma == 0 || m.daily == 0 {
		return
	}
	var byHour [24][]float64
	for i, p := range pts {
		h := hourOfDay(p.t)
		byHour[h] = append(byHour[h], res[i])
	}
	var hourly [24]float64
	const prior = 30.0 // samples' worth of weight on the overall sigma
	for h := range byHour {
		r := byHour[h]
		nh := float64(len(r))
		sh := m.sigma
		if len(r) > 0 {
			sh = tailScale(r, median(r))
		}
		hourly[h] = math.Sqrt((nh*sh*sh + prior*m.sigma*m.sigma) / (nh + prior))
	}
	m.hourly = &hourly
}

// median returns the median of v without modifying it; 0 for no values.
func median(v []float64) float64 {
	return medianInPlace(append([]float64(nil), v...))
}

// medianInPlace returns the median of v, reordering v; 0 for no values.
func medianInPlace(v []float64) float64 { return robust.MedianInPlace(v) }

// tailScale is the normal-equivalent standard deviation read from the 95th
// percentile of absolute deviations from center (divided by 1.96). For
// normal noise it equals the standard deviation, like the MAD; unlike the
// MAD it sees heavy tails (for Student-t noise with 5 degrees of freedom
// the MAD underestimates the standard deviation by 16%, this is within
// 2%); and up to 5% of anomalous points cannot move it far. It falls back
// to robustScale when the percentile is zero.
func tailScale(v []float64, center float64) float64 {
	if len(v) == 0 {
		return 0
	}
	d := make([]float64, len(v))
	for i, x := range v {
		d[i] = math.Abs(x - center)
	}
	if q := robust.Select(d, int(0.95*float64(len(d)-1))); q > 0 {
		return q / 1.96
	}
	return robustScale(v, center)
}

// robustScale is 1.4826 times the median absolute deviation from center (a
// consistent estimate of a normal standard deviation), falling back to
// 1.2533 times the mean absolute deviation when more than half the values
// equal the center (quantised or mostly-constant series). It does not
// modify v.
func robustScale(v []float64, center float64) float64 {
	if len(v) == 0 {
		return 0
	}
	d := make([]float64, len(v))
	var sum float64
	for i, x := range v {
		d[i] = math.Abs(x - center)
		sum += d[i]
	}
	if s := 1.4826 * medianInPlace(d); s > 0 {
		return s
	}
	return 1.2533 * sum / float64(len(v))
}
