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
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
	"github.com/casebook/casebook/views"
)

// TestQuietClusterRaisesNoWarning runs the demo cluster without faults
// (held-out seeds 1-3) and reads the overview's status of every scope at
// each simulated minute of its last half hour, through the overview's own
// code path (real telemetry, PromQL snapshots, diagnose.Deviations,
// views.StatusOf): a healthy cluster must show no warning anywhere.
//
// It does not pass yet, so it runs only with CASEBOOK_TEST_QUIET=1. The
// scrape interval is serve's default: with an hour-long interval every
// rate window spans hours and the minute means turn into running means
// since the back-fill began. At 5 s, qwen2.5-32b shows an episode every
// 20-30 minutes: one 5-second step of the code trace's bursty arrivals
// reaches the instance's prefill-compute capacity (about 9 requests a
// second against a usual 2-5), the simulator applies its steady-state
// queueing and prefill-share formulas to that step, and the requests
// finishing in it carry a 5 s queue and 20x inter-token times. That one
// step moves the minute means: TTFT 0.13 -> 1.3-1.5 s, TPOT 6 -> 40 ms,
// E2E 0.3 -> 2.6 s, while the GPU activity reads a few per cent. A real
// engine would build a backlog of a couple of requests in such a burst,
// not a stationary queue, so the queue and TTFT part is the simulator's
// transient model; decode steps do slow while prompt chunks fill every
// step's token budget (about 10x at a 2,048-token budget), so part of the
// TPOT spike is real, and whether a one-minute spike deserves a warning
// on the overview (the detector needs three points in a row) is open.
func TestQuietClusterRaisesNoWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills and reads the demo cluster")
	}
	if os.Getenv("CASEBOOK_TEST_QUIET") != "1" {
		t.Skip("known to fail: the demo's qwen2.5-32b saturates its prefill budget in bursts; set CASEBOOK_TEST_QUIET=1 to run it")
	}
	const minutes = 30
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			ctx := context.Background()
			before := time.Now().UTC().Truncate(time.Minute) // the back-fill ends at or after it
			tel, err := telemetry.Open(ctx, telemetry.Options{
				DataDir: t.TempDir(), Demo: demo.New(sim.Options{Seed: seed}),
				DemoBackfill: 2 * time.Hour, ScrapeInterval: 5 * time.Second, // serve's default
			})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Close()
			scopes, err := tel.Scopes(ctx)
			if err != nil || len(scopes) == 0 {
				t.Fatalf("scopes %v: %v", scopes, err)
			}
			d := &Deps{Telemetry: tel, Deviations: diagnose.Deviations, Logger: slog.New(slog.DiscardHandler)}
			worst, flagged := views.StatusOK, 0
			for m := minutes; m >= 0; m-- {
				at := before.Add(-time.Duration(m) * time.Minute)
				for _, r := range d.scopeRows(ctx, scopes, at) {
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
						t.Errorf("%s at -%d min: %s (%s): %s", r.Scope, m, r.Status.Word(), strings.Join(dims, ", "), r.SummaryIn(context.Background()))
					}
				}
			}
			t.Logf("seed %d: %d scopes × %d simulated minutes, %d scope-minutes at warning or worse, worst status %s",
				seed, len(scopes), minutes+1, flagged, worst.Word())
		})
	}
}
