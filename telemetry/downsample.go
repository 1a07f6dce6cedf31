package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Naming of the aggregates (see doc.go, "Tiers"). A series keeps its name
// and labels in every tier, so the catalog's PromQL reads any tier
// unchanged: a gauge's value in an aggregate tier is its mean over the
// interval, a counter's is its last value. The extremes and the sample
// count of a gauge are extra series named like promrules' recording rules,
// level:metric:operation with the tier appended: <name>:min1m,
// <name>:max1m, <name>:count1m in the 1-minute tier and <name>:min1h,
// <name>:max1h, <name>:count1h in the 1-hour tier.
const (
	aggMin   = "min"
	aggMax   = "max"
	aggCount = "count"
)

// auxName returns the name of a gauge's extra aggregate series in a tier.
func auxName(name, agg string, level int) string {
	return name + ":" + agg + tierNames[level]
}

// splitAux reports whether name is an extra aggregate series of the tier
// at level, and of which series and aggregate.
func splitAux(name string, level int) (base, agg string, ok bool) {
	for _, a := range []string{aggMin, aggMax, aggCount} {
		suffix := ":" + a + tierNames[level]
		if strings.HasSuffix(name, suffix) {
			return strings.TrimSuffix(name, suffix), a, true
		}
	}
	return "", "", false
}

// dcgmCounters are the dcgm-exporter counters whose names do not follow
// the _total convention.
var dcgmCounters = map[string]bool{
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": true,
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":      true,
	"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":   true,
}

// isCounter reports whether a series name is a counter (including the
// cumulative _bucket, _sum and _count series of histograms and
// summaries): its aggregate is its last value per interval, so rate() and
// histogram_quantile() keep working on the tier. Every other series is a
// gauge.
func isCounter(name string) bool {
	for _, s := range []string{"_total", "_bucket", "_sum", "_count", "_created"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return dcgmCounters[name]
}

// watermarkFile holds a tier's watermark inside the tier's directory.
const watermarkFile = "downsample-watermark"

// Chunks of work: how much source time one pass reads. The hourly tier
// takes one hour a pass: its head is written to a block after every pass
// (flushHourHead), and a head refuses samples more than half its one-hour
// chunk range older than its newest, so a pass must not span hours.
var downsampleChunk = [3]time.Duration{0, time.Hour, time.Hour}

// downsampleBatch is how many aggregate samples one commit holds.
const downsampleBatch = 50_000

// downsampler writes the 1-minute tier from raw data and the 1-hour tier
// from the 1-minute tier. Its watermark per tier is the end of the last
// interval it aggregated; intervals are left-open, (end-res, end], and an
// aggregate is stored at the interval's end, so an aggregate never holds
// data from after its timestamp. The watermark is persisted after the
// aggregates are committed: a restart resumes at it, and re-aggregating an
// interval after a crash between the two writes stores identical samples,
// which the TSDB ignores.
type downsampler struct {
	ts *tierSet

	mu      sync.Mutex
	wm      [3]int64 // by level; math.MinInt64 until the first aggregation
	rate    float64  // raw samples per second of the last pass
	written int64
	lastErr string
}

func newDownsampler(ts *tierSet) (*downsampler, error) {
	d := &downsampler{ts: ts, wm: [3]int64{math.MinInt64, math.MinInt64, math.MinInt64}}
	for level := 1; level < 3; level++ {
		path := filepath.Join(ts.tiers[level].dir, watermarkFile)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: read %s: %w", path, err)
		}
		ms, err := parseWatermark(b)
		if err != nil {
			return nil, fmt.Errorf("telemetry: watermark %s: %w", path, err)
		}
		d.wm[level] = ms
	}
	return d, nil
}

// formatWatermark and parseWatermark are the watermark file's format: a
// Unix time in milliseconds and a newline.
func formatWatermark(ms int64) []byte { return []byte(strconv.FormatInt(ms, 10) + "\n") }

func parseWatermark(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == math.MinInt64 {
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return 0, fmt.Errorf("%q is not a Unix time in milliseconds", s)
	}
	return ms, nil
}

func (d *downsampler) watermark(level int) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wm[level]
}

// setWatermark persists and then publishes a tier's watermark. The file is
// replaced atomically, so a crash leaves the old or the new value.
func (d *downsampler) setWatermark(level int, ms int64) error {
	path := filepath.Join(d.ts.tiers[level].dir, watermarkFile)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("telemetry: write watermark: %w", err)
	}
	_, err = f.Write(formatWatermark(ms))
	if err == nil && d.ts.opts.WAL {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("telemetry: write watermark %s: %w", path, err)
	}
	d.mu.Lock()
	d.wm[level] = ms
	d.mu.Unlock()
	return nil
}

func (d *downsampler) rates() (float64, int64, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rate, d.written, d.lastErr
}

// run aggregates every complete interval, then again every tick, until ctx
// is done.
func (d *downsampler) run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		err := d.catchUp(ctx)
		d.mu.Lock()
		if err != nil && ctx.Err() == nil {
			if d.lastErr != err.Error() {
				d.ts.opts.Logger.Warn("downsampling failed", "err", err)
			}
			d.lastErr = err.Error()
		} else if err == nil {
			d.lastErr = ""
		}
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// catchUp aggregates every complete interval of both tiers, then lets the
// raw tier's retention drop what is aggregated.
func (d *downsampler) catchUp(ctx context.Context) error {
	return d.catchUpUntil(ctx, math.MaxInt64)
}

// catchUpUntil is catchUp for the intervals that end by until (Unix ms):
// the back-fill's, whose raw data is complete only up to where it has got.
func (d *downsampler) catchUpUntil(ctx context.Context, until int64) (err error) {
	defer func() { err = errors.Join(err, d.ts.applyRawRetention()) }()
	for level := 1; level < 3; level++ {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			more, err := d.step(ctx, level, until)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
	return nil
}

// floorTo rounds ms down to a multiple of r.
func floorTo(ms, r int64) int64 {
	q := ms / r
	if ms%r != 0 && ms < 0 {
		q--
	}
	return q * r
}

// bucketEnd returns the end of the left-open interval (end-r, end] that
// holds ms.
func bucketEnd(ms, r int64) int64 {
	e := floorTo(ms, r)
	if e < ms {
		e += r
	}
	return e
}

// oldest returns the time of the oldest sample in db, math.MaxInt64 when
// it is empty.
func oldest(db *tsdb.DB) int64 {
	mint := int64(math.MaxInt64)
	for _, b := range db.Blocks() {
		mint = min(mint, b.Meta().MinTime)
	}
	if h := db.Head(); h.NumSeries() > 0 {
		mint = min(mint, h.MinTime())
	}
	return mint
}

// step aggregates one chunk of complete intervals of the tier at level,
// none ending after until, and reports whether more complete intervals are
// waiting.
func (d *downsampler) step(ctx context.Context, level int, until int64) (bool, error) {
	r := tierLevels[level].Milliseconds()
	src, dst := d.ts.tiers[level-1], d.ts.tiers[level]
	var limit int64
	if level == 1 {
		limit = floorTo(min(d.ts.now().Add(-d.ts.opts.Lateness).UnixMilli(), until), r)
	} else {
		wm1 := d.watermark(1)
		if wm1 == math.MinInt64 {
			return false, nil
		}
		limit = floorTo(wm1, r)
	}
	wm := d.watermark(level)
	first := oldest(src.db)
	if first == math.MaxInt64 {
		return false, nil
	}
	// Skip time with no source data (a fresh tier, or data lost to
	// retention while Casebook was down).
	wm = max(wm, floorTo(first-1, r))
	if limit <= wm {
		return false, nil
	}
	to := min(limit, wm+downsampleChunk[level].Milliseconds())
	n, written, err := aggregate(ctx, src.db, d.ts.appendable(level), level, wm, to)
	if err != nil {
		return false, fmt.Errorf("telemetry: downsample %s tier (%s, %s]: %w", dst.name,
			msTime(wm).Format(time.RFC3339), msTime(to).Format(time.RFC3339), err)
	}
	if level == 2 {
		if err := flushHourHead(ctx, dst.db); err != nil {
			return false, fmt.Errorf("telemetry: downsample %s tier: %w", dst.name, err)
		}
	}
	if err := d.setWatermark(level, to); err != nil {
		return false, err
	}
	d.mu.Lock()
	d.written += written
	if level == 1 {
		d.rate = float64(n) / msTime(to).Sub(msTime(wm)).Seconds()
	}
	d.mu.Unlock()
	return to < limit, nil
}

// flushHourHead writes what the hourly tier's head holds to blocks, one
// an hour, and empties the head. The tier gets one sample a series an
// hour; kept in the head between hours, its series would hold memory for
// those few bytes (about 140 MB over a 500-engine fleet's 218,000 series),
// while a block costs nothing until it is read. An hour's aggregates sit
// on the hour, so every block holds one hour and the TSDB's compaction
// merges them into 3 h, 9 h, ... blocks.
//
// A counter's value before a reset is kept at its own time inside the
// interval (see downsampleCounter), in the hour whose block the previous
// pass wrote: the tier takes it out of order, and it is written to a
// block of its own that compaction merges with that hour's.
func flushHourHead(ctx context.Context, db *tsdb.DB) error {
	h := db.Head()
	r := tierLevels[2].Milliseconds()
	// Writing a block truncates the head and moves its bounds: take them
	// first.
	if mint, maxt := h.MinTime(), h.MaxTime(); h.NumSeries() > 0 && mint != math.MaxInt64 {
		for t := floorTo(mint, r); t <= maxt; t += r {
			if err := db.CompactHead(tsdb.NewRangeHead(h, t, t+r-1)); err != nil {
				return fmt.Errorf("write the hour at %s to a block: %w", msTime(t).Format(time.RFC3339), err)
			}
		}
	}
	if err := db.CompactOOOHead(ctx); err != nil {
		return fmt.Errorf("write out-of-order aggregates to a block: %w", err)
	}
	return nil
}

// emitter appends aggregates to a tier, committing every downsampleBatch
// samples. Samples that the tier already holds (an interval aggregated
// again after a crash) are skipped.
type emitter struct {
	ctx     context.Context
	db      storage.Appendable
	app     storage.Appender
	pending int
	written int64
}

func (e *emitter) add(lset labels.Labels, t int64, v float64) error {
	if e.app == nil {
		e.app = e.db.Appender(e.ctx)
	}
	_, err := e.app.Append(0, lset, t, v)
	switch {
	case err == nil:
		e.written++
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrDuplicateSampleForTimestamp),
		errors.Is(err, storage.ErrOutOfBounds), errors.Is(err, storage.ErrTooOldSample):
		// Already aggregated before a restart.
		return nil
	default:
		return fmt.Errorf("append %s: %w", lset, err)
	}
	e.pending++
	if e.pending >= downsampleBatch {
		return e.commit()
	}
	return nil
}

func (e *emitter) commit() error {
	if e.app == nil {
		return nil
	}
	err := e.app.Commit()
	e.app, e.pending = nil, 0
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (e *emitter) rollback() {
	if e.app != nil {
		_ = e.app.Rollback()
		e.app = nil
	}
}

// aggregate writes the aggregates of the intervals in (from, to] of src
// into dst, the tier at level. It returns how many source samples it read
// and how many aggregates it wrote.
func aggregate(ctx context.Context, src *tsdb.DB, dst storage.Appendable, level int, from, to int64) (int64, int64, error) {
	q, err := src.Querier(from+1, to)
	if err != nil {
		return 0, 0, err
	}
	defer q.Close()
	em := &emitter{ctx: ctx, db: dst}
	defer em.rollback()
	r := tierLevels[level].Milliseconds()
	var read int64
	if level == 1 {
		read, err = aggregateRaw(ctx, q, em, r)
	} else {
		read, err = aggregateTier(ctx, q, em, r)
	}
	if err != nil {
		return read, em.written, err
	}
	if err := em.commit(); err != nil {
		return read, em.written, err
	}
	return read, em.written, nil
}

// aggregateRaw writes the 1-minute tier from raw series.
func aggregateRaw(ctx context.Context, q storage.Querier, em *emitter, r int64) (int64, error) {
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	var it chunkenc.Iterator
	var read int64
	for ss.Next() {
		s := ss.At()
		lset := s.Labels()
		it = s.Iterator(it)
		name := lset.Get(labels.MetricName)
		var n int64
		var err error
		if isCounter(name) {
			n, err = downsampleCounter(it, r, lset, em)
		} else {
			n, err = downsampleGauge(it, r, lset, 1, em)
		}
		read += n
		if err != nil {
			return read, err
		}
	}
	return read, ss.Err()
}

// aggregateTier writes the 1-hour tier from the 1-minute tier, name by
// name, so that a gauge's mean can be weighted by its per-minute counts.
func aggregateTier(ctx context.Context, q storage.Querier, em *emitter, r int64) (int64, error) {
	names, _, err := q.LabelValues(ctx, labels.MetricName, nil)
	if err != nil {
		return 0, err
	}
	// LabelValues' strings are only valid while q is open, which they are.
	var read int64
	var it, cit chunkenc.Iterator
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return read, err
		}
		ss := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
		if base, agg, ok := splitAux(name, 1); ok {
			for ss.Next() {
				s := ss.At()
				it = s.Iterator(it)
				lb := labels.NewBuilder(s.Labels()).Set(labels.MetricName, auxName(base, agg, 2)).Labels()
				n, err := downsampleFold(it, r, lb, agg, em)
				read += n
				if err != nil {
					return read, err
				}
			}
			if err := ss.Err(); err != nil {
				return read, err
			}
			continue
		}
		if isCounter(name) {
			for ss.Next() {
				s := ss.At()
				it = s.Iterator(it)
				n, err := downsampleCounter(it, r, s.Labels(), em)
				read += n
				if err != nil {
					return read, err
				}
			}
			if err := ss.Err(); err != nil {
				return read, err
			}
			continue
		}
		// A gauge's mean: join each series with its count series (the same
		// labels under <name>:count1m; both sets are sorted by labels).
		cs := q.Select(ctx, true, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, auxName(name, aggCount, 1)))
		haveC := cs.Next()
		for ss.Next() {
			s := ss.At()
			key := s.Labels().DropMetricName()
			for haveC && labels.Compare(cs.At().Labels().DropMetricName(), key) < 0 {
				haveC = cs.Next()
			}
			it = s.Iterator(it)
			var counts chunkenc.Iterator
			if haveC && labels.Compare(cs.At().Labels().DropMetricName(), key) == 0 {
				cit = cs.At().Iterator(cit)
				counts = cit
			}
			n, err := downsampleMean(it, counts, r, s.Labels(), em)
			read += n
			if err != nil {
				return read, err
			}
		}
		if err := ss.Err(); err != nil {
			return read, err
		}
		if err := cs.Err(); err != nil {
			return read, err
		}
	}
	return read, nil
}

// usable reports whether a stored float is a value (not a staleness
// marker or another NaN).
func usable(v float64) bool { return !math.IsNaN(v) && !value.IsStaleNaN(v) }

// downsampleCounter writes a counter's last value per interval at the
// interval's end. A reset inside an interval also keeps the last value
// before the reset, at its own time: then every drop the raw series shows
// is a drop in the aggregate too, and increase() over the aggregate equals
// increase() over the raw samples.
func downsampleCounter(it chunkenc.Iterator, r int64, lset labels.Labels, em *emitter) (int64, error) {
	var read int64
	bucket := int64(math.MinInt64)
	var prevT int64
	var prevV float64
	have := false
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if !usable(v) {
			continue
		}
		read++
		b := bucketEnd(t, r)
		if have && b != bucket {
			if err := em.add(lset, bucket, prevV); err != nil {
				return read, err
			}
		} else if have && v < prevV {
			if err := em.add(lset, prevT, prevV); err != nil {
				return read, err
			}
		}
		bucket, prevT, prevV, have = b, t, v, true
	}
	if have {
		if err := em.add(lset, bucket, prevV); err != nil {
			return read, err
		}
	}
	return read, it.Err()
}

// gaugeAgg accumulates a gauge over one interval.
type gaugeAgg struct {
	sum, weight, min, max float64
}

func (g *gaugeAgg) reset() { *g = gaugeAgg{min: math.Inf(1), max: math.Inf(-1)} }

func (g *gaugeAgg) add(v, w float64) {
	g.sum += v * w
	g.weight += w
	g.min = min(g.min, v)
	g.max = max(g.max, v)
}

// gaugeSeries are the output series of a gauge in one tier.
type gaugeSeries struct {
	mean, min, max, count labels.Labels
}

func newGaugeSeries(lset labels.Labels, level int) gaugeSeries {
	name := lset.Get(labels.MetricName)
	b := labels.NewBuilder(lset)
	return gaugeSeries{
		mean:  lset,
		min:   b.Set(labels.MetricName, auxName(name, aggMin, level)).Labels(),
		max:   b.Set(labels.MetricName, auxName(name, aggMax, level)).Labels(),
		count: b.Set(labels.MetricName, auxName(name, aggCount, level)).Labels(),
	}
}

// downsampleGauge writes a raw gauge's mean, minimum, maximum and sample
// count per interval.
func downsampleGauge(it chunkenc.Iterator, r int64, lset labels.Labels, level int, em *emitter) (int64, error) {
	out := newGaugeSeries(lset, level)
	var read int64
	var g gaugeAgg
	g.reset()
	bucket := int64(math.MinInt64)
	flush := func() error {
		if g.weight == 0 {
			return nil
		}
		for _, s := range []struct {
			l labels.Labels
			v float64
		}{{out.mean, g.sum / g.weight}, {out.min, g.min}, {out.max, g.max}, {out.count, g.weight}} {
			if err := em.add(s.l, bucket, s.v); err != nil {
				return err
			}
		}
		g.reset()
		return nil
	}
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if !usable(v) || math.IsInf(v, 0) {
			continue
		}
		read++
		if b := bucketEnd(t, r); b != bucket {
			if err := flush(); err != nil {
				return read, err
			}
			bucket = b
		}
		g.add(v, 1)
	}
	if err := flush(); err != nil {
		return read, err
	}
	return read, it.Err()
}

// downsampleMean writes a gauge's mean per interval from the means of a
// finer tier, weighted by the finer tier's counts (counts may be nil: equal
// weights).
func downsampleMean(it, counts chunkenc.Iterator, r int64, lset labels.Labels, em *emitter) (int64, error) {
	var read int64
	var g gaugeAgg
	g.reset()
	bucket := int64(math.MinInt64)
	ct, cv, cok := int64(math.MinInt64), 0.0, counts != nil
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if !usable(v) {
			continue
		}
		read++
		for cok && ct < t {
			if counts.Next() != chunkenc.ValFloat {
				cok = false
				break
			}
			ct, cv = counts.At()
		}
		w := 1.0
		if cok && ct == t && usable(cv) && cv > 0 {
			w = cv
		}
		if b := bucketEnd(t, r); b != bucket {
			if g.weight > 0 {
				if err := em.add(lset, bucket, g.sum/g.weight); err != nil {
					return read, err
				}
			}
			g.reset()
			bucket = b
		}
		g.add(v, w)
	}
	if g.weight > 0 {
		if err := em.add(lset, bucket, g.sum/g.weight); err != nil {
			return read, err
		}
	}
	return read, it.Err()
}

// downsampleFold writes the minimum, maximum or sum (for counts) of a
// finer tier's extra aggregate series per interval.
func downsampleFold(it chunkenc.Iterator, r int64, lset labels.Labels, agg string, em *emitter) (int64, error) {
	var read int64
	var g gaugeAgg
	g.reset()
	bucket := int64(math.MinInt64)
	flush := func() error {
		if g.weight == 0 {
			return nil
		}
		v := g.sum
		switch agg {
		case aggMin:
			v = g.min
		case aggMax:
			v = g.max
		}
		g.reset()
		return em.add(lset, bucket, v)
	}
	for it.Next() == chunkenc.ValFloat {
		t, v := it.At()
		if !usable(v) {
			continue
		}
		read++
		if b := bucketEnd(t, r); b != bucket {
			if err := flush(); err != nil {
				return read, err
			}
			bucket = b
		}
		g.add(v, 1)
	}
	if err := flush(); err != nil {
		return read, err
	}
	return read, it.Err()
}
