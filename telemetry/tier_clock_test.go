package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
)

// sourceAt returns a raw source advanced to second i, as a writer that has
// been running since second 0 would be.
func sourceAt(i int) *rawSource {
	var s rawSource
	for k := 0; k < i; k++ {
		s.advance(k)
	}
	return &s
}

// TestTierClockJumps moves the wall clock two hours ahead and back again,
// as a bad NTP step would. Samples are stamped with the wall clock, so
// the jump ahead leaves a gap, and the samples stamped after the jump back
// are older than what the raw tier holds: they are refused with an
// out-of-order error, never half-stored. Once the clock is past the jump
// again, writing goes on, nothing acknowledged is lost, and the 1m and 1h
// tiers equal those of a run that had the same data and no jump.
func TestTierClockJumps(t *testing.T) {
	const (
		before    = 3600 + 25*60 // written before the jump
		ahead     = before + 2*3600
		aheadEnd  = ahead + 10*60 // written with the clock two hours ahead
		backEnd   = before + 10*60
		resumeEnd = aheadEnd + 40*60
	)
	run := func(ts *tierSet, now *time.Time, jump bool) {
		t.Helper()
		at := func(sec int) { *now = tierBase.Add(time.Duration(sec) * time.Second) }
		catchUp := func() {
			if err := ts.ds.catchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		at(before)
		sourceAt(0).appendRange(t, ts.appendable(0), 0, before)
		catchUp()
		at(aheadEnd)
		sourceAt(ahead).appendRange(t, ts.appendable(0), ahead, aheadEnd)
		catchUp()
		if jump {
			at(backEnd)
			err := sourceAt(before).tryAppendRange(ts.appendable(0), before, backEnd)
			if !errors.Is(err, storage.ErrOutOfOrderSample) && !errors.Is(err, storage.ErrOutOfBounds) {
				t.Fatalf("samples stamped before the newest: %v, want an out-of-order error", err)
			}
			catchUp() // the clock is behind the watermark: nothing to do
		}
		at(resumeEnd)
		sourceAt(aheadEnd).appendRange(t, ts.appendable(0), aheadEnd, resumeEnd)
		catchUp()
	}

	var now time.Time
	got := openTestTiers(t, t.TempDir(), TierOptions{}, &now)
	defer got.close()
	run(got, &now, true)

	var refNow time.Time
	ref := openTestTiers(t, t.TempDir(), TierOptions{}, &refNow)
	defer ref.close()
	run(ref, &refNow, false)

	g := readSeries(t, got.raw(), counterLabels, tierBase.Add(-time.Second), now)
	w := readSeries(t, ref.raw(), counterLabels, tierBase.Add(-time.Second), now)
	if len(g) != len(w) || len(w) != before+resumeEnd-ahead {
		t.Errorf("raw counter samples: %d, want %d (every acknowledged second, none of the refused)", len(g), len(w))
	}
	compareTiers(t, got, ref)
}
