package telemetry

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// fleetHistory keeps the settled history points of the fleet's range
// queries between readings. History instants lie on whole minutes, so a
// reading a few seconds or minutes after the last one evaluates only the
// steps that are new or not settled yet, not the whole hour: at a large
// fleet the range queries are most of a reading's cost.
type fleetHistory struct {
	mu      sync.Mutex
	entries map[string]*histEntry // by query
}

// histEntry holds a query's answer at every step of [from, through].
type histEntry struct {
	from, through time.Time
	series        []Result
	used          time.Time
}

// fleetHistoryIdle is how long an entry no reading used is kept.
const fleetHistoryIdle = 10 * time.Minute

// get answers query over [start, end] every step (start and end on the
// step grid): the cached settled points, and eval for the steps before
// and after them. It then keeps the points up to settled.
func (h *fleetHistory) get(ctx context.Context, query string, start, end, settled time.Time, step time.Duration,
	eval func(ctx context.Context, start, end time.Time) ([]Result, error)) ([]Result, error) {
	var have []Result
	from, through := start, start.Add(-step) // the cached span; empty when through < from
	h.mu.Lock()
	if e, ok := h.entries[query]; ok && !e.from.After(end) && !e.through.Before(start) {
		have, from, through = e.series, maxTime(e.from, start), e.through
	}
	h.mu.Unlock()

	var before, after []Result
	var err error
	if from.After(start) {
		if before, err = eval(ctx, start, from.Add(-step)); err != nil {
			return nil, err
		}
	}
	if through.Before(end) {
		if after, err = eval(ctx, through.Add(step), end); err != nil {
			return nil, err
		}
	}
	out := mergeResults(start, end, before, have, after)
	if settled.After(end) {
		settled = end
	}
	// The cached span ends on the grid, so the next reading's first fresh
	// step is on it too.
	if settled.After(start) {
		settled = start.Add(settled.Sub(start) / step * step)
	}
	if !settled.Before(start) {
		keep := make([]Result, 0, len(out))
		for _, r := range out {
			if ss := window(r.Samples, start, settled); len(ss) > 0 {
				keep = append(keep, Result{Labels: r.Labels, Samples: ss})
			}
		}
		h.put(query, &histEntry{from: start, through: settled, series: keep, used: time.Now()})
	}
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (h *fleetHistory) put(query string, e *histEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries = map[string]*histEntry{}
	}
	h.entries[query] = e
	for k, old := range h.entries {
		if e.used.Sub(old.used) > fleetHistoryIdle {
			delete(h.entries, k)
		}
	}
}

// window returns the samples of ss (sorted by time) within [from, to].
func window(ss []metrics.Sample, from, to time.Time) []metrics.Sample {
	i := sort.Search(len(ss), func(i int) bool { return !ss[i].T.Before(from) })
	j := sort.Search(len(ss), func(j int) bool { return ss[j].T.After(to) })
	if i >= j {
		return nil
	}
	return ss[i:j:j]
}

// mergeResults joins answers over consecutive spans of time, in order,
// by label set, keeping the samples within [start, end].
func mergeResults(start, end time.Time, parts ...[]Result) []Result {
	var out []Result
	idx := map[string]int{}
	for _, part := range parts {
		for _, r := range part {
			ss := window(r.Samples, start, end)
			if len(ss) == 0 {
				continue
			}
			k := labelKey(r.Labels)
			i, ok := idx[k]
			if !ok {
				idx[k] = len(out)
				out = append(out, Result{Labels: r.Labels, Samples: ss})
				continue
			}
			// A new slice: the cached one is shared with the cache and
			// with earlier readings.
			joined := make([]metrics.Sample, 0, len(out[i].Samples)+len(ss))
			out[i].Samples = append(append(joined, out[i].Samples...), ss...)
		}
	}
	sortResults(out)
	return out
}
