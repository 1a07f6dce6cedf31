package telemetry

import (
	"context"
	"hash/fnv"
	"runtime"
	"sync"
	"time"
)

// How the embedded ingest is paced. Every target keeps its own schedule,
// but at most a pool's worth of scrapes run at once, each target scrapes at
// a fixed offset within its interval (so 500 targets do not all fetch in
// the same instant), and a scrape that is still running, or still waiting
// for a worker, when its next slot comes skips that slot instead of
// queueing behind itself: when the store or the pool falls behind, the
// schedule stretches and the skips are counted for /storage.

// DefaultScrapeConcurrency is the pool size when Options.ScrapeConcurrency
// is zero: 4 scrapes per CPU, at least 8. A scrape mostly waits on the
// network; more at once than this only competes for the CPU that parses
// and appends them.
func DefaultScrapeConcurrency() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// behindFor is how long a skipped slot keeps IngestStats.Behind true.
const behindFor = 5 * time.Minute

// IngestStats describes the embedded scraper and DCGM collector: how much
// they run and whether they keep their schedule.
type IngestStats struct {
	Targets     int // scrape targets
	Concurrency int // at most this many scrapes run at once
	// Scrapes counts the scrapes finished since start, and Skipped the
	// scheduled ones not run because the target's previous scrape
	// (fetch, parse and append, or the wait for a worker) still ran when
	// the slot came. Slow counts the scrapes that took longer than their
	// interval.
	Scrapes, Skipped, Slow int64
	// LastSkip is when a scrape slot was last skipped; zero if never.
	LastSkip time.Time
	// DCGM is true while the DCGM collector runs; DCGMCollections counts
	// its collections and DCGMSkipped the seconds it skipped because a
	// collection still ran.
	DCGM                         bool
	DCGMCollections, DCGMSkipped int64
	LastDCGMSkip                 time.Time
}

// Behind reports whether a scrape or DCGM slot was skipped in the last
// five minutes before now.
func (s IngestStats) Behind(now time.Time) bool {
	recent := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < behindFor }
	return recent(s.LastSkip) || recent(s.LastDCGMSkip)
}

// ingestMeter counts the ingest's work; its methods are safe for
// concurrent use.
type ingestMeter struct {
	mu sync.Mutex
	st IngestStats
}

func (m *ingestMeter) stats() IngestStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

func (m *ingestMeter) addTarget() {
	m.mu.Lock()
	m.st.Targets++
	m.mu.Unlock()
}

// scraped records one finished scrape that skipped missed slots.
func (m *ingestMeter) scraped(missed int, slow bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.Scrapes++
	if slow {
		m.st.Slow++
	}
	if missed > 0 {
		m.st.Skipped += int64(missed)
		m.st.LastSkip = now
	}
}

// collected records one DCGM collection that skipped missed seconds.
func (m *ingestMeter) collected(missed int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.DCGMCollections++
	if missed > 0 {
		m.st.DCGMSkipped += int64(missed)
		m.st.LastDCGMSkip = now
	}
}

// nextSlot returns the first slot after end of a schedule that had a slot
// at last and repeats every interval, and how many slots after last it
// passed over.
func nextSlot(last, end time.Time, interval time.Duration) (time.Time, int) {
	next := last.Add(interval)
	if next.After(end) {
		return next, 0
	}
	missed := int(end.Sub(next)/interval) + 1
	return next.Add(time.Duration(missed) * interval), missed
}

// scrapeOffset is the target's fixed place within its interval, spread
// uniformly over targets by a hash of its URL, as Prometheus spreads its
// own; the same target keeps its place across restarts.
func scrapeOffset(url string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(url))
	return time.Duration(h.Sum64() % uint64(interval))
}

// firstSlot is the target's first slot at or after now: a multiple of its
// interval since the Unix epoch, plus its offset.
func firstSlot(now time.Time, interval, offset time.Duration) time.Time {
	base := now.Truncate(interval).Add(offset)
	if base.Before(now) {
		base = base.Add(interval)
	}
	return base
}

// scrapePool runs scrape loops with at most cap(sem) scrapes at once.
type scrapePool struct {
	sem   chan struct{}
	meter *ingestMeter
	now   func() time.Time
}

func newScrapePool(concurrency int, meter *ingestMeter) *scrapePool {
	if concurrency <= 0 {
		concurrency = DefaultScrapeConcurrency()
	}
	meter.mu.Lock()
	meter.st.Concurrency = concurrency
	meter.mu.Unlock()
	return &scrapePool{sem: make(chan struct{}, concurrency), meter: meter, now: time.Now}
}

// run scrapes l at its slots until ctx is done.
func (p *scrapePool) run(ctx context.Context, l *scrapeLoop) {
	interval := l.target.interval
	slot := firstSlot(p.now(), interval, scrapeOffset(l.target.url, interval))
	timer := time.NewTimer(slot.Sub(p.now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		select {
		case <-ctx.Done():
			return
		case p.sem <- struct{}{}:
		}
		start := p.now()
		l.scrapeAndReport(ctx, start)
		<-p.sem
		end := p.now()
		if ctx.Err() != nil {
			return
		}
		var missed int
		slot, missed = nextSlot(slot, end, interval)
		p.meter.scraped(missed, end.Sub(start) > interval, end)
		timer.Reset(slot.Sub(end))
	}
}
