package telemetry

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/casebook/casebook/metrics"
)

// TestDemoBackfillTiers back-fills 27 hours: the part older than a day lands
// in the 1-minute tier, the last day in the raw tier, the downsampler
// continues the 1-minute tier from there and fills the 1-hour tier, and a
// chart over the whole span reads through the seams.
func TestDemoBackfillTiers(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills 27 hours")
	}
	tel, _ := openDemo(t, 27*time.Hour)
	now := time.Now()
	cut := now.Add(-DefaultRawRetention)
	raw, m1, h1 := tel.tiers.tiers[0].db, tel.tiers.tiers[1].db, tel.tiers.tiers[2].db

	if got := msTime(oldest(raw)); got.Before(cut.Add(-2 * time.Minute)) {
		t.Errorf("raw tier starts at %s, before the raw retention (%s)", got, cut)
	}
	if got := msTime(oldest(m1)); got.After(now.Add(-26 * time.Hour)) {
		t.Errorf("1m tier starts at %s, want the back-fill older than a day", got)
	}
	// The gauge aggregates of a back-filled minute are the sample itself.
	q1m := NewEmbeddedQuerier(m1, nil)
	at := now.Add(-25 * time.Hour).Truncate(time.Minute)
	mean := instant(t, q1m, `sum(vllm:num_requests_running)`, at)
	mx := instant(t, q1m, `sum(vllm:num_requests_running:max1m)`, at)
	cnt := instant(t, q1m, `min(vllm:num_requests_running:count1m)`, at)
	if math.IsNaN(mean) || mean != mx || cnt != 1 {
		t.Errorf("back-filled minute: mean %v, max %v, count %v; want mean = max and count 1", mean, mx, cnt)
	}

	// The downsampler catches up on the raw day and the whole 1m tier.
	// (Under the race detector this takes a while.)
	deadline := time.Now().Add(2 * time.Minute)
	for tel.tiers.ds.watermark(2) < now.Add(-2*time.Hour).UnixMilli() ||
		tel.tiers.ds.watermark(1) < now.Add(-2*time.Minute).UnixMilli() {
		if time.Now().After(deadline) {
			t.Fatalf("downsampler watermarks %s and %s after 2 minutes", msTime(tel.tiers.ds.watermark(1)), msTime(tel.tiers.ds.watermark(2)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := msTime(oldest(h1)); got.After(now.Add(-26 * time.Hour)) {
		t.Errorf("1h tier starts at %s", got)
	}
	st, err := tel.Storage()
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range st.Tiers {
		if ti.Series == 0 || ti.Oldest.IsZero() || ti.DiskBytes == 0 && ti.Name == TierMinute {
			t.Errorf("storage stats of %s tier: %+v", ti.Name, ti)
		}
	}

	// Charts over 26 hours (read from the 1m tier) and over 2 hours across
	// the raw seam have every point.
	scope := metrics.Scope{Model: simulator(tel).Targets()[0].Model}
	for _, r := range []metrics.Range{
		{Start: now.Add(-26 * time.Hour), End: now, Step: 10 * time.Minute},
		{Start: cut.Add(-time.Hour), End: cut.Add(time.Hour), Step: time.Minute},
	} {
		series, err := tel.Range(context.Background(), scope, []string{metrics.RunningSeqs, metrics.ThroughputRPS}, r)
		if err != nil {
			t.Fatal(err)
		}
		want := int(r.End.Sub(r.Start)/r.Step) - 1
		for _, s := range series {
			if len(s.Samples) < want {
				t.Errorf("%s over %s at %s: %d points, want %d", s.Metric, r.End.Sub(r.Start), r.Step, len(s.Samples), want)
			}
		}
	}
}

// TestBackfillAggregatesAsItGoes: the back-fill aggregates each stretch of
// history into the coarser tiers while the TSDB heads still hold it, a
// stretch at a time. The tiers must hold what one pass of the downsampler
// over the whole history writes: no interval missing at the seams between
// stretches, none written twice.
func TestBackfillAggregatesAsItGoes(t *testing.T) {
	if testing.Short() {
		t.Skip("back-fills 27 hours")
	}
	end := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	tel, err := Open(context.Background(), Options{DataDir: t.TempDir(), Demo: newSimDemo(), DemoBackfill: 27 * time.Hour, DemoUntil: end, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	ts := tel.tiers
	// Before the cut the back-fill writes the 1-minute tier itself.
	cut := end.Add(-DefaultRawRetention).UnixMilli()
	for level := 1; level < 3; level++ {
		src, dst := ts.tiers[level-1].db, ts.tiers[level].db
		from, to := cut, ts.ds.watermark(level)
		if level == 2 {
			from = floorTo(oldest(src)-1, tierLevels[2].Milliseconds())
		}
		// The back-fill's last stretch ends at the replay's end.
		if min := end.Add(-time.Hour).UnixMilli(); to < min {
			t.Fatalf("%s tier aggregated up to %s, want at least %s", tierNames[level], msTime(to), msTime(min))
		}
		ref := sampleSink{}
		if _, _, err := aggregate(context.Background(), src, ref, level, from, to); err != nil {
			t.Fatal(err)
		}
		compareDumps(t, tierNames[level], dumpSpan(t, dst, from+1, to), ref)
	}
}

// sampleSink is a storage.Appendable that keeps what is appended to it in
// any order, by series, as dumpSpan returns it.
type sampleSink map[string][]tsample

func (s sampleSink) Appender(context.Context) storage.Appender { return sinkAppender{s: s} }

// sinkAppender implements the methods of storage.Appender the downsampler
// calls.
type sinkAppender struct {
	storage.Appender
	s sampleSink
}

func (a sinkAppender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.s[l.String()] = append(a.s[l.String()], tsample{t, v})
	return 0, nil
}

func (sinkAppender) Commit() error   { return nil }
func (sinkAppender) Rollback() error { return nil }
