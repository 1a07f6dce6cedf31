package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/demo"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
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
// scraped live every 5 s while the benchmark runs) behind the real
// console. It reports the p50 and p95 server time of GET / and the HTML
// it sends. Timings include the background scraping, as a running console
// has it.
//
//	go test -tags sqlite_fts5 -run '^$' -bench OverviewFleet -benchtime 20x -timeout 30m ./cmd/casebook/
func BenchmarkOverviewFleet(b *testing.B) {
	for _, f := range fleets {
		b.Run(fmt.Sprintf("engines=%d", f.engines), func(b *testing.B) {
			srv := fleetConsole(b, f.opts)
			overviewLatency(b, srv, "/")
		})
	}
}

// fleetConsole starts the console's telemetry on a simulated fleet and
// returns its server.
func fleetConsole(b *testing.B, opts sim.Options) http.Handler {
	b.Helper()
	began := time.Now()
	tel, err := telemetry.Open(context.Background(), telemetry.Options{
		DataDir: b.TempDir(), Demo: demo.New(opts), DemoBackfill: 70 * time.Minute,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Close() })
	b.Logf("telemetry ready in %s", time.Since(began).Round(time.Millisecond))
	return web.New(web.Options{Telemetry: tel, Diagnoser: diagnose.New(diagnose.Options{})})
}

// overviewLatency requests path b.N times and reports the p50 and p95
// server time and the size of the last answer.
func overviewLatency(b *testing.B, srv http.Handler, path string) {
	b.Helper()
	durations := make([]time.Duration, 0, b.N)
	size := 0
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(rec, req)
		durations = append(durations, time.Since(start))
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
}
