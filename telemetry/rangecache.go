package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Long chart ranges are cached the way a query frontend caches them: the
// evaluation instants are aligned to multiples of the step, so the same
// chart asked for a minute later evaluates at the same instants, and every
// point old enough that no more data can arrive for its window is kept. A
// repeated request then evaluates only the few newest steps; a week-long
// live view stops re-reading a week of samples on every refresh.
const (
	// cacheMinStep is the shortest step cached: shorter ones are short
	// spans, cheap to evaluate afresh.
	cacheMinStep = 5 * time.Minute
	// cacheSettle is how long after its instant a point may still change
	// (late scrapes, the downsampler catching up); at least one step.
	cacheSettle = 5 * time.Minute
	// cacheMaxEntries bounds the cache; least recently used go first.
	cacheMaxEntries = 2048
)

// rangeCache holds settled points of step-aligned range queries.
type rangeCache struct {
	mu      sync.Mutex
	entries map[rangeKey]*rangeEntry
}

type rangeKey struct {
	query string
	step  time.Duration
}

// rangeEntry is a contiguous run of evaluated instants [from, through]:
// samples holds those that had a value (an instant without one is a gap,
// not a miss).
type rangeEntry struct {
	from, through time.Time
	samples       []metrics.Sample
	used          time.Time
}

func newRangeCache() *rangeCache {
	return &rangeCache{entries: map[rangeKey]*rangeEntry{}}
}

// alignedStart returns the first multiple of step at or after t.
func alignedStart(t time.Time, step time.Duration) time.Time {
	a := t.Truncate(step)
	if a.Before(t) {
		a = a.Add(step)
	}
	return a
}

// rangeFunc evaluates one query over [start, end] every step.
type rangeFunc func(ctx context.Context, start, end time.Time) ([]metrics.Sample, error)

// get answers [start, end] (start aligned to step) from the cached run and
// eval for the rest, then keeps what has settled by now.
func (c *rangeCache) get(ctx context.Context, query string, start, end time.Time, step time.Duration, now time.Time, eval rangeFunc) ([]metrics.Sample, error) {
	key := rangeKey{query, step}
	var have []metrics.Sample
	from := start
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && !e.from.After(start) && !e.through.Before(start) {
		for _, s := range e.samples {
			if !s.T.Before(start) && !s.T.After(end) {
				have = append(have, s)
			}
		}
		from = e.through.Add(step)
	}
	c.mu.Unlock()

	out := have
	if !from.After(end) {
		fresh, err := eval(ctx, from, end)
		if err != nil {
			return nil, err
		}
		out = append(out, fresh...)
	}

	// Keep the points whose window can no longer change.
	settled := now.Add(-max(cacheSettle, step)).Truncate(step)
	if settled.After(end) {
		settled = end
	}
	if !settled.Before(start) {
		keep := make([]metrics.Sample, 0, len(out))
		for _, s := range out {
			if !s.T.After(settled) {
				keep = append(keep, s)
			}
		}
		c.put(key, &rangeEntry{from: start, through: settled, samples: keep, used: now})
	}
	return out, nil
}

func (c *rangeCache) put(key rangeKey, e *rangeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok && old.through.After(e.through) && !old.from.After(e.from) {
		old.used = e.used // a concurrent request kept a longer run
		return
	}
	c.entries[key] = e
	if len(c.entries) <= cacheMaxEntries {
		return
	}
	var oldest rangeKey
	first := true
	for k, v := range c.entries {
		if first || v.used.Before(c.entries[oldest].used) {
			oldest, first = k, false
		}
	}
	delete(c.entries, oldest)
}
