package change

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Outcome verdicts.
const (
	VerdictExpected     = "expected"     // moved the predicted way
	VerdictNotExpected  = "not_expected" // did not move, or moved the other way
	VerdictInconclusive = "inconclusive" // too little data, or the load changed too much
)

// EffectOutcome is the verdict on one expected effect.
type EffectOutcome struct {
	Metric    string  `json:"metric"`
	Direction string  `json:"direction"`
	Before    float64 `json:"before"`
	After     float64 `json:"after"`
	Change    float64 `json:"change"` // relative, load-normalised
	Verdict   string  `json:"verdict"`
	Why       string  `json:"why"`
}

// Outcome is the before/after comparison of an applied change.
type Outcome struct {
	AppliedAt time.Time       `json:"applied_at"`
	Window    time.Duration   `json:"window_ns"`
	LoadRatio float64         `json:"load_ratio"` // after / before request rate (0: unknown)
	Effects   []EffectOutcome `json:"effects"`
	// Verdict is expected when every effect with a verdict was expected,
	// not_expected when any was not, else inconclusive.
	Verdict string `json:"verdict"`
}

// maxLoadShift is the largest change of the request rate across which a
// latency or utilisation comparison is still made.
const maxLoadShift = 0.3

// Evaluate compares the expected effects over the window before a change
// (the incident's state) with the same length after it. The two windows
// are matched in length and adjacent in clock time, so they cover the same
// hours of the day as far as a change allows; throughput metrics are
// divided by the request rate, and other metrics are only judged when the
// rate moved less than 30%.
func Evaluate(effects []ExpectedEffect, before, after []metrics.Point, appliedAt time.Time, window time.Duration) Outcome {
	o := Outcome{AppliedAt: appliedAt.UTC(), Window: window}
	rate := func(ps []metrics.Point) float64 {
		if m, _, n := stats(ps, metrics.ArrivalRPS); n > 0 && m > 0 {
			return m
		}
		m, _, _ := stats(ps, metrics.ThroughputRPS)
		return m
	}
	rb, ra := rate(before), rate(after)
	if rb > 0 && ra > 0 {
		o.LoadRatio = ra / rb
	}
	expected, not := 0, 0
	for _, e := range effects {
		eo := EffectOutcome{Metric: e.Metric, Direction: e.Direction}
		mb, sb, nb := stats(before, e.Metric)
		ma, sa, na := stats(after, e.Metric)
		eo.Before, eo.After = mb, ma
		mt, _ := metrics.Lookup(e.Metric)
		isRate := mt.Dimension == metrics.Throughput && (mt.Unit == "req/s" || mt.Unit == "tok/s")
		switch {
		case nb < 3 || na < 3:
			eo.Verdict, eo.Why = VerdictInconclusive, fmt.Sprintf("too few readings (%d before, %d after)", nb, na)
		case !isRate && o.LoadRatio > 0 && math.Abs(o.LoadRatio-1) > maxLoadShift:
			eo.Verdict, eo.Why = VerdictInconclusive, fmt.Sprintf("the request rate changed by %+.0f%%", 100*(o.LoadRatio-1))
		default:
			if isRate && o.LoadRatio > 0 && e.Metric != metrics.ArrivalRPS {
				ma /= o.LoadRatio
			}
			d := ma - mb
			if mb != 0 {
				eo.Change = d / math.Abs(mb)
			}
			// The difference must stand out of both windows' noise.
			se := math.Sqrt(sb*sb/float64(nb) + sa*sa/float64(na))
			noise := math.Max(2*se, 0.02*math.Abs(mb))
			switch {
			case (e.Direction == "up" && d > noise) || (e.Direction == "down" && -d > noise):
				eo.Verdict, eo.Why = VerdictExpected, fmt.Sprintf("moved %s by %.0f%%", e.Direction, 100*math.Abs(eo.Change))
			case math.Abs(d) <= noise:
				eo.Verdict, eo.Why = VerdictNotExpected, "did not move beyond its noise"
			default:
				eo.Verdict, eo.Why = VerdictNotExpected, fmt.Sprintf("moved the other way (%+.0f%%)", 100*eo.Change)
			}
		}
		switch eo.Verdict {
		case VerdictExpected:
			expected++
		case VerdictNotExpected:
			not++
		}
		o.Effects = append(o.Effects, eo)
	}
	switch {
	case not > 0:
		o.Verdict = VerdictNotExpected
	case expected > 0:
		o.Verdict = VerdictExpected
	default:
		o.Verdict = VerdictInconclusive
	}
	return o
}

// stats are the mean, standard deviation and count of a metric's readings.
func stats(ps []metrics.Point, id string) (mean, sd float64, n int) {
	var sum, sq float64
	for _, p := range ps {
		v, ok := p.Values[id]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		sum += v
		sq += v * v
		n++
	}
	if n == 0 {
		return 0, 0, 0
	}
	mean = sum / float64(n)
	if n > 1 {
		sd = math.Sqrt(math.Max(0, (sq-float64(n)*mean*mean)/float64(n-1)))
	}
	return mean, sd, n
}

// Encode is the outcome as the archive stores it: JSON.
func (o Outcome) Encode() ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("change: encode outcome: %w", err)
	}
	return b, nil
}

// DecodeOutcome reads an outcome Encode stored.
func DecodeOutcome(b []byte) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return Outcome{}, fmt.Errorf("change: decode outcome: %w", err)
	}
	return o, nil
}

// OutcomeDue is when the outcome of a change applied at appliedAt can be
// measured: after a settle time of a quarter window, plus the window.
func OutcomeDue(appliedAt time.Time, window time.Duration) time.Time {
	return appliedAt.Add(window/4 + window)
}

// RangeReader reads one series per metric id over r, as the metric
// source does for a scope.
type RangeReader func(ids []string, r metrics.Range) ([]metrics.Series, error)

// Measure evaluates a change applied at appliedAt: it reads the window
// before it and the window after the settle time (see OutcomeDue), the
// request rates and the request's expected effects, at about 60 points a
// window, and compares them with Evaluate.
func Measure(req Request, appliedAt time.Time, window time.Duration, read RangeReader) (Outcome, error) {
	ids := []string{metrics.ArrivalRPS, metrics.ThroughputRPS}
	for _, e := range req.Effects {
		ids = append(ids, e.Metric)
	}
	step := max(window/60, 15*time.Second)
	points := func(start time.Time) ([]metrics.Point, error) {
		series, err := read(ids, metrics.Range{Start: start, End: start.Add(window), Step: step})
		if err != nil {
			return nil, err
		}
		return pointsOf(series), nil
	}
	before, err := points(appliedAt.Add(-window))
	if err != nil {
		return Outcome{}, err
	}
	after, err := points(appliedAt.Add(window / 4))
	if err != nil {
		return Outcome{}, err
	}
	return Evaluate(req.Effects, before, after, appliedAt, window), nil
}

// pointsOf turns per-metric series into points by timestamp; the first
// value of a metric at a timestamp wins, and NaN is no value.
func pointsOf(series []metrics.Series) []metrics.Point {
	byT := map[int64]metrics.Values{}
	var order []int64
	for _, s := range series {
		for _, x := range s.Samples {
			k := x.T.UnixNano()
			v, ok := byT[k]
			if !ok {
				v = metrics.Values{}
				byT[k] = v
				order = append(order, k)
			}
			if _, seen := v[s.Metric]; !seen && !math.IsNaN(x.V) {
				v[s.Metric] = x.V
			}
		}
	}
	out := make([]metrics.Point, 0, len(order))
	for _, k := range order {
		out = append(out, metrics.Point{At: time.Unix(0, k).UTC(), Values: byT[k]})
	}
	return out
}
