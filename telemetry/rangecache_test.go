package telemetry

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// fakeRange evaluates a query whose value at an instant is its unix minute
// plus a revision, and records every range it was asked for. Raising the
// revision models data that arrived late: points evaluated afresh change,
// cached ones must be old enough not to.
type fakeRange struct {
	step  time.Duration
	rev   float64
	calls [][2]time.Time
	gapAt time.Time // an instant with no value
}

func (f *fakeRange) eval(_ context.Context, from, to time.Time) ([]metrics.Sample, error) {
	f.calls = append(f.calls, [2]time.Time{from, to})
	var out []metrics.Sample
	for t := from; !t.After(to); t = t.Add(f.step) {
		if t.Equal(f.gapAt) {
			continue
		}
		out = append(out, metrics.Sample{T: t, V: float64(t.Unix()/60) + f.rev})
	}
	return out, nil
}

func TestRangeCacheEvaluatesOnlyNewSteps(t *testing.T) {
	step := 30 * time.Minute
	now := time.Date(2026, 11, 30, 12, 7, 0, 0, time.UTC)
	f := &fakeRange{step: step, gapAt: now.Add(-48 * time.Hour).Truncate(step)}
	c := newRangeCache(0)
	ctx := context.Background()

	window := func(now time.Time) (time.Time, time.Time) {
		start := alignedStart(now.Add(-7*24*time.Hour), step)
		n := (now.Sub(start) - time.Nanosecond) / step
		return start, start.Add(n * step)
	}
	start, end := window(now)
	first, err := c.get(ctx, "q", start, end, step, now, f.eval)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := (&fakeRange{step: step, gapAt: f.gapAt}).eval(ctx, start, end)
	if !slices.Equal(first, want) {
		t.Fatalf("first answer differs from a direct evaluation: %d vs %d points", len(first), len(want))
	}

	// An hour later, with late data changing every point evaluated afresh.
	now = now.Add(time.Hour)
	f.rev = 0.5
	start, end = window(now)
	second, err := c.get(ctx, "q", start, end, step, now, f.eval)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 {
		t.Fatalf("calls = %v, want one full and one incremental", f.calls)
	}
	inc := f.calls[1]
	if span := inc[1].Sub(inc[0]); span > 3*step {
		t.Errorf("incremental evaluation spans %s, want only the newest steps", span)
	}
	settled := now.Add(-time.Hour).Add(-max(cacheSettle, step)).Truncate(step)
	for _, s := range second {
		if s.T.Before(start) || s.T.After(end) {
			t.Errorf("sample at %s outside [%s, %s]", s.T, start, end)
		}
		fresh := s.T.After(settled)
		if got := s.V - float64(s.T.Unix()/60); fresh != (got == 0.5) {
			t.Errorf("sample at %s: revision %.1f, want the fresh revision only after %s", s.T, got, settled)
		}
	}
	if len(second) != len(want) {
		t.Errorf("second answer has %d points, want %d (one gap kept)", len(second), len(want))
	}
	if !slices.IsSortedFunc(second, func(a, b metrics.Sample) int { return a.T.Compare(b.T) }) {
		t.Error("samples are not in time order")
	}
}

func TestRangeCacheKeysOnQueryAndStep(t *testing.T) {
	step := 10 * time.Minute
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	start := alignedStart(now.Add(-48*time.Hour), step)
	end := now.Add(-step)
	c := newRangeCache(0)
	f := &fakeRange{step: step}
	for _, q := range []string{"a", "b", "a"} {
		if _, err := c.get(context.Background(), q, start, end, step, now, f.eval); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.calls) != 2 {
		t.Fatalf("calls = %d, want 2 (the second \"a\" is answered from the cache)", len(f.calls))
	}
	// A start before the cached run cannot use it.
	if _, err := c.get(context.Background(), "a", start.Add(-step), end, step, now, f.eval); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 {
		t.Fatalf("calls = %d, want a full evaluation for an earlier start", len(f.calls))
	}
}

func TestAlignedStart(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 7, 0, 0, time.UTC)
	if got := alignedStart(at, 30*time.Minute); !got.Equal(time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)) {
		t.Errorf("alignedStart = %s", got)
	}
	on := time.Date(2026, 11, 30, 12, 30, 0, 0, time.UTC)
	if got := alignedStart(on, 30*time.Minute); !got.Equal(on) {
		t.Errorf("alignedStart of an aligned instant = %s", got)
	}
}

// A live view's short step is cached too, with its own settle time: a
// refresh a few seconds later evaluates only the unsettled tail.
func TestRangeCacheShortStepSettlesSooner(t *testing.T) {
	step := 15 * time.Second
	c := newRangeCache(time.Minute)
	if got := c.settleFor(step); got != time.Minute {
		t.Errorf("settle for %s = %s, want the raw settle of 1m", step, got)
	}
	if got := c.settleFor(10 * time.Minute); got != 10*time.Minute {
		t.Errorf("settle for 10m = %s, want the step itself", got)
	}
	if got := c.settleFor(time.Minute); got != time.Minute {
		t.Errorf("settle for 1m (a snapshot's history) = %s, want the raw settle", got)
	}
	if got := c.settleFor(2 * time.Minute); got != cacheSettle {
		t.Errorf("settle for 2m = %s, want cacheSettle %s", got, cacheSettle)
	}
	if got := newRangeCache(0).settleFor(step); got != cacheSettle {
		t.Errorf("settle without a raw settle = %s, want cacheSettle", got)
	}

	now := time.Date(2026, 11, 30, 12, 7, 3, 0, time.UTC)
	f := &fakeRange{step: step}
	window := func(now time.Time) (time.Time, time.Time) {
		start := alignedStart(now.Add(-time.Hour), step)
		n := (now.Sub(start) - time.Nanosecond) / step
		return start, start.Add(n * step)
	}
	ctx := context.Background()
	for range 2 {
		start, end := window(now)
		if _, err := c.get(ctx, "q", start, end, step, now, f.eval); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Second)
	}
	if len(f.calls) != 2 {
		t.Fatalf("calls = %d, want a full and an incremental evaluation", len(f.calls))
	}
	if span := f.calls[1][1].Sub(f.calls[1][0]); span > time.Minute+step {
		t.Errorf("refresh evaluated %s, want at most the last minute and a step", span)
	}
}
