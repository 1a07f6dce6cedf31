package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
)

func TestNextSlot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name       string
		end        time.Time
		wantNext   time.Time
		wantMissed int
	}{
		{"on time", t0.Add(300 * time.Millisecond), t0.Add(time.Second), 0},
		{"just before the next slot", t0.Add(999 * time.Millisecond), t0.Add(time.Second), 0},
		{"at the next slot", t0.Add(time.Second), t0.Add(2 * time.Second), 1},
		{"two and a half intervals", t0.Add(2500 * time.Millisecond), t0.Add(3 * time.Second), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, missed := nextSlot(t0, tc.end, time.Second)
			if !next.Equal(tc.wantNext) || missed != tc.wantMissed {
				t.Errorf("nextSlot = %s, %d; want %s, %d", next.Sub(t0), missed, tc.wantNext.Sub(t0), tc.wantMissed)
			}
		})
	}
}

// TestScrapeOffsetSpread checks that a fleet's targets are spread over the
// interval: no tenth of it holds more than twice its share.
func TestScrapeOffsetSpread(t *testing.T) {
	const n, interval = 500, 5 * time.Second
	var buckets [10]int
	for i := range n {
		off := scrapeOffset(fmt.Sprintf("http://10.0.%d.%d:8000/metrics", i/250, i%250), interval)
		if off < 0 || off >= interval {
			t.Fatalf("offset %s outside [0, %s)", off, interval)
		}
		buckets[off*10/interval]++
	}
	for i, c := range buckets {
		if c > 2*n/10 || c < n/20 {
			t.Errorf("tenth %d of the interval holds %d of %d targets: %v", i, c, n, buckets)
		}
	}
	// A target keeps its place.
	if a, b := scrapeOffset("http://h:1/m", interval), scrapeOffset("http://h:1/m", interval); a != b {
		t.Errorf("offsets differ: %s, %s", a, b)
	}
	now := time.Unix(1000, 300e6)
	if got := firstSlot(now, interval, 2*time.Second); !got.Equal(time.Unix(1002, 0)) {
		t.Errorf("first slot %s, want 1002 s", got)
	}
	if got := firstSlot(now, interval, 100*time.Millisecond); !got.Equal(time.Unix(1005, 100e6)) {
		t.Errorf("first slot %s, want 1005.1 s", got)
	}
}

// slowTarget serves "up 1" after a delay and records how many requests it
// served at once.
type slowTarget struct {
	delay          time.Duration
	inflight, most atomic.Int64
	served         atomic.Int64
}

func (s *slowTarget) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(s.delay)
	s.served.Add(1)
	fmt.Fprintln(w, "up 1")
}

// runPool scrapes the loops in a pool of the given size for d.
func runPool(t *testing.T, loops []*scrapeLoop, concurrency int, d time.Duration) IngestStats {
	t.Helper()
	meter := &ingestMeter{}
	pool := newScrapePool(concurrency, meter)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range loops {
		meter.addTarget()
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool.run(ctx, l)
		}()
	}
	wg.Wait()
	return meter.stats()
}

func poolLoops(t *testing.T, srv *httptest.Server, n int, interval string, db storage.Appendable) []*scrapeLoop {
	t.Helper()
	status := newStatusBoard(slog.New(slog.DiscardHandler))
	var loops []*scrapeLoop
	for i := range n {
		st, err := resolveTarget(Target{URL: fmt.Sprintf("%s/metrics?t=%d", srv.URL, i), Labels: map[string]string{labelScrapeInterval: interval}}, DefaultScrapeInterval)
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, newScrapeLoop(st, srv.Client(), db, status))
	}
	return loops
}

// TestScrapePoolBound scrapes 30 slow targets through a pool of 3: never
// more than 3 requests are in flight, the pool is used to its size, and
// the targets that could not be scraped in time count skipped slots.
func TestScrapePoolBound(t *testing.T) {
	target := &slowTarget{delay: 40 * time.Millisecond}
	srv := httptest.NewServer(target)
	defer srv.Close()
	st := runPool(t, poolLoops(t, srv, 30, "200ms", openTestDB(t)), 3, 1500*time.Millisecond)
	if most := target.most.Load(); most > 3 || most < 2 {
		t.Errorf("%d scrapes in flight at most, want 2 or 3 (the pool's size)", most)
	}
	if st.Concurrency != 3 || st.Targets != 30 {
		t.Errorf("stats say %d targets, %d at once; want 30 and 3", st.Targets, st.Concurrency)
	}
	// 30 targets of 40 ms each every 200 ms need 6 workers; 3 fall behind.
	if st.Scrapes == 0 || st.Skipped == 0 || st.LastSkip.IsZero() || !st.Behind(time.Now()) {
		t.Errorf("stats %+v: want scrapes and skipped slots", st)
	}
	// Scrapes cut off by the end of the test are served but not counted.
	if served := target.served.Load(); st.Scrapes > served || served-st.Scrapes > 3 {
		t.Errorf("%d scrapes counted, %d served", st.Scrapes, served)
	}
}

// TestScrapePoolOnTime: a pool large enough for its targets keeps their
// schedule. (A loaded test machine may stall a scrape now and then, so a
// few skips are allowed.)
func TestScrapePoolOnTime(t *testing.T) {
	target := &slowTarget{delay: 5 * time.Millisecond}
	srv := httptest.NewServer(target)
	defer srv.Close()
	st := runPool(t, poolLoops(t, srv, 10, "200ms", openTestDB(t)), 8, 1500*time.Millisecond)
	// Each target scrapes once per 200 ms slot after its offset: 6 or 7
	// slots in 1.5 s.
	if st.Scrapes < 30 || st.Skipped+st.Slow > st.Scrapes/5 {
		t.Errorf("stats %+v: want about 65 scrapes, nearly none skipped or slow", st)
	}
}

// slowAppendable delays every commit, as a store that falls behind does,
// and records whether two commits ever overlapped.
type slowAppendable struct {
	storage.Appendable
	delay          time.Duration
	inflight, most atomic.Int64
	commits        atomic.Int64
}

func (s *slowAppendable) Appender(ctx context.Context) storage.Appender {
	return &slowAppender{Appender: s.Appendable.Appender(ctx), s: s}
}

type slowAppender struct {
	storage.Appender
	s *slowAppendable
}

func (a *slowAppender) Commit() error {
	n := a.s.inflight.Add(1)
	defer a.s.inflight.Add(-1)
	if n > a.s.most.Load() {
		a.s.most.Store(n)
	}
	time.Sleep(a.s.delay)
	a.s.commits.Add(1)
	return a.Appender.Commit()
}

// TestScrapePoolSlowStore: when appending takes longer than the interval,
// the target's scrapes do not pile up behind each other; the schedule
// stretches and counts the skipped slots and slow scrapes.
func TestScrapePoolSlowStore(t *testing.T) {
	srv := httptest.NewServer(&slowTarget{})
	defer srv.Close()
	db := &slowAppendable{Appendable: openTestDB(t), delay: 250 * time.Millisecond}
	st := runPool(t, poolLoops(t, srv, 1, "100ms", db), 4, 1500*time.Millisecond)
	if db.most.Load() != 1 {
		t.Errorf("%d commits of one target at once, want 1", db.most.Load())
	}
	// One scrape per 300 ms (the 250 ms commit, then the next slot).
	if st.Scrapes < 2 || st.Scrapes > 6 || st.Skipped < 2*st.Scrapes-1 || st.Slow != st.Scrapes {
		t.Errorf("stats %+v: want a few slow scrapes, each skipping two slots", st)
	}
}

// TestDCGMSkipsWhenSlow: a DCGM collection slower than its interval skips
// the slots it overran, and they are counted.
func TestDCGMSkipsWhenSlow(t *testing.T) {
	db := &slowAppendable{Appendable: openTestDB(t), delay: 120 * time.Millisecond}
	c, err := newDCGMCollector(&fakeDCGM{values: recordedValues()}, "embedded", db)
	if err != nil {
		t.Fatal(err)
	}
	tel := &Telemetry{status: newStatusBoard(slog.New(slog.DiscardHandler)), meter: &ingestMeter{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	tel.runDCGM(ctx, c, 50*time.Millisecond, time.Now)
	st := tel.meter.stats()
	if st.DCGMCollections < 3 || st.DCGMSkipped < 2*st.DCGMCollections-1 || st.LastDCGMSkip.IsZero() {
		t.Errorf("stats %+v: want collections every third slot, the others skipped", st)
	}
	if db.commits.Load() != st.DCGMCollections && db.commits.Load() != st.DCGMCollections+1 {
		t.Errorf("%d commits for %d collections", db.commits.Load(), st.DCGMCollections)
	}
}
