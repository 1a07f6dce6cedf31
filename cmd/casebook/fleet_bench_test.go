package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"syscall"
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
// scraped every 5 s while the benchmark runs; see stillFleet) behind the real
// console. It reports the p50 and p95 server time of GET / and the HTML
// it sends, and the process's CPU time per request. "read" requests each
// read the fleet anew (each asks for an instant 6 s before the last, past
// the shared reading's few seconds); "shared" requests come at the wall
// clock, as viewers and live refreshes do, and share a reading for up to
// telemetry.FleetCacheFor. Timings and CPU time include the background
// scraping, as a running console has it.
//
//	go test -tags sqlite_fts5 -run '^$' -bench OverviewFleet -benchtime 10x -timeout 30m ./cmd/casebook/
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
				overviewLatency(b, srv, "/")
			})
			b.Run("shared", func(b *testing.B) {
				overviewLatency(b, web.New(web.Options{Telemetry: tel, Diagnoser: diag, RequestTimeout: benchTimeout}), "/")
			})
		})
	}
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
	began := time.Now()
	tel, err := telemetry.Open(context.Background(), telemetry.Options{
		DataDir: b.TempDir(), Demo: stillFleet{demo.New(opts)}, DemoBackfill: 70 * time.Minute,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Close() })
	b.Logf("telemetry ready in %s", time.Since(began).Round(time.Millisecond))
	return tel
}

// overviewLatency requests path b.N times and reports the p50 and p95
// server time and the size of the last answer.
func overviewLatency(b *testing.B, srv http.Handler, path string) {
	b.Helper()
	durations := make([]time.Duration, 0, b.N)
	size := 0
	cpu0 := cpuTime()
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
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(len(durations)), "cpu-ms/op")
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
