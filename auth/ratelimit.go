package auth

import (
	"math"
	"sync"
	"time"
)

// Limiter is an in-memory token bucket per key (a client address, a user
// name). It is safe for concurrent use and forgets full buckets.
type Limiter struct {
	mu      sync.Mutex
	burst   float64
	every   time.Duration // one attempt comes back per every
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// NewLimiter allows burst attempts per key at once, then one per every.
func NewLimiter(burst int, every time.Duration) *Limiter {
	return &Limiter{burst: float64(burst), every: every, buckets: map[string]*bucket{}}
}

// Allow takes one attempt for every key at now. When any key is out of
// attempts it takes none and returns how long until the next attempt.
func (l *Limiter) Allow(now time.Time, keys ...string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var wait time.Duration
	bs := make([]*bucket, len(keys))
	for i, k := range keys {
		b := l.buckets[k]
		if b == nil {
			b = &bucket{tokens: l.burst, at: now}
		} else if el := now.Sub(b.at); el > 0 {
			b.tokens = math.Min(l.burst, b.tokens+float64(el)/float64(l.every))
			b.at = now
		}
		bs[i] = b
		if b.tokens < 1 {
			wait = max(wait, time.Duration((1-b.tokens)*float64(l.every)))
		}
	}
	if wait > 0 {
		for i, k := range keys {
			l.buckets[k] = bs[i]
		}
		return false, wait
	}
	for i, k := range keys {
		bs[i].tokens--
		l.buckets[k] = bs[i]
	}
	if len(l.buckets) > 10000 {
		l.prune(now)
	}
	return true, 0
}

// prune drops buckets that have refilled completely.
func (l *Limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(l.every) >= l.burst {
			delete(l.buckets, k)
		}
	}
}
