//go:build integration

package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/demo"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
	"github.com/casebook/casebook/views"
)

// TestQuietClusterRaisesNoWarning runs the demo cluster without faults
// (held-out seeds 1-3) and reads the overview's status of every scope at
// each simulated minute of its last half hour, through the overview's own
// code path (real telemetry, PromQL snapshots, diagnose.StatusDeviations,
// views.StatusOf): a healthy cluster must show no warning anywhere.
//
// The back-fill's last two hours are at serve's default scrape interval,
// so these minutes read what the first half hour after `make run` shows.
// The demo's qwen2.5-32b takes code-completion traffic: every few minutes
// a few seconds of arrivals at ten times the mean fill its prefill budget,
// and that minute's TTFT, TPOT and E2E jump by tens of sigma; near the
// peak its TPOT p99 flips between one decode step and one prefill step in
// runs of several minutes. The status waits for five readings and for an
// excursion longer than the hour's own (diagnose.StatusDeviations).
func TestQuietClusterRaisesNoWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills and reads the demo cluster")
	}
	// The cluster's load follows the simulated time of day, so the demo
	// replays half-hours ending at the trough, on the rise, at the peak
	// and on the fall of a weekday (Wednesday 2026-11-25, UTC), instead
	// of whatever the wall clock says when the test runs.
	const minutes = 30
	for _, seed := range []int64{1, 2, 3} {
		for _, hour := range quietHours() {
			before := quietDay(hour)
			t.Run(fmt.Sprintf("seed %d at %02d:00", seed, hour), func(t *testing.T) {
				ctx := context.Background()
				d, tel := replayDemo(t, demo.New(sim.Options{Seed: seed}), before)
				scopes, err := tel.Scopes(ctx)
				if err != nil || len(scopes) == 0 {
					t.Fatalf("scopes %v: %v", scopes, err)
				}
				worst, flagged := views.StatusOK, 0
				for m := minutes; m >= 0; m-- {
					at := before.Add(-time.Duration(m) * time.Minute)
					for _, r := range d.scopeRows(ctx, scopes, at, nil) {
						worst = views.Worse(worst, r.Status)
						if r.Err != "" {
							t.Errorf("%s at %s: %s", r.Scope, at.Format(time.TimeOnly), r.Err)
						}
						if r.Status >= views.StatusWarning {
							flagged++
							var dims []string
							for _, c := range r.Dims {
								dims = append(dims, c.Title+" "+c.Status.Word())
							}
							t.Errorf("%s at -%d min: %s (%s): %s%s", r.Scope, m, r.Status.Word(), strings.Join(dims, ", "), r.SummaryIn(ctx), flaggedValues(ctx, tel, r.Scope, at))
						}
					}
				}
				t.Logf("seed %d at %02d:00: %d scopes × %d simulated minutes, %d scope-minutes at warning or worse, worst status %s",
					seed, hour, len(scopes), minutes+1, flagged, worst.Word())
			})
		}
	}
}

// quietDay is the replayed weekday, Wednesday 2026-11-25, at hour UTC.
func quietDay(hour int) time.Time { return time.Date(2026, 11, 25, hour, 0, 0, 0, time.UTC) }

// replayDemo back-fills two hours of cluster up to `until` at serve's
// default scrape interval and returns the overview's dependencies on it,
// with the status badges' deviations.
func replayDemo(t *testing.T, cluster *demo.Cluster, until time.Time) (*Deps, *telemetry.Telemetry) {
	t.Helper()
	tel, err := telemetry.Open(context.Background(), telemetry.Options{
		DataDir: t.TempDir(), Demo: cluster,
		DemoBackfill: 2 * time.Hour, DemoUntil: until, ScrapeInterval: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tel.Close() })
	return &Deps{Telemetry: tel, Deviations: diagnose.StatusDeviations, Logger: slog.New(slog.DiscardHandler)}, tel
}

// quietHours are the hours of day whose preceding half-hour the quiet
// test replays: CASEBOOK_TEST_QUIET_HOURS=all sweeps every hour.
func quietHours() []int {
	if os.Getenv("CASEBOOK_TEST_QUIET_HOURS") == "all" {
		hours := make([]int, 24)
		for h := range hours {
			hours[h] = h
		}
		return hours
	}
	return []int{3, 9, 15, 21}
}

// flaggedValues names the value and baseline of each anomalous metric of
// scope at `at`, so that a failure says how large the move was.
func flaggedValues(ctx context.Context, tel *telemetry.Telemetry, scope metrics.Scope, at time.Time) string {
	snap, err := tel.Snapshot(ctx, scope, at)
	if err != nil {
		return "; " + err.Error()
	}
	var b strings.Builder
	for id, d := range diagnose.StatusDeviations(snap) {
		if v, ok := snap.Current.Get(id); ok && d.Anomalous {
			fmt.Fprintf(&b, "; %s %.4g (baseline %.4g ± %.2g)", id, v, d.Mean, d.Std)
		}
	}
	return b.String()
}

// TestQuietStatusFlagsAnInjectedFault is the other half of the quiet
// test: the same readings, through the same code path, flag the scope of
// a fault twenty minutes after it began, at the peak hour where the usual
// range of bursty tail metrics is widest.
//
// Every cause is injected and logged; the causes whose mechanism shows in
// the latency users see at any load must reach a warning. The others
// (idle GPUs, clocks or bandwidth that still leave headroom at night,
// host overhead hidden in a busy batch) may stay at info or below.
func TestQuietStatusFlagsAnInjectedFault(t *testing.T) {
	userFacing := map[string]bool{
		metrics.CauseQueueBacklog: true, metrics.CauseKVCacheEviction: true, metrics.CauseLongPromptPrefill: true,
		metrics.CausePrefixCacheMiss: true, metrics.CauseTransportLatency: true, metrics.CauseEngineErrors: true,
		metrics.CauseSpecDecodeDegradation: true,
	}
	if testing.Short() {
		t.Skip("back-fills and reads the demo cluster")
	}
	for _, hour := range []int{3, 15} {
		before := quietDay(hour)
		for _, cause := range metrics.FaultCauses() {
			t.Run(fmt.Sprintf("%s at %02d:00", cause, hour), func(t *testing.T) {
				ctx := context.Background()
				cl := demo.New(sim.Options{Seed: 1})
				scope := metrics.Scope{Model: "qwen2.5-32b-instruct"} // the demo's bursty model
				if _, err := cl.Sim.Inject(sim.Fault{Cause: cause, Scope: scope, Severity: 0.7, Start: before.Add(-20 * time.Minute)}); err != nil {
					t.Fatal(err)
				}
				d, _ := replayDemo(t, cl, before)
				for _, r := range d.scopeRows(ctx, []metrics.Scope{scope}, before, nil) {
					t.Logf("%s: %s: %s", r.Scope, r.Status.Word(), r.SummaryIn(ctx))
					if userFacing[cause] && r.Status < views.StatusWarning {
						t.Errorf("%s with %s for 20 minutes: status %s", r.Scope, cause, r.Status.Word())
					}
				}
			})
		}
	}
}
