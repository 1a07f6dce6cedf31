package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// tierBase is the start of the synthetic raw data: an hour boundary.
var tierBase = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// openTestTiers opens a tier set in dir whose clock is *now.
func openTestTiers(tb testing.TB, dir string, opts TierOptions, now *time.Time) *tierSet {
	tb.Helper()
	opts.WAL = true
	opts.Logger = slog.New(slog.DiscardHandler)
	ts, err := openTiers(filepath.Join(dir, "tsdb"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	ts.now = func() time.Time { return *now }
	return ts
}

var (
	gaugeLabels   = labels.FromStrings(labels.MetricName, "test_gauge", "pod", "a")
	counterLabels = labels.FromStrings(labels.MetricName, "test_requests_total", "pod", "a")
	histBounds    = []string{"0.1", "0.5", "1.0", "+Inf"}
)

func histLabels(le string) labels.Labels {
	return labels.FromStrings(labels.MetricName, "test_latency_seconds_bucket", "le", le, "pod", "a")
}

// rawSource generates one second of synthetic data per index: a gauge with
// gaps (so per-minute counts differ), a counter that resets twice (once
// inside a minute, once right after a minute boundary) and a histogram.
type rawSource struct {
	counter float64
	hist    [4]float64
}

func (r *rawSource) appendRange(tb testing.TB, db storage.Appendable, from, to int) {
	tb.Helper()
	if err := r.tryAppendRange(db, from, to); err != nil {
		tb.Fatal(err)
	}
}

// tryAppendRange is appendRange returning the first append or commit
// error. The source has advanced past what failed: a caller that retries
// replays a fresh source up to the retry point with advance.
func (r *rawSource) tryAppendRange(db storage.Appendable, from, to int) error {
	app := db.Appender(context.Background())
	for i := from; i < to; i++ {
		ts := tierBase.Add(time.Duration(i) * time.Second).UnixMilli()
		if i%13 != 0 && i%61 != 5 {
			v := 50 + 30*math.Sin(float64(i)/97) + float64(i%7)
			if _, err := app.Append(0, gaugeLabels, ts, v); err != nil {
				_ = app.Rollback()
				return err
			}
		}
		r.advance(i)
		if _, err := app.Append(0, counterLabels, ts, r.counter); err != nil {
			_ = app.Rollback()
			return err
		}
		for k, le := range histBounds {
			if _, err := app.Append(0, histLabels(le), ts, r.hist[k]); err != nil {
				_ = app.Rollback()
				return err
			}
		}
		if (i+1)%3600 == 0 {
			if err := app.Commit(); err != nil {
				return err
			}
			app = db.Appender(context.Background())
		}
	}
	return app.Commit()
}

// advance moves the counter and the histogram to second i.
func (r *rawSource) advance(i int) {
	switch i {
	case 2*3600 + 17*60 + 31, 3*3600 + 40*60 + 1: // resets
		r.counter = 0
		r.hist = [4]float64{}
	}
	r.counter += float64(i % 5)
	obs := float64(i % 4)
	for k := range r.hist {
		// Cumulative buckets: a quarter of the observations are under
		// 0.1, half under 0.5, three quarters under 1.
		r.hist[k] += obs * float64(k+1) / 4
	}
}

type tsample struct {
	t int64
	v float64
}

// readSeries returns the samples of one series in (from, to].
func readSeries(tb testing.TB, db *tsdb.DB, lset labels.Labels, from, to time.Time) []tsample {
	tb.Helper()
	q, err := db.Querier(from.UnixMilli()+1, to.UnixMilli())
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	var ms []*labels.Matcher
	lset.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
	ss := q.Select(context.Background(), false, nil, ms...)
	var out []tsample
	for ss.Next() {
		if labels.Compare(ss.At().Labels(), lset) != 0 {
			continue
		}
		it := ss.At().Iterator(nil)
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			out = append(out, tsample{t, v})
		}
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func rename(lset labels.Labels, name string) labels.Labels {
	return labels.NewBuilder(lset).Set(labels.MetricName, name).Labels()
}

// exactIncrease is a counter's increase over samples, resets counted as
// Prometheus counts them (a drop starts again from zero).
func exactIncrease(ss []tsample) float64 {
	inc := 0.0
	for i := 1; i < len(ss); i++ {
		if d := ss[i].v - ss[i-1].v; d >= 0 {
			inc += d
		} else {
			inc += ss[i].v
		}
	}
	return inc
}

// downsampledTiers opens tiers holding 4 h 10 min of rawSource data from
// tierBase, aggregated by the downsampler, with the clock at their end.
func downsampledTiers(t *testing.T) (*tierSet, time.Time) {
	t.Helper()
	now := tierBase.Add(4*time.Hour + 10*time.Minute)
	ts := openTestTiers(t, t.TempDir(), TierOptions{}, &now)
	t.Cleanup(func() { _ = ts.close() })
	var src rawSource
	src.appendRange(t, ts.raw(), 0, 4*3600+10*60)
	if err := ts.ds.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ts, now
}

func TestTiersAgree(t *testing.T) {
	ts, now := downsampledTiers(t)
	if got, want := msTime(ts.ds.watermark(1)), now.Add(-time.Minute); !got.Equal(want) {
		t.Errorf("1m watermark = %s, want %s (lateness 30 s)", got, want)
	}
	if got, want := msTime(ts.ds.watermark(2)), tierBase.Add(4*time.Hour); !got.Equal(want) {
		t.Errorf("1h watermark = %s, want %s", got, want)
	}
	raw, m1, h1 := ts.tiers[0].db, ts.tiers[1].db, ts.tiers[2].db

	for _, hour := range []int{1, 2, 3} {
		from, to := tierBase.Add(time.Duration(hour)*time.Hour), tierBase.Add(time.Duration(hour+1)*time.Hour)
		t.Run(fmt.Sprintf("hour %d", hour), func(t *testing.T) {
			// Gauge: the raw samples' mean, extremes and count.
			rs := readSeries(t, raw, gaugeLabels, from, to)
			var sum, lo, hi = 0.0, math.Inf(1), math.Inf(-1)
			for _, s := range rs {
				sum += s.v
				lo, hi = min(lo, s.v), max(hi, s.v)
			}
			want := map[string]float64{"avg": sum / float64(len(rs)), aggMin: lo, aggMax: hi, aggCount: float64(len(rs))}

			// 1m tier: weighted mean of the minute means, extremes of the
			// minute extremes, sum of the counts.
			means := readSeries(t, m1, gaugeLabels, from, to)
			counts := readSeries(t, m1, rename(gaugeLabels, "test_gauge:count1m"), from, to)
			mins := readSeries(t, m1, rename(gaugeLabels, "test_gauge:min1m"), from, to)
			maxs := readSeries(t, m1, rename(gaugeLabels, "test_gauge:max1m"), from, to)
			if len(means) != 60 || len(counts) != 60 || len(mins) != 60 || len(maxs) != 60 {
				t.Fatalf("1m tier has %d/%d/%d/%d gauge samples in the hour, want 60 each", len(means), len(counts), len(mins), len(maxs))
			}
			var wsum, n = 0.0, 0.0
			lo, hi = math.Inf(1), math.Inf(-1)
			for i := range means {
				if means[i].t != counts[i].t || means[i].t%time.Minute.Milliseconds() != 0 {
					t.Fatalf("1m sample at %d (count at %d): not at a minute's end", means[i].t, counts[i].t)
				}
				wsum += means[i].v * counts[i].v
				n += counts[i].v
				lo, hi = min(lo, mins[i].v), max(hi, maxs[i].v)
			}
			got1m := map[string]float64{"avg": wsum / n, aggMin: lo, aggMax: hi, aggCount: n}

			// 1h tier: one sample per aggregate at the hour's end.
			got1h := map[string]float64{}
			for agg, name := range map[string]string{"avg": "test_gauge", aggMin: "test_gauge:min1h", aggMax: "test_gauge:max1h", aggCount: "test_gauge:count1h"} {
				ss := readSeries(t, h1, rename(gaugeLabels, name), from, to)
				if len(ss) != 1 || ss[0].t != to.UnixMilli() {
					t.Fatalf("1h tier %s: %v, want one sample at %d", name, ss, to.UnixMilli())
				}
				got1h[agg] = ss[0].v
			}
			for agg, w := range want {
				if !near(got1m[agg], w, 1e-12) || !near(got1h[agg], w, 1e-12) {
					t.Errorf("gauge %s: raw %v, 1m %v, 1h %v", agg, w, got1m[agg], got1h[agg])
				}
			}

			// Counter: the increase over the hour, from the last sample at
			// or before its start, is the same in every tier.
			baseFrom := from.Add(-time.Millisecond)
			incRaw := exactIncrease(readSeries(t, raw, counterLabels, baseFrom, to))
			inc1m := exactIncrease(readSeries(t, m1, counterLabels, baseFrom, to))
			inc1h := exactIncrease(readSeries(t, h1, counterLabels, baseFrom, to))
			if incRaw == 0 || inc1m != incRaw || inc1h != incRaw {
				t.Errorf("counter increase: raw %v, 1m %v, 1h %v", incRaw, inc1m, inc1h)
			}

			// PromQL: increase() and a histogram quantile over the same
			// window agree across the tiers (windows reach the sample at
			// the hour's start, so extrapolation is the same).
			exprs := []string{
				`increase(test_requests_total[3600001ms])`,
				`histogram_quantile(0.9, sum by (le) (rate(test_latency_seconds_bucket[3600001ms])))`,
				`histogram_quantile(0.3, sum by (le) (rate(test_latency_seconds_bucket[3600001ms])))`,
			}
			for _, e := range exprs {
				vr := instant(t, NewEmbeddedQuerier(raw, nil), e, to)
				vm := instant(t, NewEmbeddedQuerier(m1, nil), e, to)
				vh := instant(t, NewEmbeddedQuerier(h1, nil), e, to)
				if math.IsNaN(vr) || !near(vm, vr, 1e-9) || !near(vh, vr, 1e-9) {
					t.Errorf("%s: raw %v, 1m %v, 1h %v", e, vr, vm, vh)
				}
			}
		})
	}
}

// dumpTier returns every series and sample of a tier, for comparing two
// runs.
func dumpTier(tb testing.TB, db *tsdb.DB) map[string][]tsample {
	tb.Helper()
	return dumpSpan(tb, db, math.MinInt64, math.MaxInt64)
}

// dumpSpan returns every series and sample of db in [mint, maxt].
func dumpSpan(tb testing.TB, db *tsdb.DB, mint, maxt int64) map[string][]tsample {
	tb.Helper()
	q, err := db.Querier(mint, maxt)
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	out := map[string][]tsample{}
	for ss.Next() {
		it := ss.At().Iterator(nil)
		var xs []tsample
		for it.Next() == chunkenc.ValFloat {
			t, v := it.At()
			xs = append(xs, tsample{t, v})
		}
		out[ss.At().Labels().String()] = xs
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func compareTiers(t *testing.T, got, want *tierSet) {
	t.Helper()
	for level := 1; level < 3; level++ {
		compareDumps(t, tierNames[level], dumpTier(t, got.tiers[level].db), dumpTier(t, want.tiers[level].db))
	}
}

// compareDumps checks that two dumps of a tier hold the same series and
// samples.
func compareDumps(t *testing.T, name string, g, w map[string][]tsample) {
	t.Helper()
	if len(w) == 0 {
		t.Fatalf("%s tier: reference run is empty", name)
	}
	for k, ws := range w {
		gs := g[k]
		if len(gs) != len(ws) {
			t.Errorf("%s tier %s: %d samples, want %d", name, k, len(gs), len(ws))
			continue
		}
		for i := range ws {
			if gs[i] != ws[i] {
				t.Errorf("%s tier %s sample %d: %v, want %v", name, k, i, gs[i], ws[i])
				break
			}
		}
	}
	if len(g) != len(w) {
		t.Errorf("%s tier: %d series, want %d", name, len(g), len(w))
	}
}

// TestDownsamplerRestart stops and reopens the tiers halfway, once cleanly
// and once as if the process died between committing aggregates and
// writing the watermark: the tiers must equal one uninterrupted run, with
// no gap and no interval counted twice.
func TestDownsamplerRestart(t *testing.T) {
	const total = 3*3600 + 20*60
	end := tierBase.Add(total * time.Second)

	refNow := end
	ref := openTestTiers(t, t.TempDir(), TierOptions{}, &refNow)
	defer ref.close()
	var refSrc rawSource
	refSrc.appendRange(t, ref.raw(), 0, total)
	if err := ref.ds.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		crash bool // roll the watermarks back before reopening
	}{
		{"clean restart", false},
		{"crash before watermark write", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			half := 3600 + 47*60 + 13 // not on a minute or hour boundary
			now := tierBase.Add(time.Duration(half) * time.Second)
			ts := openTestTiers(t, dir, TierOptions{}, &now)
			var src rawSource
			src.appendRange(t, ts.raw(), 0, half)
			if err := ts.ds.catchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			wm1 := ts.ds.watermark(1)
			if err := ts.close(); err != nil {
				t.Fatal(err)
			}
			if tc.crash {
				for level, back := range map[int]time.Duration{1: 7 * time.Minute, 2: time.Hour} {
					path := filepath.Join(ts.tiers[level].dir, watermarkFile)
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					ms, err := parseWatermark(b)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, formatWatermark(ms-back.Milliseconds()), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			now = end
			ts2 := openTestTiers(t, dir, TierOptions{}, &now)
			defer ts2.close()
			if got := ts2.ds.watermark(1); !tc.crash && got != wm1 {
				t.Fatalf("reopened 1m watermark %d, want %d", got, wm1)
			}
			src.appendRange(t, ts2.raw(), half, total)
			if err := ts2.ds.catchUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			compareTiers(t, ts2, ref)
		})
	}
}

// TestDownsamplerIdempotent runs the downsampler again without new data:
// nothing changes.
func TestDownsamplerIdempotent(t *testing.T) {
	now := tierBase.Add(2*time.Hour + 5*time.Minute)
	ts := openTestTiers(t, t.TempDir(), TierOptions{}, &now)
	defer ts.close()
	var src rawSource
	src.appendRange(t, ts.raw(), 0, 2*3600+5*60)
	ctx := context.Background()
	if err := ts.ds.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	before := dumpTier(t, ts.tiers[1].db)
	_, written, _ := ts.ds.rates()
	if err := ts.ds.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := ts.ds.rates(); again != written {
		t.Errorf("second pass wrote %d aggregates", again-written)
	}
	after := dumpTier(t, ts.tiers[1].db)
	for k, v := range before {
		if len(after[k]) != len(v) {
			t.Errorf("%s: %d samples after a second pass, %d before", k, len(after[k]), len(v))
		}
	}
}

// TestDownsampleOutOfOrderAndDuplicates appends duplicate and out-of-order
// raw samples: the raw tier keeps one sample per timestamp, and the
// aggregates are those of what it kept.
func TestDownsampleOutOfOrderAndDuplicates(t *testing.T) {
	now := tierBase.Add(10 * time.Minute)
	ts := openTestTiers(t, t.TempDir(), TierOptions{}, &now)
	defer ts.close()
	ms := func(sec int) int64 { return tierBase.Add(time.Duration(sec) * time.Second).UnixMilli() }
	tests := []struct {
		name    string
		sec     int
		v       float64
		wantErr error
	}{
		{"first", 10, 5, nil},
		{"in order", 20, 7, nil},
		{"exact duplicate", 20, 7, nil},
		{"duplicate with another value", 20, 9, storage.ErrDuplicateSampleForTimestamp},
		{"out of order", 15, 100, storage.ErrOutOfOrderSample},
		{"next minute", 70, 3, nil},
		{"counter reset next minute", 80, 1, nil},
	}
	for _, tc := range tests {
		app := ts.raw().Appender(context.Background())
		_, err := app.Append(0, gaugeLabels, ms(tc.sec), tc.v)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: append error %v, want %v", tc.name, err, tc.wantErr)
		}
		if _, err := app.Append(0, counterLabels, ms(tc.sec), tc.v); !errors.Is(err, tc.wantErr) {
			t.Errorf("%s (counter): append error %v, want %v", tc.name, err, tc.wantErr)
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.ds.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	m1 := ts.tiers[1].db
	checks := []struct {
		lset labels.Labels
		want []tsample
	}{
		{gaugeLabels, []tsample{{ms(60), 6}, {ms(120), 2}}},
		{rename(gaugeLabels, "test_gauge:count1m"), []tsample{{ms(60), 2}, {ms(120), 2}}},
		{rename(gaugeLabels, "test_gauge:max1m"), []tsample{{ms(60), 7}, {ms(120), 3}}},
		// The reset inside the second minute keeps the value before it.
		{counterLabels, []tsample{{ms(60), 7}, {ms(70), 3}, {ms(120), 1}}},
	}
	for _, c := range checks {
		got := readSeries(t, m1, c.lset, tierBase, now)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.lset, got, c.want)
		}
	}
}

// TestTierRetention fills a tier with a short retention: compaction drops
// the blocks that fall out of it.
func TestTierRetention(t *testing.T) {
	db, err := openTierDB(t.TempDir(), false, time.Minute, 12*time.Hour, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lset := rename(gaugeLabels, "test_gauge")
	const minutes = 3 * 24 * 60
	for m := 0; m < minutes; m += 60 {
		app := db.Appender(context.Background())
		for k := m; k < m+60; k++ {
			if _, err := app.Append(0, lset, tierBase.Add(time.Duration(k)*time.Minute).UnixMilli(), float64(k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := app.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := db.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	newest := tierBase.Add((minutes - 1) * time.Minute)
	got := msTime(oldest(db))
	// Blocks go whole: the oldest kept block may start up to one block
	// (a quarter of the retention, at least 2 h) before the limit.
	if limit := newest.Add(-12*time.Hour - 3*time.Hour); got.Before(limit) {
		t.Errorf("oldest sample %s, want none before %s", got, limit)
	}
	if got.After(newest.Add(-12 * time.Hour)) {
		t.Errorf("oldest sample %s: retention dropped data younger than 12 h", got)
	}
}

// TestTieredQuerierStitches queries across all three tiers: raw for the
// last hour, 1m before that, 1h before that (short retentions), and checks
// that a counter's increase over the whole span equals the raw increase
// and that a gauge chart has a point at every step.
func TestTieredQuerierStitches(t *testing.T) {
	const total = 5*3600 + 10*60
	now := tierBase.Add(total * time.Second)
	ts := openTestTiers(t, t.TempDir(), TierOptions{RawRetention: time.Hour, MinuteRetention: 3 * time.Hour}, &now)
	defer ts.close()
	// The raw tier keeps everything here, so that the test can compare
	// with it (retention would otherwise race with the downsampler).
	ts.raw().DisableCompactions()
	var src rawSource
	src.appendRange(t, ts.raw(), 0, total)
	if err := ts.ds.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	cutTests := []struct {
		name string
		span time.Duration
		want int
	}{
		{"an hour reads raw", time.Hour, 0},
		{"two hours read 1m", 2 * time.Hour, 1},
		{"five hours read 1h", 5 * time.Hour, 2},
	}
	for _, tc := range cutTests {
		if got := ts.levelFor(tc.span); got != tc.want {
			t.Errorf("%s: level %d, want %d", tc.name, got, tc.want)
		}
	}
	q := newTieredQuerier(ts, nil)
	at := tierBase.Add(5 * time.Hour)
	// A range query over 5 h reads the 1h tier to the last full hour, then
	// 1m, then raw; its one point at `at` covers everything.
	rs, err := q.Range(context.Background(), `increase(test_requests_total[18000001ms])`, at.Add(-5*time.Hour), at, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Samples) == 0 {
		t.Fatalf("no result: %v", rs)
	}
	got := rs[0].Samples[len(rs[0].Samples)-1].V
	want := instant(t, NewEmbeddedQuerier(ts.raw(), nil), `increase(test_requests_total[18000001ms])`, at)
	if !near(got, want, 1e-9) {
		t.Errorf("stitched increase over 5 h = %v, raw %v", got, want)
	}
	// Each region comes from its tier: the gauge's count series exist only
	// in the aggregate tiers.
	for _, c := range []struct {
		expr string
		at   time.Time
		want bool
	}{
		{`test_gauge:count1h`, tierBase.Add(2 * time.Hour), true},
		{`test_gauge:count1m`, now.Add(-2 * time.Hour), true},
		{`test_gauge:count1m`, tierBase.Add(90 * time.Minute), false}, // served by 1h
	} {
		v := instant(t, q, c.expr, c.at)
		if math.IsNaN(v) == c.want {
			t.Errorf("%s at %s: %v, present = %v", c.expr, c.at.Format(time.TimeOnly), v, c.want)
		}
	}
	// A gauge chart over the whole span has a point at every 10 minutes,
	// from the hourly tier's samples through the raw ones.
	rs, err = q.Range(context.Background(), `avg(test_gauge)`, tierBase.Add(time.Hour), now, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Samples) != 26 {
		t.Fatalf("gauge chart: %d points, want 26", len(rs[0].Samples))
	}
}

// TestRawRetentionWaitsForDownsampler: raw data that is not aggregated yet
// outlives the raw retention; once aggregated, compaction drops it.
func TestRawRetentionWaitsForDownsampler(t *testing.T) {
	const total = 6 * 3600
	now := tierBase.Add(total * time.Second)
	ts := openTestTiers(t, t.TempDir(), TierOptions{RawRetention: time.Hour}, &now)
	defer ts.close()
	var src rawSource
	src.appendRange(t, ts.raw(), 0, total)
	ctx := context.Background()
	if err := ts.raw().Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := msTime(oldest(ts.raw())); !got.Equal(tierBase) {
		t.Fatalf("raw tier starts at %s before any aggregation, want %s", got, tierBase)
	}
	if err := ts.ds.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ts.appliedRaw; got != time.Hour {
		t.Errorf("raw retention after catching up = %s, want 1h", got)
	}
	// Retention applies when compaction cuts the next block.
	src.appendRange(t, ts.raw(), total, total+3*3600)
	now = now.Add(3 * time.Hour)
	if err := ts.raw().Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if got := msTime(oldest(ts.raw())); got.Before(now.Add(-5 * time.Hour)) {
		t.Errorf("raw tier still starts at %s after aggregation", got)
	}
	// The first sample, at the base, is the end of the first interval.
	if got := msTime(oldest(ts.tiers[1].db)); !got.Equal(tierBase) {
		t.Errorf("1m tier starts at %s, want %s", got, tierBase)
	}
}

// FuzzWatermark: any file content either parses to a timestamp that
// formats back to the same value, or is a clear error; never a panic.
func FuzzWatermark(f *testing.F) {
	for _, s := range []string{"1772445600000\n", "", "-5", "abc", "9223372036854775808", " 42 \n\n", "-9223372036854775808"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseWatermark(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		back, err := parseWatermark(formatWatermark(ms))
		if err != nil || back != ms {
			t.Fatalf("%d formats and parses back as %d, %v", ms, back, err)
		}
	})
}

func TestParseWatermark(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{"written by Casebook", "1772445600000\n", 1772445600000, false},
		{"hand-edited spaces", "  60000 ", 60000, false},
		{"empty", "", 0, true},
		{"not a number", "2026-03-02T10:00:00Z", 0, true},
		{"the unset sentinel", "-9223372036854775808", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseWatermark([]byte(tc.in))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseWatermark(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestHourlyStepReadsHourTier: a range query at an hourly step reads the
// 1-hour tier even when its span lies within the raw retention (a gauge
// is its hourly mean, not the raw sample on the hour), and its rate
// window spans two of the tier's aggregates, not four.
func TestHourlyStepReadsHourTier(t *testing.T) {
	ts, _ := downsampledTiers(t)
	q := newTieredQuerier(ts, slog.New(slog.DiscardHandler))
	rs, err := q.Range(context.Background(), "test_gauge", tierBase.Add(2*time.Hour), tierBase.Add(4*time.Hour), time.Hour)
	if err != nil || len(rs) != 1 || len(rs[0].Samples) != 3 {
		t.Fatalf("hourly range: %v, %v", rs, err)
	}
	for _, s := range rs[0].Samples {
		hour := readSeries(t, ts.tiers[2].db, gaugeLabels, s.T.Add(-time.Hour), s.T)
		onTheHour := readSeries(t, ts.raw(), gaugeLabels, s.T.Add(-time.Second), s.T)
		if len(hour) != 1 || s.V != hour[0].v {
			t.Errorf("at %s: %v, want the hour's mean %v", s.T.Format(time.TimeOnly), s.V, hour)
		}
		if len(onTheHour) == 1 && s.V == onTheHour[0].v {
			t.Errorf("at %s: %v is the raw sample on the hour", s.T.Format(time.TimeOnly), s.V)
		}
	}

	res := resolutions{live: time.Second, tiers: ts}
	if got := res.rangeWindow(tierBase.Add(2*time.Hour), time.Hour); got != 2*time.Hour {
		t.Errorf("rate window at an hourly step over the hour tier: %s, want 2h", got)
	}
	if got := res.rangeWindow(tierBase.Add(2*time.Hour), 15*time.Minute); got != 15*time.Minute+time.Second {
		t.Errorf("rate window at a 15-minute step over raw data: %s, want 15m1s", got)
	}
}

// TestHourTierHeadEmpties checks that the hourly tier keeps nothing in
// memory between hours: every hour is a block of its own, starting on the
// hour, and the storage page still counts the tier's series.
func TestHourTierHeadEmpties(t *testing.T) {
	ts, _ := downsampledTiers(t)
	h1 := ts.tiers[2].db
	if n := h1.Head().NumSeries(); n != 0 {
		t.Errorf("hourly tier head holds %d series after the downsampler's pass, want 0", n)
	}
	hours := map[int64]bool{}
	for _, b := range h1.Blocks() {
		m := b.Meta()
		if m.MinTime%time.Hour.Milliseconds() != 0 || m.MaxTime-m.MinTime > time.Hour.Milliseconds() {
			t.Errorf("block [%s, %s) is not one hour from the hour", msTime(m.MinTime), msTime(m.MaxTime))
		}
		hours[m.MinTime] = true
	}
	// Hours 0 to 4 after tierBase (the first holds the aggregate of the
	// interval ending at tierBase); out-of-order blocks share an hour.
	if len(hours) != 5 {
		t.Errorf("hourly tier has blocks for %d hours, want 5", len(hours))
	}
	var st TierStats
	for _, s := range ts.stats().Tiers {
		if s.Name == TierHour {
			st = s
		}
	}
	if want := dumpTier(t, h1); st.Series != uint64(len(want)) {
		t.Errorf("storage stats count %d hourly series, want %d", st.Series, len(want))
	}
}

// The hourly tier's compaction merges hourly blocks into full chunks, not
// one chunk a sample, and keeps every sample.
func TestHourTierCompactionRechunks(t *testing.T) {
	ts, _ := downsampledTiers(t)
	h1 := ts.tiers[2].db
	before := dumpTier(t, h1)
	if err := h1.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	merged := 0
	for _, b := range h1.Blocks() {
		m := b.Meta()
		if m.MaxTime-m.MinTime <= time.Hour.Milliseconds() {
			continue
		}
		merged++
		if m.Stats.NumChunks != m.Stats.NumSeries {
			t.Errorf("block [%s, %s) of %d hours: %d chunks for %d series and %d samples, want a chunk a series",
				msTime(m.MinTime), msTime(m.MaxTime), (m.MaxTime-m.MinTime)/time.Hour.Milliseconds(),
				m.Stats.NumChunks, m.Stats.NumSeries, m.Stats.NumSamples)
		}
	}
	if merged == 0 {
		t.Fatalf("no hourly blocks were merged: %d blocks", len(h1.Blocks()))
	}
	if after := dumpTier(t, h1); !reflect.DeepEqual(after, before) {
		t.Errorf("compaction changed the hourly tier: %d series before, %d after", len(before), len(after))
	}
}

// Raw blocks stay as the head cuts them, 30 minutes each: a merge would
// read every block it merges through the kernel's mappings.
func TestRawBlocksAreNotMerged(t *testing.T) {
	ts, _ := downsampledTiers(t)
	raw := ts.raw()
	if err := raw.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	blocks := raw.Blocks()
	if len(blocks) < 4 {
		t.Fatalf("%d raw blocks after compacting 4 hours, want one each 30 minutes", len(blocks))
	}
	for _, b := range blocks {
		if m := b.Meta(); m.MaxTime-m.MinTime > (30 * time.Minute).Milliseconds() {
			t.Errorf("raw block [%s, %s) spans more than 30 minutes (compaction level %d)",
				msTime(m.MinTime), msTime(m.MaxTime), m.Compaction.Level)
		}
	}
}
