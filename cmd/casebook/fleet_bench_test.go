package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/casebook/casebook/demo"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
	"github.com/casebook/casebook/watch"
	"github.com/casebook/casebook/web"
)

// fleets are the fleet sizes of the overview's scaling curve, by engines.
var fleets = []struct {
	engines int
	opts    sim.Options
}{
	{4, sim.Options{Models: 2, InstancesPerModel: 2}},
	{64, sim.Options{Models: 8, InstancesPerModel: 8}},
	{500, sim.Options{Deployments: sim.FleetPreset()}},
}

// BenchmarkOverviewFleet measures the overview in embedded mode against
// simulated fleets of 4, 64 and 500 engines: the real telemetry (an
// embedded TSDB back-filled with 70 minutes of the fleet's history, then
// scraped every 5 s while the benchmark runs; see stillFleet) behind the real
// console. It reports the p50 and p95 server time of GET / and the HTML
// it sends, and the process's CPU time per request. "read" requests each
// read the fleet anew (each asks for an instant 6 s before the last, past
// the shared reading's few seconds): the cost of one reading. "live"
// requests come at the wall clock, liveGap apart, as viewers and live
// refreshes do: they are served from the latest reading, classified once
// per reading, while the next is read and classified in the background
// (see liveLatency; its CPU time is in theirs).
//
//	go test -tags sqlite_fts5 -run '^$' -bench OverviewFleet -benchtime 10x -timeout 60m ./cmd/casebook/
func BenchmarkOverviewFleet(b *testing.B) {
	for _, f := range fleets {
		b.Run(fmt.Sprintf("engines=%d", f.engines), func(b *testing.B) {
			tel := fleetTelemetry(b, f.opts)
			diag := diagnose.New(diagnose.Options{})
			b.Run("read", func(b *testing.B) {
				at := time.Now()
				srv := web.New(web.Options{Telemetry: tel, Diagnoser: diag, RequestTimeout: benchTimeout, Now: func() time.Time {
					at = at.Add(-6 * time.Second)
					return at
				}})
				overviewLatency(b, srv, "/", 0)
			})
			b.Run("live", func(b *testing.B) {
				liveLatency(b, web.New(web.Options{Telemetry: tel, Diagnoser: diag, RequestTimeout: benchTimeout}), "/")
			})
		})
	}
}

// liveGap is the time between two "live" requests: several viewers'
// refreshes, so that a run of 20 spans several readings of the fleet.
const liveGap = time.Second

// liveLatency requests path once (reported as ms-cold: the first viewer
// after a quiet spell waits for a reading of the fleet), then b.N times
// at the wall clock, liveGap apart, and reports as overviewLatency does,
// plus the process's share of one core over the run (scraping and the
// background readings included).
func liveLatency(b *testing.B, srv http.Handler, path string) {
	b.Helper()
	start := time.Now()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, rec.Code)
	}
	cold := time.Since(start)
	overviewLatency(b, srv, path, liveGap)
	b.ReportMetric(float64(cold.Microseconds())/1000, "ms-cold")
}

// stillFleet is a simulated fleet that stands still after its back-fill:
// it is scraped every 5 s as usual, but its simulation does not advance,
// which at 500 engines alone takes more CPU than a small machine has and
// is no cost of the console.
type stillFleet struct{ *demo.Cluster }

// Run does not advance the simulation.
func (stillFleet) Run(ctx context.Context, _ time.Duration) { <-ctx.Done() }

// benchTimeout replaces the console's 30 s request deadline, so that a
// slow overview is measured rather than cut off.
const benchTimeout = 10 * time.Minute

// fleetTelemetry starts the console's telemetry on a simulated fleet.
func fleetTelemetry(b *testing.B, opts sim.Options) *telemetry.Telemetry {
	b.Helper()
	return fleetTelemetryFor(b, demo.New(opts), 70*time.Minute)
}

// fleetTelemetryFor starts the console's telemetry on a simulated fleet
// with backfill of history.
func fleetTelemetryFor(b *testing.B, cluster *demo.Cluster, backfill time.Duration) *telemetry.Telemetry {
	b.Helper()
	began := time.Now()
	tel, err := telemetry.Open(context.Background(), telemetry.Options{
		DataDir: b.TempDir(), Demo: stillFleet{cluster}, DemoBackfill: backfill,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Close() })
	b.Logf("telemetry ready in %s", time.Since(began).Round(time.Millisecond))
	waitDownsampled(b, tel)
	return tel
}

// waitDownsampled waits until the downsampler has aggregated the
// back-fill into the minute and hour tiers, then collects the back-fill's
// garbage, so that the pages are measured in the steady state of a
// console that has run a while rather than beside its one-off catch-up
// (at 500 engines, about a minute of a core).
func waitDownsampled(b *testing.B, tel *telemetry.Telemetry) {
	b.Helper()
	began := time.Now()
	for {
		st, err := tel.Storage()
		if err != nil {
			b.Fatal(err)
		}
		if caughtUp(st) {
			b.Logf("downsampler caught up in %s", time.Since(began).Round(time.Millisecond))
			// The back-fill leaves gigabytes of garbage whose first
			// collection takes a minute of background marking.
			runtime.GC()
			return
		}
		if time.Since(began) > 10*time.Minute {
			b.Fatalf("the downsampler is still behind after 10 minutes: %+v", st.Tiers)
		}
		time.Sleep(time.Second)
	}
}

// caughtUp reports whether every aggregated tier trails the wall clock by
// at most two of its intervals (one for the interval in progress, one for
// the aggregation's settle time).
func caughtUp(st telemetry.StorageStats) bool {
	if len(st.Tiers) < 2 {
		return false
	}
	for _, t := range st.Tiers[1:] {
		if t.Watermark.IsZero() || t.Lag > 2*t.Resolution+time.Minute {
			return false
		}
	}
	return true
}

// overviewLatency requests path b.N times, gap apart, and reports the
// p50 and p95 server time, the size of the last answer, the CPU time of
// the goroutine that served each request (req-cpu-ms: work it hands to
// other goroutines, such as a scope page's parallel queries or a reading
// of the fleet in the background, is not in it), the process's CPU time
// per request (cpu-ms: everything, scraping included) and its share of
// one core over the run.
func overviewLatency(b *testing.B, srv http.Handler, path string, gap time.Duration) {
	b.Helper()
	// The request runs on this goroutine's thread, so the thread's CPU
	// time is the request's own: what a busy machine cannot hide.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	durations := make([]time.Duration, 0, b.N)
	var reqCPU time.Duration
	size := 0
	cpu0, wall0 := cpuTime(), time.Now()
	for b.Loop() {
		if gap > 0 && len(durations) > 0 {
			time.Sleep(gap)
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		start, tcpu := time.Now(), threadCPUTime()
		srv.ServeHTTP(rec, req)
		durations = append(durations, time.Since(start))
		reqCPU += threadCPUTime() - tcpu
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, rec.Code)
		}
		size = rec.Body.Len()
	}
	slices.Sort(durations)
	q := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(.5), "ms-p50")
	b.ReportMetric(q(.95), "ms-p95")
	b.ReportMetric(float64(size)/1024, "KiB/page")
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(reqCPU.Microseconds())/1000/float64(len(durations)), "req-cpu-ms/op")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(len(durations)), "cpu-ms/op")
	b.ReportMetric(100*cpu.Seconds()/time.Since(wall0).Seconds(), "%core")
}

// cpuTime is the CPU time (user and system) the process has used,
// background scraping included: on a shared machine wall-clock time says
// more about the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPUTime is the CPU time the calling thread has used.
func threadCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScopeFleet measures the scope pages in embedded mode against the
// same fleets as BenchmarkOverviewFleet: an instance's live view (the
// default hour), its model's (which adds a row per instance of that model)
// and the instance's 7-day view. Requests come at the wall clock as
// viewers' live refreshes do (see liveLatency): a model's live view
// takes its snapshots from the fleet's latest reading, shared with the
// overview and refreshed in the background; an instance's from a recent
// reading, else it reads the instance alone. The fleets are
// back-filled with 70 minutes, so the 7-day view here reads 70 minutes of
// data over a 7-day window: its cost beyond that is the chart cache's (see
// telemetry.BenchmarkRange7dAllDimensions). Each page gets a new console
// over the same telemetry, so its ms-cold is a first request with the
// fleet read recently by the page before.
//
//	go test -tags sqlite_fts5 -run '^$' -bench ScopeFleet -benchtime 10x -timeout 60m ./cmd/casebook/
func BenchmarkScopeFleet(b *testing.B) {
	for _, f := range fleets {
		b.Run(fmt.Sprintf("engines=%d", f.engines), func(b *testing.B) {
			tel := fleetTelemetry(b, f.opts)
			diag := diagnose.New(diagnose.Options{})
			scopes, err := tel.Scopes(context.Background())
			if err != nil || len(scopes) < 2 {
				b.Fatalf("scopes: %v (%d)", err, len(scopes))
			}
			model, inst := scopes[0], scopes[1] // sorted: a model, then its first instance
			for _, page := range []struct{ name, path string }{
				{"instance", route.URL(route.ScopeInstance, inst.Model, inst.Instance)},
				{"model", route.URL(route.ScopeModel, model.Model)},
				{"instance-7d", route.URLQuery(route.ScopeInstance, url.Values{"range": {"7d"}}, inst.Model, inst.Instance)},
			} {
				b.Run(page.name, func(b *testing.B) {
					liveLatency(b, web.New(web.Options{Telemetry: tel, Diagnoser: diag, RequestTimeout: benchTimeout}), page.path)
				})
			}
		})
	}
}

// countingOpener takes the incidents the detector opens and counts them.
type countingOpener struct{ n atomic.Int64 }

func (o *countingOpener) Open(_ context.Context, tr incident.Trigger) (store.Incident, bool, error) {
	var in store.Incident
	in.ID, in.Scope = o.n.Add(1), tr.Scope
	return in, true, nil
}

// BenchmarkDetectorFleet measures the detector's steady state in embedded
// mode against the fleets of BenchmarkOverviewFleet: one round per
// simulated minute, each reading every scope's new minute of every
// catalog metric from the real telemetry and feeding its detector. The
// clock walks through the back-filled hour (a round 50 minutes ago reads
// the same amount of data as one now), after a warm-up round over ten
// minutes. It reports the CPU time of a round, the share of one core that
// takes at the 1-minute interval, and the scopes evaluated. The CPU time
// includes the background scraping of the fleet (see overviewLatency).
//
//	go test -tags sqlite_fts5 -run '^$' -bench DetectorFleet -benchtime 10x -timeout 30m ./cmd/casebook/
func BenchmarkDetectorFleet(b *testing.B) {
	for _, f := range fleets {
		b.Run(fmt.Sprintf("engines=%d", f.engines), func(b *testing.B) {
			tel := fleetTelemetry(b, f.opts)
			clock := time.Now().Add(-50 * time.Minute).Truncate(time.Minute)
			w, err := watch.New(watch.Options{Source: tel, Opener: &countingOpener{}, History: 10 * time.Minute,
				Now: func() time.Time { return clock }})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			w.Round(ctx) // warm-up: ten minutes per scope
			if b.N > 40 {
				b.Fatalf("-benchtime %dx walks past the back-filled hour; use at most 40x", b.N)
			}
			var scopes, points int
			cpu0 := cpuTime()
			for b.Loop() {
				clock = clock.Add(time.Minute)
				rs := w.Round(ctx)
				scopes, points = rs.Scopes, points+rs.Points
			}
			cpu := (cpuTime() - cpu0) / time.Duration(b.N)
			if points == 0 {
				b.Fatal("the rounds observed no points")
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/round")
			b.ReportMetric(100*cpu.Seconds()/time.Minute.Seconds(), "%core@1m")
			b.ReportMetric(float64(scopes), "scopes")
		})
	}
}

// BenchmarkWeekFleet back-fills a week of the fleets' history, as a
// console that has watched them for a week holds it (the last day in the
// raw tier, the rest in the 1-minute tier, hours aggregated from those),
// and, once the back-fill is out of the TSDB heads (see waitHeapSettled)
// and its blocks are merged (see waitCompacted), reports how long the
// back-fill with the downsampler's catch-up, and the merges, took;
// the live Go heap and the process's resident memory once they are done,
// after the page requests (also split into the process's own memory,
// RssAnon, and the TSDB's block files the kernel has mapped in, RssFile:
// page cache it drops under memory pressure), and at its peak; the
// largest resident memory sampled every second from the end of the merges
// through -soak of live scraping and the page requests (rss-max: what a
// console with a week of history holds, where the peak is the back-fill's);
// and the instance's 7-day view and the overview as BenchmarkScopeFleet and
// BenchmarkOverviewFleet measure them. The simulated fleet runs in this
// process: its memory is in these numbers, as a real fleet's is not.
//
// The raw head's chunk files swing the resident memory from one head cut
// to the next (see telemetry's openTierDB): a -soak of 45 m holds one
// whole cycle.
//
//	GOMEMLIMIT=1000MiB go test -tags sqlite_fts5 -run '^$' -bench WeekFleet -benchtime 20x -timeout 180m ./cmd/casebook/ -args -soak 45m
func BenchmarkWeekFleet(b *testing.B) {
	for _, f := range fleets {
		b.Run(fmt.Sprintf("engines=%d", f.engines), func(b *testing.B) {
			began := time.Now()
			tel := fleetTelemetryFor(b, demo.New(f.opts), 7*24*time.Hour)
			ready := time.Since(began)
			heap := waitHeapSettled(b)
			compacted := waitCompacted(b, tel)
			rss := procStatus(b, "VmRSS")
			peak := watchRSS()
			defer peak.stop()
			if *soak > 0 {
				b.Logf("soaking for %s", *soak)
				time.Sleep(*soak)
			}
			diag := diagnose.New(diagnose.Options{})
			scopes, err := tel.Scopes(context.Background())
			if err != nil || len(scopes) < 2 {
				b.Fatalf("scopes: %v (%d)", err, len(scopes))
			}
			inst := scopes[1] // sorted: a model, then its first instance
			for _, page := range []struct{ name, path string }{
				{"instance-7d", route.URLQuery(route.ScopeInstance, url.Values{"range": {"7d"}}, inst.Model, inst.Instance)},
				{"overview", "/"},
			} {
				b.Run(page.name, func(b *testing.B) {
					liveLatency(b, web.New(web.Options{Telemetry: tel, Diagnoser: diag, RequestTimeout: benchTimeout}), page.path)
					b.ReportMetric(ready.Seconds(), "s-backfill")
					b.ReportMetric(compacted.Seconds(), "s-compaction")
					b.ReportMetric(float64(heap)/(1<<20), "MiB-heap")
					b.ReportMetric(float64(rss)/(1<<20), "MiB-rss")
					b.ReportMetric(float64(procStatus(b, "VmRSS"))/(1<<20), "MiB-rss-after")
					b.ReportMetric(float64(procStatus(b, "RssAnon"))/(1<<20), "MiB-rss-anon-after")
					b.ReportMetric(float64(procStatus(b, "RssFile"))/(1<<20), "MiB-rss-file-after")
					b.ReportMetric(float64(procStatus(b, "VmHWM"))/(1<<20), "MiB-rss-peak")
					most := peak.max(b)
					b.ReportMetric(float64(most.rss)/(1<<20), "MiB-rss-max")
					b.ReportMetric(float64(most.file)/(1<<20), "MiB-rss-max-file")
				})
			}
		})
	}
}

// waitHeapSettled waits until the heads of the tiers hold only their last
// hours: after a back-fill, the TSDB writes the rest to blocks on disk
// over a minute or two, and until then it is all in memory. It returns
// the live heap once three readings 10 s apart have not fallen by more
// than 5 %.
func waitHeapSettled(b *testing.B) int64 {
	b.Helper()
	heap, _ := waitSteady(b, "heap", 15*time.Minute, liveHeap, func(prev, cur int64) bool { return cur > prev*95/100 })
	return heap
}

// waitCompacted waits until the tiers' block compaction has merged the
// back-filled blocks: until the tiers' size on disk has not moved by more
// than 1 % in three readings 10 s apart. A console that has run for a week
// merged them as it went; after a back-fill the merges of the whole week
// come at once (at 500 engines, several GB of the 1-minute tier's blocks,
// both cores for minutes) and would otherwise run beside the requests. It
// returns how long it waited.
func waitCompacted(b *testing.B, tel *telemetry.Telemetry) time.Duration {
	b.Helper()
	size := func() int64 {
		st, err := tel.Storage()
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, t := range st.Tiers {
			n += t.DiskBytes
		}
		return n
	}
	_, waited := waitSteady(b, "tiers on disk", 30*time.Minute, size, func(prev, cur int64) bool {
		d := cur - prev
		return d*100 <= prev && -d*100 <= prev
	})
	return waited
}

// waitSteady reads a quantity in bytes every 10 s until three readings in
// a row are steady against the one before, and returns the last reading
// and how long that took; it fails the benchmark after limit.
func waitSteady(b *testing.B, what string, limit time.Duration, read func() int64, steady func(prev, cur int64) bool) (int64, time.Duration) {
	b.Helper()
	began := time.Now()
	last, inARow := read(), 0
	for inARow < 3 {
		time.Sleep(10 * time.Second)
		cur := read()
		if steady(last, cur) {
			inARow++
		} else {
			inARow = 0
		}
		last = cur
		if time.Since(began) > limit {
			b.Fatalf("%s still moving after %s: %d MiB", what, limit, last>>20)
		}
	}
	waited := time.Since(began)
	b.Logf("%s settled at %d MiB in %s", what, last>>20, waited.Round(time.Second))
	return last, waited
}

// liveHeap is the Go heap that survives a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

var soak = flag.Duration("soak", 0, "BenchmarkWeekFleet: how long the fleet runs live before the page requests, its resident memory sampled")

// rssWatch samples the process's resident memory every second until stop.
type rssWatch struct {
	mu   sync.Mutex
	most rssReading
	err  error
	done chan struct{}
	wg   sync.WaitGroup
}

// rssReading is VmRSS and its file-backed part, RssFile, in bytes.
type rssReading struct{ rss, file int64 }

func watchRSS() *rssWatch {
	w := &rssWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			// One read, so that RssFile belongs to the same moment as VmRSS.
			got, err := readStatus("VmRSS", "RssFile")
			w.mu.Lock()
			if err != nil {
				w.err = err
			} else if got[0] > w.most.rss {
				w.most = rssReading{got[0], got[1]}
			}
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// max returns the largest reading so far; it fails the benchmark if a
// reading failed.
func (w *rssWatch) max(b *testing.B) rssReading {
	b.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		b.Fatal(w.err)
	}
	return w.most
}

func (w *rssWatch) stop() {
	close(w.done)
	w.wg.Wait()
}

// procStatus reads a memory field of /proc/self/status (VmRSS, RssAnon,
// RssFile, VmHWM) in bytes.
func procStatus(b *testing.B, field string) int64 {
	b.Helper()
	n, err := readStatus(field)
	if err != nil {
		b.Fatal(err)
	}
	return n[0]
}

// readStatus reads memory fields of /proc/self/status, in bytes, from one
// read of the file.
func readStatus(fields ...string) ([]int64, error) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(fields))
	for i, field := range fields {
		found := false
		for line := range strings.Lines(string(raw)) {
			if rest, ok := strings.CutPrefix(line, field+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s %q: %w", field, rest, err)
				}
				out[i], found = kb<<10, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no %s in /proc/self/status", field)
		}
	}
	return out, nil
}
