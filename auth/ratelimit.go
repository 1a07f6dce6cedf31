package auth

import (
	"math"
	"net/netip"
	"strings"
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

// refund gives one attempt back to key, up to the burst.
func (l *Limiter) refund(now time.Time, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[key]; b != nil {
		b.tokens = math.Min(l.burst, b.tokens+1)
	}
}

// reset forgets key: its next attempt starts from a full bucket.
func (l *Limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.buckets, key)
}

// Sign-in limits: failures per (address, account name), and per address.
const (
	LoginPairBurst  = 5
	LoginAddrBurst  = 20
	LoginRefillTime = 20 * time.Second
)

// LoginLimiter bounds failed sign-ins per (client address, account name)
// and per client address. There is no limit per name alone: that would
// let anyone lock any account (the last admin's included) by failing on
// purpose from elsewhere. Every attempt takes one from both buckets when
// it starts, so concurrent guesses cannot overtake the count; a success
// gives its attempt back and clears the (address, name) bucket, so
// successes never count. IPv6 addresses are counted per /64, the block
// one client usually holds.
type LoginLimiter struct {
	pair, addr *Limiter
}

// NewLoginLimiter allows LoginPairBurst failures per (address, name) and
// LoginAddrBurst per address, then one of each per LoginRefillTime.
func NewLoginLimiter() *LoginLimiter {
	return &LoginLimiter{pair: NewLimiter(LoginPairBurst, LoginRefillTime), addr: NewLimiter(LoginAddrBurst, LoginRefillTime)}
}

// Begin takes an attempt for addr signing in as name. When either bucket
// is empty it takes none and returns how long until the next attempt.
func (l *LoginLimiter) Begin(now time.Time, addr, name string) (bool, time.Duration) {
	a := addrKey(addr)
	if ok, wait := l.addr.Allow(now, a); !ok {
		return false, wait
	}
	if ok, wait := l.pair.Allow(now, a+" "+strings.ToLower(name)); !ok {
		l.addr.refund(now, a)
		return false, wait
	}
	return true, 0
}

// Succeeded gives back the attempt Begin took and clears the failures of
// addr as name.
func (l *LoginLimiter) Succeeded(now time.Time, addr, name string) {
	a := addrKey(addr)
	l.addr.refund(now, a)
	l.pair.reset(a + " " + strings.ToLower(name))
}

// addrKey is the address an attempt counts against: IPv6 by /64.
func addrKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}
