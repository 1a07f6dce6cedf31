package metrics

import "math"

// Materiality is how far a metric must move from its baseline before the
// move matters to an operator, whatever its z: a quiet hour makes tiny
// changes statistically clear (KV-cache usage going from 0.2 % to 1.8 %
// is eleven standard deviations against a flat hour and harms nobody).
// A move is material when it is at least Abs (in the metric's unit) and
// at least Rel of the baseline mean, each where set; a value on the
// healthy side of Level (for an Up metric: below it) is never material
// by itself.
type Materiality struct {
	Abs, Rel float64
	Level    float64 // 0: no level rule
}

// materiality is the one table of floors, per catalog id. The values are
// the smallest moves an on-call engineer would act on: a quarter of a
// mean latency and tens of milliseconds; half of a p99, whose tail swings
// by a third from one minute to the next in a healthy service; a queue
// wait of 50 ms, which is lost next to a TTFT of hundreds; a tenth of a
// rate, five points of a 0-1 activity, a few percent of a clock, a tenth
// of a percent of errors. Metrics absent here are material whenever they
// are anomalous.
var materiality = map[string]Materiality{
	GatewayE2E: {Abs: 50, Rel: 0.25}, E2E: {Abs: 50, Rel: 0.25}, E2EP99: {Abs: 100, Rel: 0.5},
	TTFT: {Abs: 25, Rel: 0.25}, TTFTP99: {Abs: 50, Rel: 0.5},
	TPOT: {Abs: 2, Rel: 0.25}, TPOTP99: {Abs: 5, Rel: 0.5},
	QueueTime: {Abs: 50, Rel: 0.5}, PrefillTime: {Abs: 25, Rel: 0.25}, DecodeTime: {Abs: 50, Rel: 0.25},
	ThroughputRPS: {Rel: 0.1}, ArrivalRPS: {Rel: 0.1}, PromptTPS: {Rel: 0.1}, GenerationTPS: {Rel: 0.1},
	RunningSeqs: {Abs: 2, Rel: 0.2}, QueueDepth: {Abs: 5}, MeanPromptTokens: {Rel: 0.1},
	SMUtil: {Abs: 0.05}, TensorActive: {Abs: 0.05}, DRAMActive: {Abs: 0.05},
	GPUMemUsedFrac: {Abs: 0.05},
	// A KV cache under half full is never a problem by itself.
	KVCacheUsage: {Abs: 0.05, Level: 0.5},
	SMClock:      {Rel: 0.03}, MemClock: {Rel: 0.03}, Power: {Rel: 0.05}, GPUTemp: {Abs: 3},
	KVCacheHitRate: {Abs: 0.03}, RejectionRate: {Abs: 0.03},
	ErrorRate: {Abs: 0.001}, PreemptionRate: {Abs: 0.1},
}

// MaterialityOf returns a metric's floor and whether it has one.
func MaterialityOf(id string) (Materiality, bool) {
	m, ok := materiality[id]
	return m, ok
}

// Material reports whether a move of metric id from its baseline mean to
// value is large enough to matter.
func Material(id string, mean, value float64) bool {
	f, ok := materiality[id]
	if !ok {
		return true
	}
	if m, ok := Lookup(id); ok && f.Level > 0 {
		switch m.Bad {
		case Up:
			if value < f.Level {
				return false
			}
		case Down:
			if value > f.Level {
				return false
			}
		}
	}
	d := math.Abs(value - mean)
	return d >= f.Abs && d >= f.Rel*math.Abs(mean)
}

// MinTailRequests is how many requests must finish in a p99 latency's
// window (the last minute) before the p99 is judged. Of n requests about
// n/100 lie beyond the 99th percentile, and that count varies by its
// square root: with a hundred requests the "p99" is the slowest one, and
// below five hundred it is set by the slowest handful, so that one burst
// of a few seconds moves it by any number of standard deviations.
const MinTailRequests = 500

// tailQuantiles are the per-request tail latencies.
var tailQuantiles = map[string]bool{E2EP99: true, TTFTP99: true, TPOTP99: true}

// TailJudgeable reports whether metric id's current value in v may be
// judged against its baseline: always, but for the p99 latencies while
// fewer than MinTailRequests requests finished in the last minute
// (throughput_rps × 60). Without a throughput it says yes.
func TailJudgeable(id string, v Values) bool {
	if !tailQuantiles[id] {
		return true
	}
	rps, ok := v.Get(ThroughputRPS)
	return !ok || rps*60 >= MinTailRequests
}
