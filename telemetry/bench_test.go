package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry/sim"
)

// Run with:
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchtime 1x ./telemetry/   (back-fill, range)
//	go test -tags sqlite_fts5 -run '^$' -bench 'ScrapeCycle|Snapshot' ./telemetry/

// BenchmarkScrapeCycle measures one scrape of every demo target (the
// simulator renders its pages, the scraper parses and appends them), the
// work done every scrape interval. core_%_at_5s is the share of one core
// this takes at the default 5 s interval.
func BenchmarkScrapeCycle(b *testing.B) {
	db := openTestDB(b)
	start := time.Now().Add(-24 * time.Hour)
	c := &simDemo{c: sim.New(sim.Options{Start: start})}
	client := &http.Client{Transport: handlerTransport{h: c.Handler()}}
	status := newStatusBoard(slog.New(slog.DiscardHandler))
	var loops []*scrapeLoop
	for _, tg := range c.Targets() {
		tg.URL = demoBaseURL + tg.URL
		st, err := resolveTarget(tg, DefaultScrapeInterval)
		if err != nil {
			b.Fatal(err)
		}
		loops = append(loops, newScrapeLoop(st, client, db, status))
	}
	ctx := context.Background()
	now := start
	cycle := func() {
		for _, l := range loops {
			if err := l.scrape(ctx, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	cycle() // the first scrape creates the series; measure the steady state
	series := 0
	for _, l := range loops {
		series += len(l.cache)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		now = now.Add(DefaultScrapeInterval)
		c.c.Advance(now)
		b.StartTimer()
		cycle()
	}
	perCycle := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perCycle/1e3, "µs/cycle")
	b.ReportMetric(float64(series), "series")
	b.ReportMetric(100*perCycle/float64(DefaultScrapeInterval.Nanoseconds()), "core_%_at_5s")
}

// BenchmarkBackfill7d measures back-filling a week of the demo cluster at
// one-minute resolution into a fresh TSDB.
func BenchmarkBackfill7d(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db := openTestDB(b)
		db.DisableCompactions() // as Open does during the back-fill
		to := time.Now().Truncate(time.Minute)
		from := to.Add(-demoBackfill)
		c := &simDemo{c: sim.New(sim.Options{Start: from})}
		b.StartTimer()
		began, cpu0 := time.Now(), cpuTime()
		n, err := backfillCluster(context.Background(), db, c, []backfillSpan{{from: from, to: to, step: demoBackfillStep}}, families{}, "casebook-sim:80", nil)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.ReportMetric(float64(n), "samples")
		b.ReportMetric(took.Seconds(), "s/backfill")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu_s/backfill")
		b.ReportMetric(float64(n)/took.Seconds()/1e6, "Msamples/s")
	}
}

// BenchmarkSimOnly7d measures the simulator's share of the back-fill: the
// same week with samples discarded instead of stored.
func BenchmarkSimOnly7d(b *testing.B) {
	for i := 0; i < b.N; i++ {
		to := time.Now().Truncate(time.Minute)
		from := to.Add(-demoBackfill)
		c := sim.New(sim.Options{Start: from})
		n := 0
		began, cpu0 := time.Now(), cpuTime()
		if err := c.Backfill(from, to, demoBackfillStep, func(sim.Sample) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "samples")
		b.ReportMetric(time.Since(began).Seconds(), "s/backfill")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu_s/backfill")
	}
}

// BenchmarkSnapshot measures capturing one instance's snapshot (every
// catalog metric now and 60 history points) on the demo cluster.
func BenchmarkSnapshot(b *testing.B) {
	tel := openBenchDemo(b, 3*time.Hour)
	tg := simulator(tel).Targets()[0]
	scope := metrics.Scope{Model: tg.Model, Instance: tg.Instance}
	ctx := context.Background()
	at := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, err := tel.Snapshot(ctx, scope, at)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Current) == 0 {
			b.Fatal("empty snapshot")
		}
	}
}

// BenchmarkRange7dAllDimensions measures the four dimension charts of a
// model (every catalog metric) over seven days at a ten-minute step.
func BenchmarkRange7dAllDimensions(b *testing.B) {
	tel := openBenchDemo(b, demoBackfill)
	scope := metrics.Scope{Model: simulator(tel).Targets()[0].Model}
	ctx := context.Background()
	end := time.Now()
	r := metrics.Range{Start: end.Add(-demoBackfill), End: end, Step: 10 * time.Minute}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range metrics.Dimensions {
			var ids []string
			for _, m := range metrics.InDimension(d) {
				ids = append(ids, m.ID)
			}
			series, err := tel.Range(ctx, scope, ids, r)
			if err != nil {
				b.Fatal(err)
			}
			if len(series[0].Samples) < 1000 {
				b.Fatalf("%s: %d samples over 7 days at 10 min", series[0].Metric, len(series[0].Samples))
			}
		}
	}
}

func openBenchDemo(b *testing.B, backfill time.Duration) *Telemetry {
	b.Helper()
	tel, err := open(context.Background(), Options{DataDir: b.TempDir(), Demo: newSimDemo()}, backfill)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Close() })
	return tel
}

// cpuTime returns the CPU time (user and system) this process has used:
// on a shared machine wall-clock time says more about the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
