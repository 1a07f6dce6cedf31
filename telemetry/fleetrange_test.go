package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry/sim"
)

// TestFleetRangeMatchesRange checks that the batched range gives every
// scope the series Range reads for it alone, with a number of queries that
// does not grow with the fleet.
func TestFleetRangeMatchesRange(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills two demo clusters")
	}
	ctx := context.Background()
	ids := metrics.IDs()
	queries := map[int]int64{}
	for _, opts := range []sim.Options{{Models: 2, InstancesPerModel: 2}, {Models: 3, InstancesPerModel: 3}} {
		tel, cq := openFleetDemo(t, opts)
		end := tel.backfilledTo.Add(-10 * time.Minute).Truncate(time.Minute)
		r := metrics.Range{Start: end.Add(-5 * time.Minute), End: end, Step: time.Minute}
		if _, err := tel.Scopes(ctx); err != nil { // listed before counting
			t.Fatal(err)
		}
		if _, err := tel.GPUJoin(ctx); err != nil {
			t.Fatal(err)
		}
		before := cq.n.Load()
		got, err := tel.FleetRange(ctx, ids, r)
		if err != nil {
			t.Fatal(err)
		}
		engines := opts.Models * opts.InstancesPerModel
		queries[engines] = cq.n.Load() - before
		if want := opts.Models + engines; len(got) != want {
			t.Fatalf("%d engines: %d scopes, want %d", engines, len(got), want)
		}
		for scope, series := range got {
			want, err := tel.Range(ctx, scope, ids, r)
			if err != nil {
				t.Fatal(err)
			}
			filled := 0
			for i, w := range want {
				g := series[i]
				if g.Metric != w.Metric || g.Scope != scope {
					t.Fatalf("%s: series %d is %s of %s, want %s", scope, i, g.Metric, g.Scope, w.Metric)
				}
				if len(g.Samples) != len(w.Samples) {
					t.Errorf("%s %s: %d samples, Range has %d", scope, w.Metric, len(g.Samples), len(w.Samples))
					continue
				}
				if len(g.Samples) > 0 {
					filled++
				}
				for k, x := range w.Samples {
					if y := g.Samples[k]; !y.T.Equal(x.T) || !sameValue(y.V, x.V) {
						t.Errorf("%s %s at %s: fleet %v at %s, range %v", scope, w.Metric, x.T.Format(time.TimeOnly), y.V, y.T.Format(time.TimeOnly), x.V)
					}
				}
			}
			if filled == 0 {
				t.Errorf("%s: no series has samples", scope)
			}
		}
	}
	if queries[4] == 0 || queries[4] != queries[9] {
		t.Errorf("queries per fleet range: %d for 4 engines, %d for 9; want the same, not one per scope", queries[4], queries[9])
	}
}
