package telemetry

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// TestFleetHistoryReusesSettledPoints checks that a later or earlier
// reading evaluates only the steps the cache lacks or has not settled, and
// answers what a full evaluation answers.
func TestFleetHistoryReusesSettledPoints(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	step := time.Minute
	// Two series; the second has no value at odd minutes (a gap, not a miss).
	full := func(from, to time.Time) []Result {
		var a, b []metrics.Sample
		for ts := from; !ts.After(to); ts = ts.Add(step) {
			m := ts.Sub(base) / step
			a = append(a, metrics.Sample{T: ts, V: float64(m)})
			if m%2 == 0 {
				b = append(b, metrics.Sample{T: ts, V: -float64(m)})
			}
		}
		var out []Result
		for i, ss := range [][]metrics.Sample{a, b} {
			if len(ss) > 0 {
				out = append(out, Result{Labels: map[string]string{"pod": fmt.Sprint(i)}, Samples: ss})
			}
		}
		return out
	}
	var spans []string
	eval := func(_ context.Context, from, to time.Time) ([]Result, error) {
		spans = append(spans, from.Format("15:04")+"-"+to.Format("15:04"))
		return full(from, to), nil
	}
	var h fleetHistory
	ctx := context.Background()
	for _, c := range []struct {
		start, end, settled time.Time
		want                []string
	}{
		{base, base.Add(64 * step), base.Add(60 * step), []string{"12:00-13:04"}},
		// A minute later: the unsettled steps and the new one.
		{base.Add(step), base.Add(65 * step), base.Add(61 * step), []string{"13:01-13:05"}},
		// Two minutes earlier: the two steps before the cached ones, and
		// those the last reading had not settled.
		{base.Add(-step), base.Add(63 * step), base.Add(61 * step), []string{"11:59-12:00", "13:02-13:03"}},
		// Settled between two steps: the cache keeps the step before.
		{base.Add(-step), base.Add(63 * step), base.Add(62*step + 30*time.Second), []string{"13:02-13:03"}},
		{base.Add(-step), base.Add(63 * step), base.Add(63 * step), []string{"13:03-13:03"}},
		// Far off: all of it.
		{base.Add(5 * time.Hour), base.Add(5*time.Hour + 64*step), base.Add(61 * step), []string{"17:00-18:04"}},
	} {
		spans = nil
		got, err := h.get(ctx, "q", c.start, c.end, c.settled, step, eval)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(spans, c.want) {
			t.Errorf("[%s, %s]: evaluated %v, want %v", c.start.Format("15:04"), c.end.Format("15:04"), spans, c.want)
		}
		if want := full(c.start, c.end); !reflect.DeepEqual(got, want) {
			t.Errorf("[%s, %s]: answer differs from a full evaluation:\n got %v\nwant %v", c.start.Format("15:04"), c.end.Format("15:04"), got, want)
		}
	}
}
