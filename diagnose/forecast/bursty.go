package forecast

import (
	"math"
	"slices"
)

// Which series are intermittent or heavy-tailed.
//
// A seasonal band with normal noise fits a series that wanders around its
// forecast. It does not fit one that sits at a floor most of the time and
// bursts now and then (errors, queue depth, disk writes, purchases per
// hour), nor one whose upper tail reaches far beyond anything a normal or
// exponential spread would: every routine burst of such a series is many
// standard errors out. The detector finds these series from their own
// history and judges their runs by the series' own record of bursts
// (tail.go: episodes per day at least as deep, a Pareto tail beyond the
// deepest) against DetectorOptions.BurstyPerDay, so a burst of the size
// the series routinely makes does not alert and one far beyond them does.
//
// A series is intermittent when at least floorShare of its samples equal
// its minimum (zero-inflated counts, an idle disk), and heavy-tailed when
// one tail of its distribution reaches tailRatio times farther from the
// median than the other: (q99 - q50) / (q50 - q1), or its inverse. Normal
// or uniform noise gives 1, a log-normal of sigma 0.2 about 1.6 and an
// exponential distribution about 5.7: a series skewed like an exponential
// has bursts the normal band calls anomalies every day, and one less
// skewed keeps its band alone.
const (
	floorShare   = 0.25
	tailRatio    = 5.0
	minBurstyObs = 48 // samples needed before a series can be called bursty
)

// isBursty reports whether the values look intermittent or heavy-tailed.
// It does not modify vals.
func isBursty(vals []float64) bool {
	if len(vals) < minBurstyObs {
		return false
	}
	s := slices.Clone(vals)
	slices.Sort(s)
	atFloor := 0
	for _, v := range s {
		if v != s[0] {
			break
		}
		atFloor++
	}
	if atFloor == len(s) {
		return false // constant: nothing bursts yet
	}
	if float64(atFloor) >= floorShare*float64(len(s)) {
		return true
	}
	q := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	lo, mid, hi := q(0.01), q(0.5), q(0.99)
	up, down := hi-mid, mid-lo
	switch {
	case up <= 0 && down <= 0:
		return false // constant but for a few samples: nothing bursts
	case up <= 0 || down <= 0:
		return true
	}
	return up >= tailRatio*down || down >= tailRatio*up
}
