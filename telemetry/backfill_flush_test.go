package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/casebook/casebook/telemetry/sim"
)

// TestBackfillFlushesHeads checks that a long back-fill has the TSDB write
// its history to blocks as it goes, so that the head ends holding only
// the last hours instead of everything back-filled.
func TestBackfillFlushesHeads(t *testing.T) {
	db := openTestDB(t)
	db.DisableCompactions() // as Open does during the back-fill
	to := time.Now().Truncate(time.Minute)
	from := to.Add(-25 * time.Hour)
	c := &simDemo{c: sim.New(sim.Options{Start: from})}
	flushes := 0
	flush := func(ctx context.Context, _ int64) error {
		flushes++
		return db.Compact(ctx)
	}
	if _, err := backfillCluster(context.Background(), db, c, []backfillSpan{{from: from, to: to, step: demoBackfillStep}}, families{}, "casebook-sim:80", flush); err != nil {
		t.Fatal(err)
	}
	// 25 hours flushed every 6: after 6, 12, 18 and 24 hours, give or
	// take a batch.
	if flushes < 3 || flushes > 4 {
		t.Errorf("flushed %d times over 25 hours, want 3-4", flushes)
	}
	if len(db.Blocks()) == 0 {
		t.Fatal("no blocks written: the whole back-fill is still in the head")
	}
	// The head keeps at most its compaction threshold (1.5 chunk ranges
	// of 2 hours) plus the history back-filled since the last flush.
	if held := to.Sub(msTime(db.Head().MinTime())); held > 3*time.Hour+backfillFlushSpan+time.Hour {
		t.Errorf("the head holds %s of the 25 back-filled hours", held.Round(time.Minute))
	}
}
