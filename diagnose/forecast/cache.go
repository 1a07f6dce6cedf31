package forecast

import (
	"fmt"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// CacheOptions configures a Cache.
type CacheOptions struct {
	// MaxAge is how old a model may get before the next Get refits it
	// (default 1 h).
	MaxAge time.Duration
	// Size is the most series kept; the least recently used goes first
	// (default 4096).
	Size int
	// Model configures the fits.
	Model Options
}

// Cache keeps one fitted model per series key and refits it on a
// schedule. It is safe for concurrent use.
type Cache struct {
	opts    CacheOptions
	mu      sync.Mutex
	entries map[string]*cacheEntry
	tick    uint64
}

type cacheEntry struct {
	model    *Model
	fittedAt time.Time
	used     uint64
}

// NewCache returns an empty cache.
func NewCache(opts CacheOptions) *Cache {
	if opts.MaxAge <= 0 {
		opts.MaxAge = time.Hour
	}
	if opts.Size <= 0 {
		opts.Size = 4096
	}
	return &Cache{opts: opts, entries: map[string]*cacheEntry{}}
}

// Get returns the model of key, fitting it from history when there is none
// or it was fitted more than MaxAge before now. history is called only
// when a fit is due.
func (c *Cache) Get(key string, now time.Time, history func() ([]metrics.Sample, error)) (*Model, error) {
	c.mu.Lock()
	c.tick++
	if e, ok := c.entries[key]; ok && now.Sub(e.fittedAt) < c.opts.MaxAge && !now.Before(e.fittedAt) {
		e.used = c.tick
		c.mu.Unlock()
		return e.model, nil
	}
	c.mu.Unlock()

	samples, err := history()
	if err != nil {
		return nil, fmt.Errorf("forecast: history of %s: %w", key, err)
	}
	m, err := Fit(samples, c.opts.Model)
	if err != nil {
		return nil, fmt.Errorf("forecast: fit %s: %w", key, err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	c.entries[key] = &cacheEntry{model: m, fittedAt: now, used: c.tick}
	for len(c.entries) > c.opts.Size {
		var oldest string
		var at uint64
		first := true
		for k, e := range c.entries {
			if first || e.used < at {
				oldest, at, first = k, e.used, false
			}
		}
		delete(c.entries, oldest)
	}
	return m, nil
}

// Forget drops the model of key, so the next Get refits it.
func (c *Cache) Forget(key string) {
	c.mu.Lock()
	delete(c.entries, key)
	c.mu.Unlock()
}

// Len is the number of cached models.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
