package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// Default retentions of the embedded tiers.
const (
	DefaultRawRetention    = 24 * time.Hour
	DefaultMinuteRetention = 30 * 24 * time.Hour
	DefaultHourRetention   = 365 * 24 * time.Hour
)

// Tier names, as the storage page shows them.
const (
	TierRaw    = "raw"
	TierMinute = "1m"
	TierHour   = "1h"
)

// tierLevels are the resolutions of the downsampled tiers, by level: level
// 0 is raw (its resolution is the scrape interval), 1 the 1-minute and 2
// the 1-hour tier.
var tierLevels = [3]time.Duration{0, time.Minute, time.Hour}

var tierNames = [3]string{TierRaw, TierMinute, TierHour}

// TierOptions configures the embedded tiers. Zero retentions take the
// defaults.
type TierOptions struct {
	RawRetention    time.Duration
	MinuteRetention time.Duration
	HourRetention   time.Duration
	// WAL keeps a write-ahead log in every tier (off for demo data, which
	// is regenerated on every start).
	WAL bool
	// Lateness is how long after an interval ends the downsampler waits
	// for its last samples before aggregating it (default 30 s, at least
	// two scrape intervals).
	Lateness time.Duration
	// DiskReserve is the free space writes leave on the file system
	// (0 means DefaultDiskReserve; negative turns the check off).
	DiskReserve int64
	Logger      *slog.Logger
}

func (o TierOptions) withDefaults() TierOptions {
	if o.RawRetention <= 0 {
		o.RawRetention = DefaultRawRetention
	}
	if o.MinuteRetention <= 0 {
		o.MinuteRetention = DefaultMinuteRetention
	}
	if o.HourRetention <= 0 {
		o.HourRetention = DefaultHourRetention
	}
	if o.Lateness <= 0 {
		o.Lateness = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = DefaultDiskReserve
	}
	return o
}

// tier is one TSDB of the tiered store.
type tier struct {
	level     int
	name      string
	dir       string
	db        *tsdb.DB
	retention time.Duration
}

// res returns the tier's resolution; 0 for raw.
func (t *tier) res() time.Duration { return tierLevels[t.level] }

// tierSet is the raw, 1-minute and 1-hour TSDBs of the embedded mode and
// the downsampler between them.
type tierSet struct {
	opts  TierOptions
	tiers [3]*tier
	ds    *downsampler
	now   func() time.Time
	// appliedRaw is the retention the raw tier runs with (see
	// rawRetention); only the downsampler's goroutine changes it.
	appliedRaw time.Duration
	guard      *diskGuard // nil when the reserve check is off
}

// tierDirs returns the directories of the three tiers under base: base
// itself holds raw data (so an existing DataDir/tsdb stays the raw tier),
// base-1m and base-1h the aggregates.
func tierDirs(base string) [3]string {
	return [3]string{base, base + "-" + TierMinute, base + "-" + TierHour}
}

// openTiers opens (or creates) the three TSDBs under base and the
// downsampler's watermarks. The downsampler does not run until start.
func openTiers(base string, opts TierOptions) (*tierSet, error) {
	opts = opts.withDefaults()
	ts := &tierSet{opts: opts, now: time.Now}
	if opts.DiskReserve > 0 {
		ts.guard = &diskGuard{path: filepath.Dir(base), reserve: uint64(opts.DiskReserve)}
	}
	rets := [3]time.Duration{opts.RawRetention, opts.MinuteRetention, opts.HourRetention}
	for i, dir := range tierDirs(base) {
		ts.tiers[i] = &tier{level: i, name: tierNames[i], dir: dir, retention: rets[i]}
	}
	ds, err := newDownsampler(ts)
	if err != nil {
		return nil, err
	}
	ts.ds = ds
	for i, t := range ts.tiers {
		ret := t.retention
		if i == 0 {
			ret = ts.rawRetention()
		}
		db, err := openTierDB(t.dir, opts.WAL, tierLevels[i], ret, opts.Logger)
		if err != nil {
			_ = ts.close()
			return nil, err
		}
		t.db = db
	}
	ts.appliedRaw = ts.rawRetention()
	return ts, nil
}

// rawRetention is the retention the raw tier is run with: the configured
// one, extended so that nothing the downsampler has not aggregated yet is
// dropped (after downtime, or when a raw tier from before the tiers
// exists). Before the first aggregation it keeps everything.
func (ts *tierSet) rawRetention() time.Duration {
	wm := ts.ds.watermark(1)
	if wm == math.MinInt64 {
		return 0
	}
	behind := ts.now().Sub(msTime(wm)) + time.Hour
	return max(ts.tiers[0].retention, behind.Truncate(time.Hour))
}

// applyRawRetention updates the raw tier's retention after the
// downsampler moved on.
func (ts *tierSet) applyRawRetention() error {
	ret := ts.rawRetention()
	if ret == ts.appliedRaw {
		return nil
	}
	cfg := &config.Config{StorageConfig: config.StorageConfig{TSDBConfig: &config.TSDBConfig{
		Retention: &config.TSDBRetentionConfig{Time: model.Duration(ret)},
	}}}
	if err := ts.raw().ApplyConfig(cfg); err != nil {
		return fmt.Errorf("telemetry: raw tier retention %s: %w", ret, err)
	}
	ts.appliedRaw = ret
	return nil
}

// openTierDB opens one tier whose samples come every res (0 for raw).
// The head cuts a block once it spans its chunk range: 30 min for raw data,
// 2 h for 1-minute data (a full chunk of the 1-minute tier). The hourly
// tier's head is written out hour by hour instead (see flushHourHead), so
// its blocks start at an hour. The aggregated tiers' blocks grow to a
// quarter of the retention (up to 31 days), so retention drops old data in
// steps of at most a quarter of it; raw blocks stay as they are cut.
func openTierDB(dir string, withWAL bool, res, retention time.Duration, log *slog.Logger) (*tsdb.DB, error) {
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = retention.Milliseconds()
	minBlock := 2 * time.Hour
	maxBlock := min(max(retention/4, minBlock), 31*24*time.Hour)
	switch res {
	case 0:
		// The raw head holds between a half and one and a half chunk
		// ranges of samples. Every full chunk is read once from the
		// files it is written to, when the downsampler aggregates its
		// last minute, so the kernel maps in all of the head's chunk
		// files until the head is cut: at 500 engines about 300 MB an
		// hour of samples. Each chunk also keeps a reference in memory.
		// A short range holds less of both. (Scrapes are never a quarter
		// of an hour late, the oldest the head then takes.)
		minBlock = 30 * time.Minute
		// Raw blocks are never merged. They live a day and are read a
		// few at a time (live views span hours, the downsampler its
		// minutes), so a merge would buy nothing, while it reads every
		// block it merges through the kernel's mappings: a merge of
		// three 90-minute blocks would map 4.5 hours of samples, over a
		// GB at 500 engines, into the process's resident memory.
		maxBlock = minBlock
	case tierLevels[2]:
		minBlock = res
		// Room for a counter's value before a reset, which comes after
		// its hour's block is written (see flushHourHead).
		opts.OutOfOrderTimeWindow = (2 * res).Milliseconds()
		// A block's chunk file is preallocated at its full segment size:
		// 512 MiB by default, space an hourly block of a few MB would
		// claim from the disk every hour.
		opts.MaxBlockChunkSegmentSize = 16 << 20
		opts.NewCompactorFunc = newRechunkingCompactor
	}
	opts.MinBlockDuration = minBlock.Milliseconds()
	opts.MaxBlockDuration = max(maxBlock, minBlock).Milliseconds()
	if !withWAL {
		opts.WALSegmentSize = -1
	}
	// Isolation keeps a query from seeing half of a commit. The aggregated
	// tiers are written only by the downsampler and the back-fill, and read
	// only up to the downsampler's watermark, which moves after the commit,
	// so it buys nothing there; and it costs memory: each series keeps a
	// ring of open commits that a long read lets grow and that never
	// shrinks (160 MiB over a 500-engine fleet's 470,000 aggregate series
	// after a week's back-fill).
	opts.IsolationDisabled = res > 0
	tlog := slog.New(minLevel{h: log.Handler(), min: slog.LevelWarn}).With("component", "tsdb", "dir", filepath.Base(dir))
	db, err := tsdb.Open(dir, tlog, nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("telemetry: open tsdb %s: %w", dir, err)
	}
	return db, nil
}

func (ts *tierSet) raw() *tsdb.DB { return ts.tiers[0].db }

// appendable is what writers of a tier append through: commits are
// refused while the disk is full.
func (ts *tierSet) appendable(level int) storage.Appendable {
	return guardedAppendable{Appendable: ts.tiers[level].db, guard: ts.guard}
}

// close closes the tiers. On a full disk it leaves them unflushed
// instead: closing writes the head's chunks to disk, and the TSDB panics
// when that write fails (ENOSPC in its chunk writer), so the process would
// die with a stack trace. What the write-ahead log holds is replayed at the
// next start; the caller gets an error saying what was skipped.
func (ts *tierSet) close() error {
	if err := ts.guard.check(); err != nil {
		return fmt.Errorf("telemetry: tiers left unflushed, the write-ahead log replays at the next start: %w", err)
	}
	var errs []error
	for _, t := range ts.tiers {
		if t == nil || t.db == nil {
			continue
		}
		if err := t.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: close %s tier: %w", t.name, err))
		}
	}
	return errors.Join(errs...)
}

// cuts returns, for a query whose coarsest acceptable tier is level c, the
// instants where it switches tiers: tier 0 (raw) serves (cut[0], +inf),
// tier 1 (cut[1], cut[0]] and tier 2 everything up to cut[1]. A finer tier
// than c serves only what the coarser tier has not aggregated yet (after
// its watermark); tier c and coarser ones serve until their own data has
// expired (retention) and the next tier has it.
func (ts *tierSet) cuts(c int) [2]int64 {
	now := ts.now().UnixMilli()
	var out [2]int64
	for i := range 2 {
		wm := ts.ds.watermark(i + 1)
		if i < c {
			out[i] = wm
		} else {
			out[i] = min(now-ts.tiers[i].retention.Milliseconds(), wm)
		}
	}
	if out[1] > out[0] {
		out[1] = out[0]
	}
	return out
}

// levelFor returns the coarsest tier a query over span may read: raw up to
// the raw retention, then 1-minute up to its retention, then 1-hour.
func (ts *tierSet) levelFor(span time.Duration) int {
	switch {
	case span <= ts.tiers[0].retention:
		return 0
	case span <= ts.tiers[1].retention:
		return 1
	default:
		return 2
	}
}

// levelForStep returns the coarsest tier a range query at step may read
// whatever its span: the hourly tier from a step of an hour, since a
// point per hour needs no finer data; else raw (levelFor decides by span).
// A week at hourly steps then reads 168 aggregates a series from memory
// instead of 10,080 minutes from the 1-minute tier's block files.
func levelForStep(step time.Duration) int {
	if step >= tierLevels[2] {
		return 2
	}
	return 0
}

// resolutionAt returns the resolution of the data a query reads at t when
// it may use tiers as coarse as level c: 0 where raw data serves it (the
// caller knows the raw resolution), else the aggregate tier's resolution.
func (ts *tierSet) resolutionAt(t time.Time, c int) time.Duration {
	cut := ts.cuts(c)
	ms := t.UnixMilli()
	switch {
	case ms > cut[0]:
		return 0
	case ms > cut[1]:
		return tierLevels[1]
	default:
		return tierLevels[2]
	}
}

// queryable returns a storage.Queryable that stitches the tiers for a
// query whose coarsest acceptable tier is level c: each tier answers only
// for its own span of time, so no sample is read twice.
func (ts *tierSet) queryable(c int) storage.Queryable {
	cut := ts.cuts(c)
	return storage.QueryableFunc(func(mint, maxt int64) (storage.Querier, error) {
		bounds := [3][2]int64{{cut[0] + 1, math.MaxInt64}, {cut[1] + 1, cut[0]}, {math.MinInt64, cut[1]}}
		var qs []storage.Querier
		for i, t := range ts.tiers {
			lo, hi := max(mint, bounds[i][0]), min(maxt, bounds[i][1])
			if lo > hi {
				continue
			}
			q, err := t.db.Querier(lo, hi)
			if err != nil {
				for _, q := range qs {
					_ = q.Close()
				}
				return nil, fmt.Errorf("telemetry: query %s tier: %w", t.name, err)
			}
			qs = append(qs, q)
		}
		if len(qs) == 1 {
			return qs[0], nil
		}
		return storage.NewMergeQuerier(qs, nil, storage.ChainedSeriesMerge), nil
	})
}

// TieredQuerier evaluates PromQL over the tiered embedded store. It picks
// the coarsest tier a query may read from its time span (raw up to the raw
// retention, then 1-minute, then 1-hour) or its step (see levelForStep)
// and stitches the finer tiers in where the coarser one has not been
// aggregated yet. The lookback of
// instant selectors widens with the resolution, so a gauge read from the
// 1-hour tier finds its hourly sample.
type TieredQuerier struct {
	ts     *tierSet
	engine *EmbeddedQuerier // its engine is shared; its storage is unused
}

func newTieredQuerier(ts *tierSet, log *slog.Logger) *TieredQuerier {
	return &TieredQuerier{ts: ts, engine: NewEmbeddedQuerier(ts.raw(), log)}
}

func (q *TieredQuerier) lookback(c int, from time.Time) time.Duration {
	res := tierLevels[c]
	if r := q.ts.resolutionAt(from, c); r > res {
		res = r
	}
	return embeddedLookback + res
}

// Instant implements Querier.
func (q *TieredQuerier) Instant(ctx context.Context, query string, at time.Time) ([]Result, error) {
	opts := promql.NewPrometheusQueryOpts(false, q.lookback(0, at), nil)
	qry, err := q.engine.engine.NewInstantQuery(ctx, q.ts.queryable(0), opts, query, at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: query %q: %w", query, err)
	}
	defer qry.Close()
	return q.engine.exec(ctx, qry, query)
}

// Range implements Querier.
func (q *TieredQuerier) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Result, error) {
	if step <= 0 {
		return nil, fmt.Errorf("telemetry: query %q: step must be positive", query)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("telemetry: query %q: end %s is before start %s", query, end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	if n := end.Sub(start) / step; n > 11000 {
		return nil, fmt.Errorf("telemetry: query %q: %d points per series is over the 11000 limit; use a coarser step", query, n)
	}
	c := max(q.ts.levelFor(end.Sub(start)), levelForStep(step))
	opts := promql.NewPrometheusQueryOpts(false, q.lookback(c, start), nil)
	qry, err := q.engine.engine.NewRangeQuery(ctx, q.ts.queryable(c), opts, query, start, end, step)
	if err != nil {
		return nil, fmt.Errorf("telemetry: query %q: %w", query, err)
	}
	defer qry.Close()
	return q.engine.exec(ctx, qry, query)
}

// TierStats describes one tier of the embedded store.
type TierStats struct {
	Name       string        // "raw", "1m" or "1h"
	Resolution time.Duration // 0 for raw (the scrape interval)
	Retention  time.Duration
	Series     uint64    // series in the in-memory head; in the newest block when the head is empty (the hourly tier's, between hours)
	DiskBytes  int64     // bytes under the tier's directory
	Oldest     time.Time // oldest sample held; zero when empty
	Newest     time.Time // newest sample held; zero when empty
	// Watermark is the end of the last interval aggregated into this tier
	// (zero for raw, or before the first aggregation).
	Watermark time.Time
	// Lag is how far the watermark trails the wall clock.
	Lag time.Duration
}

// StorageStats describes the embedded store: its tiers and the ingest rate.
type StorageStats struct {
	Tiers []TierStats
	// SamplesPerSecond is the raw ingest rate over the last aggregated
	// minutes.
	SamplesPerSecond float64
	// Downsampled counts the aggregate samples the downsampler has written
	// since start.
	Downsampled int64
	// LastError is the downsampler's last failure, "" when healthy.
	LastError string
	// Ingest is the scraper's and DCGM collector's work and back-pressure.
	Ingest IngestStats
}

// ErrNoTiers is returned by Storage outside the embedded mode.
var ErrNoTiers = errors.New("telemetry: no embedded storage in remote mode")

func (ts *tierSet) stats() StorageStats {
	now := ts.now()
	var out StorageStats
	for _, t := range ts.tiers {
		st := TierStats{Name: t.name, Resolution: t.res(), Retention: t.retention, Series: t.db.Head().NumSeries(), DiskBytes: dirSize(t.dir)}
		mint, maxt := int64(math.MaxInt64), int64(math.MinInt64)
		var newest tsdb.BlockMeta
		for _, b := range t.db.Blocks() {
			mint = min(mint, b.Meta().MinTime)
			maxt = max(maxt, b.Meta().MaxTime-1)
			// Of two blocks of the newest hour, the out-of-order one holds
			// only the few series that came late.
			if m := b.Meta(); m.MaxTime > newest.MaxTime || m.MaxTime == newest.MaxTime && m.Stats.NumSeries > newest.Stats.NumSeries {
				newest = m
			}
		}
		if st.Series == 0 {
			// The hourly tier's head is empty between hours (see
			// flushHourHead): its newest block holds the series written.
			st.Series = newest.Stats.NumSeries
		}
		if h := t.db.Head(); h.NumSeries() > 0 && h.MinTime() != math.MaxInt64 {
			mint = min(mint, h.MinTime())
			maxt = max(maxt, h.MaxTime())
		}
		if mint != math.MaxInt64 {
			st.Oldest, st.Newest = msTime(mint), msTime(maxt)
		}
		if t.level > 0 {
			if wm := ts.ds.watermark(t.level); wm > math.MinInt64 {
				st.Watermark = msTime(wm)
				st.Lag = now.Sub(st.Watermark)
			}
		}
		out.Tiers = append(out.Tiers, st)
	}
	out.SamplesPerSecond, out.Downsampled, out.LastError = ts.ds.rates()
	return out
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// resetDirs removes the tier directories under base (demo data).
func resetDirs(base string) error {
	for _, d := range tierDirs(base) {
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("telemetry: reset %s: %w", d, err)
		}
	}
	return nil
}
