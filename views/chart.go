package views

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Chart geometry in SVG user units; the SVG scales to its container.
//
// The plot SVG stretches horizontally (preserveAspectRatio="none") and has a
// fixed CSS height equal to chartH, so its y units are CSS pixels. Text never
// lives in the stretched SVG: y labels sit in a fixed-width SVG beside it and
// x labels in an unscaled SVG below it, positioned in percent.
const (
	chartW      = 800
	chartH      = 170
	chartLeft   = 0
	chartRight  = 0
	chartTop    = 8
	chartBottom = 2
	maxPoints   = 2 * chartW
)

// ChartSeries is one line of a chart.
type ChartSeries struct {
	Metric  string // catalog id, used for the label and value formatting
	Name    string // legend text; MetricLabel(Metric) when empty
	Samples []metrics.Sample
}

// ChartBand is a shaded range between two series, such as a forecast's
// expected band.
type ChartBand struct {
	Name         string
	Lower, Upper []metrics.Sample
}

// ChartSpec describes a chart before layout.
type ChartSpec struct {
	ID     string // unique on the page; used for data-testid and aria
	Title  string
	Unit   string // catalog unit of every series ("ms", "ratio", "req/s" ...)
	Start  time.Time
	End    time.Time
	Step   time.Duration // expected sample spacing; larger holes are drawn as gaps
	Series []ChartSeries
	// Marker, when set, draws a vertical line (an incident's trigger time).
	Marker      time.Time
	MarkerLabel string
	// Band, when set, is drawn beneath the series.
	Band *ChartBand
}

// ChartTick is one labelled axis tick.
type ChartTick struct {
	Pos   float64 // x or y in SVG units
	Label string
	T     int64 // unix seconds for x ticks (for local-time relabelling)
}

// Pct is an x tick's position in percent of the plot width.
func (t ChartTick) Pct() string { return ftoa(100*t.Pos/chartW) + "%" }

// Anchor keeps the first and last x labels inside the plot.
func (t ChartTick) Anchor() string {
	switch {
	case t.Pos < chartW*0.04:
		return "start"
	case t.Pos > chartW*0.96:
		return "end"
	}
	return "middle"
}

// ChartLine is one laid-out series.
type ChartLine struct {
	Name   string
	Metric string // the series' catalog id
	Named  bool   // Name was given, not the metric's label
	Class  string // colour class, s0..s5
	D      string // SVG path; "M" starts every unbroken run
	Times  string // comma-separated unix seconds of the drawn points
	Values string // comma-separated values of the drawn points
	Last   string // formatted last value, for the legend
	Empty  bool
}

// Chart is a laid-out chart ready for the Chart component.
type Chart struct {
	ChartSpec
	ViewBox        string
	X0, X1, Y0, Y1 float64 // plot area
	YTicks         []ChartTick
	XTicks         []ChartTick
	Lines          []ChartLine
	BandD          string
	MarkerX        float64
	MarkerPct      string
	HasMarker      bool
	Empty          bool
	UnitLabel      string
}

// NewChart lays out a chart: scales, nice ticks, paths with gaps for
// missing data, and the optional band and marker. It never fails; a chart
// without data says so.
func NewChart(spec ChartSpec) Chart {
	c := Chart{
		ChartSpec: spec,
		ViewBox:   "0 0 " + itoa(chartW) + " " + itoa(chartH),
		X0:        chartLeft, X1: chartW - chartRight,
		Y0: chartH - chartBottom, Y1: chartTop,
		UnitLabel: unitLabel(spec.Unit),
	}
	if !spec.End.After(spec.Start) {
		c.End = c.Start.Add(time.Hour)
	}
	scale := unitScale(spec.Unit)
	lo, hi := math.Inf(1), math.Inf(-1)
	see := func(s []metrics.Sample) {
		for _, p := range s {
			if finite(p.V) && !p.T.Before(c.Start) && !p.T.After(c.End) {
				lo, hi = math.Min(lo, p.V*scale), math.Max(hi, p.V*scale)
			}
		}
	}
	for _, s := range spec.Series {
		see(s.Samples)
	}
	if spec.Band != nil {
		see(spec.Band.Lower)
		see(spec.Band.Upper)
	}
	if math.IsInf(lo, 1) {
		c.Empty = true
		lo, hi = 0, 1
	}
	if lo > 0 {
		lo = 0
	}
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep((hi - lo) / 4)
	hi = math.Ceil(hi/step) * step
	lo = math.Floor(lo/step) * step
	c.YTicks = nil
	for v := lo; v <= hi+step/2; v += step {
		c.YTicks = append(c.YTicks, ChartTick{Pos: c.y(v, lo, hi), Label: tickLabel(v, step)})
	}
	c.XTicks = timeTicks(c.Start, c.End, c.x)
	gap := spec.Step * 3 / 2
	if gap <= 0 {
		gap = c.End.Sub(c.Start) / 100
	}
	for i, s := range spec.Series {
		name := s.Name
		if name == "" {
			name = MetricLabel(s.Metric)
		}
		l := ChartLine{Name: name, Metric: s.Metric, Named: s.Name != "", Class: "s" + itoa(i%6)}
		pts := decimate(s.Samples, c.Start, c.End)
		d := make([]byte, 0, len(pts)*14)
		ts := make([]byte, 0, len(pts)*11)
		vs := make([]byte, 0, len(pts)*8)
		var prev time.Time
		last := math.NaN()
		for _, p := range pts {
			if !finite(p.V) {
				prev = time.Time{}
				continue
			}
			cmd := byte('L')
			if prev.IsZero() || p.T.Sub(prev) > gap {
				cmd = 'M'
			}
			prev = p.T
			d = append(d, cmd)
			d = strconv.AppendFloat(d, c.x(p.T), 'f', 1, 64)
			d = append(d, ' ')
			d = strconv.AppendFloat(d, c.y(p.V*scale, lo, hi), 'f', 1, 64)
			if len(ts) > 0 {
				ts = append(ts, ',')
				vs = append(vs, ',')
			}
			ts = strconv.AppendInt(ts, p.T.Unix(), 10)
			vs = strconv.AppendFloat(vs, p.V, 'g', 5, 64)
			last = p.V
		}
		l.D, l.Times, l.Values = string(d), string(ts), string(vs)
		l.Empty = l.D == ""
		if l.Empty {
			l.Last = "no data"
		} else {
			l.Last = formatUnit(spec.Unit, last)
		}
		c.Lines = append(c.Lines, l)
	}
	if b := spec.Band; b != nil && len(b.Lower) > 0 && len(b.Upper) > 0 {
		var d strings.Builder
		up := decimate(b.Upper, c.Start, c.End)
		low := decimate(b.Lower, c.Start, c.End)
		for i, p := range up {
			if !finite(p.V) {
				continue
			}
			cmd := "L"
			if d.Len() == 0 || i == 0 {
				cmd = "M"
			}
			d.WriteString(cmd + ftoa(c.x(p.T)) + " " + ftoa(c.y(p.V*scale, lo, hi)))
		}
		for i := len(low) - 1; i >= 0; i-- {
			if p := low[i]; finite(p.V) {
				d.WriteString("L" + ftoa(c.x(p.T)) + " " + ftoa(c.y(p.V*scale, lo, hi)))
			}
		}
		if d.Len() > 0 {
			c.BandD = d.String() + "Z"
		}
	}
	if !spec.Marker.IsZero() && !spec.Marker.Before(c.Start) && !spec.Marker.After(c.End) {
		c.HasMarker, c.MarkerX = true, c.x(spec.Marker)
		c.MarkerPct = ftoa(100*c.MarkerX/chartW) + "%"
	}
	return c
}

func (c Chart) x(t time.Time) float64 {
	span := c.End.Sub(c.Start).Seconds()
	return c.X0 + (c.X1-c.X0)*t.Sub(c.Start).Seconds()/span
}

func (c Chart) y(v, lo, hi float64) float64 {
	return c.Y0 - (c.Y0-c.Y1)*(v-lo)/(hi-lo)
}

// decimate keeps the samples inside [start, end] and, when there are more
// than the plot can show, the minimum and maximum of each pixel bucket so
// that spikes survive.
func decimate(s []metrics.Sample, start, end time.Time) []metrics.Sample {
	in := make([]metrics.Sample, 0, len(s))
	for _, p := range s {
		if !p.T.Before(start) && !p.T.After(end) {
			in = append(in, p)
		}
	}
	if len(in) <= maxPoints {
		return in
	}
	buckets := maxPoints / 2
	span := end.Sub(start)
	out := make([]metrics.Sample, 0, maxPoints)
	i := 0
	for b := 0; b < buckets && i < len(in); b++ {
		limit := start.Add(span * time.Duration(b+1) / time.Duration(buckets))
		var mn, mx metrics.Sample
		n := 0
		for ; i < len(in) && !in[i].T.After(limit); i++ {
			p := in[i]
			if !finite(p.V) {
				continue
			}
			if n == 0 || p.V < mn.V {
				mn = p
			}
			if n == 0 || p.V > mx.V {
				mx = p
			}
			n++
		}
		switch {
		case n == 0:
			out = append(out, metrics.Sample{T: limit, V: math.NaN()})
		case mn.T.Before(mx.T):
			out = append(out, mn, mx)
		case mx.T.Before(mn.T):
			out = append(out, mx, mn)
		default:
			out = append(out, mn)
		}
	}
	return out
}

// niceStep rounds a raw tick step up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || !finite(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func tickLabel(v, step float64) string {
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	if math.Abs(v) >= 1e4 {
		return num(v)
	}
	// Enough decimals to tell neighbouring ticks apart (2.5 needs one).
	dec := 0
	for dec < 6 {
		scaled := step * math.Pow(10, float64(dec))
		if math.Abs(scaled-math.Round(scaled)) < 1e-9*math.Max(1, scaled) {
			break
		}
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

var tickSteps = []time.Duration{
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour,
	12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour,
}

// timeTicks places up to seven ticks at round UTC times. Labels are UTC;
// the page script relabels them in the reader's time zone from T.
func timeTicks(start, end time.Time, x func(time.Time) float64) []ChartTick {
	span := end.Sub(start)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "15:04"
	if step >= 24*time.Hour {
		layout = "Jan 2"
	} else if span > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	var out []ChartTick
	for t := start.UTC().Truncate(step); !t.After(end); t = t.Add(step) {
		if t.Before(start) {
			continue
		}
		out = append(out, ChartTick{Pos: x(t), Label: t.UTC().Format(layout), T: t.Unix()})
	}
	return out
}

// unitScale converts stored values to axis values (ratios are shown in %).
func unitScale(unit string) float64 {
	if unit == "ratio" || unit == "0-1" {
		return 100
	}
	return 1
}

func unitLabel(unit string) string {
	switch unit {
	case "ratio", "0-1":
		return "%"
	case "C":
		return "°C"
	}
	return unit
}

// MarkerAnchor puts the marker label right of the line, or left of it
// near the right edge.
func (c Chart) MarkerAnchor() string {
	if c.MarkerX > chartW*0.8 {
		return "end"
	}
	return "start"
}

// MarkerDX offsets the marker label from the line.
func (c Chart) MarkerDX() string {
	if c.MarkerX > chartW*0.8 {
		return "-4"
	}
	return "4"
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func itoa(i int) string { return strconv.Itoa(i) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// Sparkline lays out a small line of values (oldest first) as an SVG path
// in a 100 x 24 box; NaN values break the line. It returns "" when fewer
// than two values are finite.
func Sparkline(values []float64) string {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, v := range values {
		if finite(v) {
			lo, hi, n = math.Min(lo, v), math.Max(hi, v), n+1
		}
	}
	if n < 2 {
		return ""
	}
	if hi-lo < 1e-12 {
		lo, hi = lo-1, hi+1
	}
	var d strings.Builder
	pen := false
	for i, v := range values {
		if !finite(v) {
			pen = false
			continue
		}
		x := 100 * float64(i) / float64(len(values)-1)
		y := 22 - 20*(v-lo)/(hi-lo)
		if pen {
			d.WriteByte('L')
		} else {
			d.WriteByte('M')
		}
		pen = true
		d.WriteString(ftoa(x) + " " + ftoa(y))
	}
	return d.String()
}

func i64a(i int64) string { return strconv.FormatInt(i, 10) }
