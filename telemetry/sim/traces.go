package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:generate go test -run TestTraceTables -update

// traceQuantiles are the probabilities at which the trace tables give
// request sizes.
var traceQuantiles = []float64{0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}

// TraceStats summarises one Azure LLM inference trace (Patel et al.,
// "Splitwise", ISCA 2024; CC-BY 4.0): request-size quantiles and arrival
// burstiness.
type TraceStats struct {
	Name      string
	Requests  int
	MeanRate  float64   // requests per second over the trace
	Context   []float64 // context (prompt) tokens at traceQuantiles
	Generated []float64 // generated tokens at traceQuantiles
	MeanCtx   float64
	MeanGen   float64
	// InterArrivalCV is the coefficient of variation of inter-arrival
	// times (1 for a Poisson process).
	InterArrivalCV float64
	// Fano5s and Fano60s are the index of dispersion (variance / mean) of
	// arrival counts in 5 s and 60 s windows (1 for Poisson).
	Fano5s, Fano60s float64
}

// deriveTrace reads a trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens)
// and computes its statistics.
func deriveTrace(name string, r io.Reader) (TraceStats, error) {
	sc := bufio.NewScanner(r)
	var ts []float64
	var ctx, gen []float64
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			continue // header
		}
		f := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(f) != 3 {
			return TraceStats{}, fmt.Errorf("sim: trace %s line %d: want 3 fields, got %d", name, line, len(f))
		}
		t, err := time.Parse("2006-01-02 15:04:05.9999999", f[0])
		if err != nil {
			return TraceStats{}, fmt.Errorf("sim: trace %s line %d: %w", name, line, err)
		}
		c, err1 := strconv.ParseFloat(f[1], 64)
		g, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return TraceStats{}, fmt.Errorf("sim: trace %s line %d: token counts are not numbers", name, line)
		}
		ts = append(ts, float64(t.UnixNano())/1e9)
		ctx = append(ctx, c)
		gen = append(gen, g)
	}
	if err := sc.Err(); err != nil {
		return TraceStats{}, fmt.Errorf("sim: read trace %s: %w", name, err)
	}
	if len(ts) < 100 {
		return TraceStats{}, fmt.Errorf("sim: trace %s has only %d rows", name, len(ts))
	}
	sort.Float64s(ts)
	s := TraceStats{Name: name, Requests: len(ts)}
	span := ts[len(ts)-1] - ts[0]
	s.MeanRate = round3(float64(len(ts)-1) / span)
	s.MeanCtx, s.MeanGen = round3(mean(ctx)), round3(mean(gen))
	s.Context, s.Generated = quantiles(ctx), quantiles(gen)
	gaps := make([]float64, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps[i-1] = ts[i] - ts[i-1]
	}
	m := mean(gaps)
	s.InterArrivalCV = round3(math.Sqrt(variance(gaps, m)) / m)
	s.Fano5s = round3(fano(ts, 5))
	s.Fano60s = round3(fano(ts, 60))
	return s, nil
}

func quantiles(x []float64) []float64 {
	y := append([]float64(nil), x...)
	sort.Float64s(y)
	out := make([]float64, len(traceQuantiles))
	for i, q := range traceQuantiles {
		pos := q * float64(len(y)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(y)-1)
		out[i] = round3(y[lo] + (pos-float64(lo))*(y[hi]-y[lo]))
	}
	return out
}

func fano(ts []float64, window float64) float64 {
	n := int((ts[len(ts)-1] - ts[0]) / window)
	if n < 2 {
		return 1
	}
	counts := make([]float64, n)
	for _, t := range ts {
		i := int((t - ts[0]) / window)
		if i < n {
			counts[i]++
		}
	}
	m := mean(counts)
	return variance(counts, m) / m
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func variance(x []float64, m float64) float64 {
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// quantileCDF returns P(X <= x) for X = scale * Q(U), where Q is the
// piecewise-linear quantile function given by q at traceQuantiles.
func quantileCDF(q []float64, scale, x float64) float64 {
	if scale <= 0 {
		return 1
	}
	v := x / scale
	if v < q[0] {
		return 0
	}
	last := len(q) - 1
	if v >= q[last] {
		return 1
	}
	for i := 1; i <= last; i++ {
		if v < q[i] {
			p0, p1 := traceQuantiles[i-1], traceQuantiles[i]
			if q[i] == q[i-1] {
				return p1
			}
			return p0 + (p1-p0)*(v-q[i-1])/(q[i]-q[i-1])
		}
	}
	return 1
}
