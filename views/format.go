package views

import (
	"math"
	"strconv"
	"time"

	"github.com/casebook/casebook/metrics"
)

// MetricLabel returns the catalog's short display name of a metric
// (metrics.Metric.Label), or the id itself for an id not in the catalog.
func MetricLabel(id string) string {
	if m, ok := metrics.Lookup(id); ok {
		return m.Label
	}
	return id
}

// DimensionTitle returns the display title of a dimension.
func DimensionTitle(d metrics.Dimension) string {
	switch d {
	case metrics.Latency:
		return "Latency"
	case metrics.Throughput:
		return "Throughput"
	case metrics.Utilization:
		return "Utilization"
	case metrics.Quality:
		return "Quality"
	}
	return string(d)
}

// FormatValue renders a value of a catalog metric with its unit, with as
// many digits as a reader needs ("412 ms", "1.24 s", "87%", "12.4k tok/s").
// Unknown ids are rendered as plain numbers.
func FormatValue(id string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	m, ok := metrics.Lookup(id)
	if !ok {
		return num(v)
	}
	return formatUnit(m.Unit, v)
}

func formatUnit(unit string, v float64) string {
	switch unit {
	case "ms":
		if math.Abs(v) >= 1000 {
			return strconv.FormatFloat(v/1000, 'f', 2, 64) + " s"
		}
		return num(v) + " ms"
	case "ratio", "0-1":
		p := v * 100
		if math.Abs(p) < 10 && p != 0 {
			return strconv.FormatFloat(p, 'f', 1, 64) + "%"
		}
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	case "C":
		return num(v) + " °C"
	case "1/s":
		return num(v) + " /s"
	case "count":
		if math.Abs(v) < 100 {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return num(v)
	case "tokens":
		return num(v) + " tok"
	case "":
		return num(v)
	}
	return num(v) + " " + unit
}

// num renders v with three significant digits and a k/M suffix for large
// values.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// FormatZ renders a signed deviation in standard deviations ("+4.2σ").
// From 100σ on the digits say nothing more than "far outside the
// baseline" (the engine caps z at 1000), so they read ">+99σ".
func FormatZ(z float64) string {
	if math.IsNaN(z) || math.IsInf(z, 0) {
		return "–"
	}
	switch {
	case z >= 100:
		return ">+99σ"
	case z <= -100:
		return "<-99σ"
	}
	s := strconv.FormatFloat(z, 'f', 1, 64)
	if z >= 0 {
		s = "+" + s
	}
	return s + "σ"
}

// FormatPercent renders a 0-1 fraction as a whole percentage.
func FormatPercent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 0, 64) + "%"
}

// FormatTime renders t in UTC for server-rendered text; the page script
// rewrites elements carrying data-t into the reader's local time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// UnixAttr renders t as unix seconds for data-t attributes.
func UnixAttr(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10)
}

// FormatAgo renders the time between t and now in words ("7 min ago").
func FormatAgo(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
	}
}

// FormatDuration renders a window length compactly ("15m", "6h", "7d").
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	if r := d.Round(time.Second); r != d && r > 0 {
		return FormatDuration(r) // 59.7s is "1m", 90.2s "1m30s"
	}
	return d.String()
}
