package forecast

import (
	"math"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Score is how one detector did on labelled windows.
type Score struct {
	Alerts    int     // alerts opened in the evaluated span
	TruePos   int     // alerts about a labelled window
	Windows   int     // labelled windows in the evaluated span
	Detected  int     // windows at least one alert is about
	Days      float64 // evaluated days
	delays    []float64
	Threshold float64 // fixed threshold (fixed detectors only)
}

// PerDay is alerts per evaluated day.
func (s Score) PerDay() float64 { return ratio(float64(s.Alerts), s.Days) }

// FalsePerDay is alerts about no labelled window per evaluated day.
func (s Score) FalsePerDay() float64 { return ratio(float64(s.Alerts-s.TruePos), s.Days) }

// Precision is the share of alerts that are about a labelled window.
func (s Score) Precision() float64 { return ratio(float64(s.TruePos), float64(s.Alerts)) }

// Recall is the share of labelled windows that got an alert.
func (s Score) Recall() float64 { return ratio(float64(s.Detected), float64(s.Windows)) }

// MedianDelay is the median time from a window's start to its first alert.
func (s Score) MedianDelay() time.Duration {
	if len(s.delays) == 0 {
		return 0
	}
	d := append([]float64(nil), s.delays...)
	return time.Duration(median(d) * float64(time.Second))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func (s *Score) add(o Score) {
	s.Alerts += o.Alerts
	s.TruePos += o.TruePos
	s.Windows += o.Windows
	s.Detected += o.Detected
	s.delays = append(s.delays, o.delays...)
	if s.Days == 0 {
		s.Days = o.Days
	}
}

// BacktestRow is the result for one metric.
type BacktestRow struct {
	Metric  string
	Dynamic Score
	Fixed   Score
}

// BacktestResult holds every metric and the totals.
type BacktestResult struct {
	Rows           []BacktestRow
	Dynamic, Fixed Score
}

// BacktestOptions configures Backtest.
type BacktestOptions struct {
	Sim      SimOptions
	Detector DetectorOptions
}

// interval is one alert: from its first out-of-band sample to its end, and
// when it fired.
type interval struct {
	start, fired, end int64
	src               int // which series of a scope raised it
}

// Backtest simulates the series (see Simulate), replays each through a
// Detector with only past data at every step, and scores it and a fixed
// threshold on the windows of the evaluated weeks. An alert is a true
// positive when its out-of-band run began inside a window (see beganIn); a
// window is detected by such an alert, with a delay from the window's
// start to the alert's firing. Both detectors use the same Consecutive and
// Clear rules. Each metric's fixed threshold is tuned to the same recall:
// of a grid of thresholds, the one with the fewest alerts that detects at
// least as many of that metric's windows as the dynamic detector did, or
// the one that detects most (an oracle tuning with the labels at hand
// that favours the fixed thresholds); a Both metric gets a symmetric band
// around its median.
func Backtest(opts BacktestOptions) BacktestResult {
	series := Simulate(opts.Sim)
	rows := make([]BacktestRow, len(series))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range series {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			rows[i] = backtestOne(series[i], opts.Detector)
		}(i)
	}
	wg.Wait()
	var res BacktestResult
	res.Rows = rows
	for _, r := range rows {
		res.Dynamic.add(r.Dynamic)
		res.Fixed.add(r.Fixed)
	}
	return res
}

func backtestOne(s SimSeries, dopts DetectorOptions) BacktestRow {
	dopts = dopts.withDefaults()
	lookup := dopts.Lookup
	dopts.Lookup = func(id string) (metrics.Metric, bool) {
		if id == s.Metric.ID {
			return s.Metric, true
		}
		return lookup(id)
	}
	evalFrom := s.EvalFrom.Unix()
	alerts := detectorAlerts(metrics.Series{Metric: s.Metric.ID, Samples: s.Samples}, dopts)
	var windows [][2]int64
	for _, w := range s.Windows {
		if w.Start.Unix() >= evalFrom {
			windows = append(windows, [2]int64{w.Start.Unix(), w.End.Unix()})
		}
	}
	var evalAlerts []interval
	for _, a := range alerts {
		if a.fired >= evalFrom {
			evalAlerts = append(evalAlerts, a)
		}
	}
	days := 0.0
	if n := len(s.Samples); n > 0 {
		days = s.Samples[n-1].T.Sub(s.EvalFrom).Hours() / 24
	}
	dyn := score(evalAlerts, windows, days, beganIn)

	// Fixed thresholds on the evaluated span.
	var vals []float64
	var ts []int64
	for _, p := range s.Samples {
		if p.T.Unix() >= evalFrom && !math.IsNaN(p.V) {
			vals = append(vals, p.V)
			ts = append(ts, p.T.Unix())
		}
	}
	fixed := tuneFixed(s.Metric.Bad, ts, vals, windows, dyn.Detected, dopts.Consecutive, dopts.Clear, days)
	return BacktestRow{Metric: s.Metric.ID, Dynamic: dyn, Fixed: fixed}
}

// matchRule says whether an alert is about a labelled window.
type matchRule func(a interval, w [2]int64) bool

// overlaps credits an alert whose span overlaps the window.
func overlaps(a interval, w [2]int64) bool { return a.start < w[1] && a.end >= w[0] }

// beganIn credits an alert whose out-of-band run began inside the window:
// an alert that was already open when the window began is not about it,
// so a threshold that stays crossed for hours cannot claim every window
// it spans.
func beganIn(a interval, w [2]int64) bool { return a.start >= w[0] && a.start < w[1] }

func score(alerts []interval, windows [][2]int64, days float64, about matchRule) Score {
	s := Score{Alerts: len(alerts), Windows: len(windows), Days: days}
	for _, a := range alerts {
		for _, w := range windows {
			if about(a, w) {
				s.TruePos++
				break
			}
		}
	}
	for _, w := range windows {
		for _, a := range alerts {
			if about(a, w) {
				s.Detected++
				d := float64(a.fired - w[0])
				if d < 0 {
					d = 0
				}
				s.delays = append(s.delays, d)
				break
			}
		}
	}
	return s
}

// fixedAlerts runs a static threshold with the detector's rules: an alert
// fires after k samples in a row beyond the threshold and ends after clear
// samples in a row back.
func fixedAlerts(bad metrics.Direction, ts []int64, vals []float64, thr, center float64, k, clear int) []interval {
	var out []interval
	run, in := 0, 0
	var runStart int64
	firing := false
	for i, v := range vals {
		var beyond bool
		switch bad {
		case metrics.Up:
			beyond = v > thr
		case metrics.Down:
			beyond = v < thr
		default:
			beyond = math.Abs(v-center) > thr
		}
		if !firing {
			if beyond {
				if run == 0 {
					runStart = ts[i]
				}
				run++
				if run >= k {
					firing, in = true, 0
					out = append(out, interval{start: runStart, fired: ts[i], end: math.MaxInt64})
				}
			} else {
				run = 0
			}
			continue
		}
		if beyond {
			in = 0
			continue
		}
		in++
		if in >= clear {
			firing, run = false, 0
			out[len(out)-1].end = ts[i]
		}
	}
	return out
}

// tuneFixed finds the threshold with the fewest alerts that detects at
// least target windows (or the one that detects most if none does).
func tuneFixed(bad metrics.Direction, ts []int64, vals []float64, windows [][2]int64, target, k, clear int, days float64) Score {
	if len(vals) == 0 {
		return Score{Windows: len(windows), Days: days}
	}
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	center := sorted[len(sorted)/2]
	// Candidate thresholds ordered from most to least sensitive.
	var cand []float64
	switch bad {
	case metrics.Up:
		cand = uniq(sorted) // v > thr: lower is more sensitive
	case metrics.Down:
		u := uniq(sorted)
		for i := len(u) - 1; i >= 0; i-- {
			cand = append(cand, u[i]) // v < thr: higher is more sensitive
		}
	default:
		dev := make([]float64, len(vals))
		for i, v := range vals {
			dev[i] = math.Abs(v - center)
		}
		sort.Float64s(dev)
		cand = uniq(dev)
	}
	eval := func(i int) Score {
		s := score(fixedAlerts(bad, ts, vals, cand[i], center, k, clear), windows, days, beganIn)
		s.Threshold = cand[i]
		return s
	}
	// Detection is not monotone in the threshold (a sensitive threshold
	// can open an alert before a window begins and so miss it), so scan
	// a grid of candidates by rank and keep, of those that reach the
	// target, the one with the fewest alerts; if none does, the one that
	// detects most.
	const grid = 512
	var best Score
	for g := 0; g < grid && g < len(cand); g++ {
		i := g * (len(cand) - 1) / max(1, min(grid, len(cand))-1)
		s := eval(i)
		switch {
		case g == 0:
			best = s
		case s.Detected >= target && (best.Detected < target || s.Alerts <= best.Alerts):
			best = s
		case best.Detected < target && (s.Detected > best.Detected || s.Detected == best.Detected && s.Alerts <= best.Alerts):
			best = s
		}
	}
	return best
}

func uniq(sorted []float64) []float64 {
	out := sorted[:0:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}
