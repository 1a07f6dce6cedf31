package telemetry

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Chart ranges are cached the way a query frontend caches them: the
// evaluation instants are aligned to multiples of the step, so the same
// chart asked for a minute later evaluates at the same instants, and every
// point old enough that no more data can arrive for its window is kept. A
// repeated request then evaluates only the few newest steps: a week-long
// live view stops re-reading a week of samples on every refresh, and an
// hour's view of one engine among hundreds stops re-running its PromQL
// over the whole hour every few seconds.
const (
	// cacheSettle is how long after its instant a point may still change
	// (late scrapes, a remote's ingestion lag, the downsampler catching
	// up); at least one step.
	cacheSettle = 5 * time.Minute
	// cacheMaxEntries bounds the cache: a live view of one scope keeps
	// about 40 entries of at most 360 points (11 KiB each), so this holds
	// the views of some 200 scopes in at most 90 MiB. Least recently used
	// go first.
	cacheMaxEntries = 8192
)

// rangeCache holds settled points of step-aligned range queries.
type rangeCache struct {
	mu      sync.Mutex
	entries map[rangeKey]*rangeEntry
	// rawSettle replaces cacheSettle for steps of a minute and under,
	// which the live windows up to 6 h and the snapshots' hour of history
	// use: in embedded mode they read the raw tier, whose points settle
	// once every target has been scraped past them.
	rawSettle time.Duration
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

// newRangeCache returns an empty cache; rawSettle is as the field says,
// cacheSettle when zero.
func newRangeCache(rawSettle time.Duration) *rangeCache {
	if rawSettle <= 0 {
		rawSettle = cacheSettle
	}
	return &rangeCache{entries: map[rangeKey]*rangeEntry{}, rawSettle: rawSettle}
}

// settleFor is how long after its instant a point at step may change.
func (c *rangeCache) settleFor(step time.Duration) time.Duration {
	if c != nil && step <= time.Minute {
		return max(c.rawSettle, step)
	}
	return max(cacheSettle, step)
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
// eval for the rest, then keeps what has settled by now. A nil cache
// evaluates every time.
func (c *rangeCache) get(ctx context.Context, query string, start, end time.Time, step time.Duration, now time.Time, eval rangeFunc) ([]metrics.Sample, error) {
	if c == nil {
		return eval(ctx, start, end)
	}
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
	settled := now.Add(-c.settleFor(step)).Truncate(step)
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
	// Evict the least recently used eighth at once, so that a full cache
	// sorts once per many insertions rather than scanning on each.
	keys := make([]rangeKey, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b rangeKey) int { return c.entries[a].used.Compare(c.entries[b].used) })
	for _, k := range keys[:len(keys)/8] {
		delete(c.entries, k)
	}
}
