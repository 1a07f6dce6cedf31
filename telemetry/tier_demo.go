package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// downsampleTick is how often the downsampler looks for complete
// intervals.
const downsampleTick = 10 * time.Second

// startDownsampler runs the downsampler in the background until Close.
func (t *Telemetry) startDownsampler(ctx context.Context) {
	if t.tiers == nil {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.tiers.ds.run(ctx, downsampleTick)
	}()
}

// Storage describes the embedded tiers: series, ingest rate, disk use,
// oldest sample and downsampler lag. It fails in remote mode with
// ErrNoTiers.
func (t *Telemetry) Storage() (StorageStats, error) {
	if t.tiers == nil {
		return StorageStats{}, ErrNoTiers
	}
	st := t.tiers.stats()
	if t.meter != nil {
		st.Ingest = t.meter.stats()
	}
	return st, nil
}

// backfillTarget returns where the demo back-fill of history up to `to`
// goes: samples older than the raw retention straight into the 1-minute
// tier (they are one-minute data already), the rest into the raw tier.
//
// flush is called as the back-fill goes, with every sample before
// `through` appended: it aggregates that history into the coarser tiers
// while it is still in the TSDB heads, in memory, then writes the heads to
// blocks (see compactHeads). Aggregating after the back-fill instead would
// read the whole week back from the blocks through mmap, which leaves the
// 1-minute tier's files resident: 6 GB at 500 engines.
//
// done records that the 1-minute tier is complete up to the cut, so the
// downsampler starts there, and lets the tier compact again.
func (t *Telemetry) backfillTarget(to time.Time) (app storage.Appendable, flush func(ctx context.Context, through int64) error, done func() error) {
	if t.tiers == nil {
		return t.db, func(ctx context.Context, _ int64) error { return t.compactHeads(ctx) }, func() error { return nil }
	}
	ds := t.tiers.ds
	cut := floorTo(to.Add(-t.tiers.tiers[0].retention).UnixMilli(), tierLevels[1].Milliseconds())
	m1 := t.tiers.tiers[1].db
	// As for the raw tier, compaction waits until the back-fill is in.
	m1.DisableCompactions()
	s := &splitAppendable{raw: t.tiers.appendable(0), tier: t.tiers.appendable(1), cut: cut}
	flush = func(ctx context.Context, through int64) error {
		// Before the cut the back-fill writes the 1-minute tier itself.
		if m := floorTo(min(through-1, cut), tierLevels[1].Milliseconds()); m > ds.watermark(1) {
			if err := ds.setWatermark(1, m); err != nil {
				return err
			}
		}
		if err := ds.catchUpUntil(ctx, through-1); err != nil {
			return err
		}
		return t.compactHeads(ctx)
	}
	return s, flush, func() error {
		m1.EnableCompactions()
		if ds.watermark(1) >= cut {
			return nil
		}
		return ds.setWatermark(1, cut)
	}
}

// compactHeads writes what the heads of the tiers the back-fill fills hold
// beyond their last chunk range to blocks on disk, as the TSDB's own
// background compaction would if the back-fill did not switch it off.
func (t *Telemetry) compactHeads(ctx context.Context) error {
	dbs := []*tsdb.DB{t.db}
	if t.tiers != nil {
		dbs = []*tsdb.DB{t.tiers.tiers[0].db, t.tiers.tiers[1].db}
	}
	for _, db := range dbs {
		if err := db.Compact(ctx); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	return nil
}

// splitAppendable routes samples by time: up to cut into the 1-minute
// tier, as one-sample aggregates (a gauge's mean, minimum and maximum are
// the sample, its count is 1; a counter keeps its value), after cut into
// the raw tier. Its series references are its own; it serves one appender
// at a time, as the back-fill uses it.
type splitAppendable struct {
	raw, tier storage.Appendable
	cut       int64
	series    []splitSeries // reference i+1 is series[i]
}

type splitSeries struct {
	lset    labels.Labels
	counter bool
	out     gaugeSeries
	rawRef  storage.SeriesRef
	tierRef [4]storage.SeriesRef
}

// Appender implements storage.Appendable.
func (s *splitAppendable) Appender(ctx context.Context) storage.Appender {
	return &splitAppender{Appender: s.raw.Appender(ctx), s: s, ctx: ctx}
}

// splitAppender appends to both tiers; methods other than Append, Commit
// and Rollback go to the raw tier's appender.
type splitAppender struct {
	storage.Appender // the raw tier's
	s                *splitAppendable
	ctx              context.Context
	tier             storage.Appender
}

// Append implements storage.Appender.
func (a *splitAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if ref == 0 || int(ref) > len(a.s.series) {
		a.s.series = append(a.s.series, splitSeries{lset: l, counter: isCounter(l.Get(labels.MetricName))})
		ref = storage.SeriesRef(len(a.s.series))
	}
	e := &a.s.series[ref-1]
	if t > a.s.cut {
		// Past the cut a series goes only to the raw tier: its aggregate
		// series' labels can go (at 500 engines, 165,000 series hold
		// three extra label sets each).
		e.out = gaugeSeries{}
		r, err := a.Appender.Append(e.rawRef, e.lset, t, v)
		if err != nil {
			return ref, err
		}
		e.rawRef = r
		return ref, nil
	}
	if !usable(v) {
		return ref, nil
	}
	if a.tier == nil {
		a.tier = a.s.tier.Appender(a.ctx)
	}
	if e.counter {
		r, err := a.tier.Append(e.tierRef[0], e.lset, t, v)
		e.tierRef[0] = r
		return ref, err
	}
	if e.out.mean.IsEmpty() {
		e.out = newGaugeSeries(e.lset, 1)
	}
	for i, x := range [4]struct {
		l labels.Labels
		v float64
	}{{e.out.mean, v}, {e.out.min, v}, {e.out.max, v}, {e.out.count, 1}} {
		r, err := a.tier.Append(e.tierRef[i], x.l, t, x.v)
		if err != nil {
			return ref, err
		}
		e.tierRef[i] = r
	}
	return ref, nil
}

// Commit implements storage.Appender.
func (a *splitAppender) Commit() error {
	err := a.Appender.Commit()
	if a.tier != nil {
		err = errors.Join(err, a.tier.Commit())
	}
	return err
}

// Rollback implements storage.Appender.
func (a *splitAppender) Rollback() error {
	err := a.Appender.Rollback()
	if a.tier != nil {
		err = errors.Join(err, a.tier.Rollback())
	}
	return err
}
