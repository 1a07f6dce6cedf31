package telemetry

import (
	"context"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/promrules"
)

// In remote mode, chart ranges longer than a day read the recording rules
// that `casebook rules` prints (scope:<id>:avg1m up to 30 days, avg1h
// beyond) instead of re-evaluating the raw expressions over weeks of
// per-scrape samples: the same tiers as the embedded store, kept by the
// user's Prometheus, Thanos, Mimir or VictoriaMetrics.

// recordedTier returns the recorded tier a remote range reads ("1m" or
// "1h"), or "" when the raw expressions serve it: a span within the raw
// retention, or a step finer than the tier. raw and minute are the
// configured retentions of the remote's raw samples and of its 1m
// records; zero means the defaults.
func recordedTier(span, step, raw, minute time.Duration) string {
	if raw <= 0 {
		raw = DefaultRawRetention
	}
	if minute <= 0 {
		minute = DefaultMinuteRetention
	}
	switch {
	case span <= raw:
		return ""
	case span <= minute && step >= time.Minute:
		return "1m"
	case span > minute && step >= time.Hour:
		return "1h"
	}
	return ""
}

// noRecordsFor is how long a metric whose records came back empty is read
// from the raw expression before the records are tried again (the rules
// may be installed meanwhile).
const noRecordsFor = 10 * time.Minute

// recordAbsence remembers which metrics' records a Prometheus lacks.
type recordAbsence struct {
	mu    sync.Mutex
	until map[string]time.Time // metric id + tier -> retry time
}

func (a *recordAbsence) absent(key string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.Before(a.until[key])
}

func (a *recordAbsence) mark(key string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until == nil {
		a.until = map[string]time.Time{}
	}
	a.until[key] = now.Add(noRecordsFor)
}

// rangeRecorded reads one metric from its recorded tier. ok is false when
// the records hold nothing for the range (rules not installed, or not yet
// evaluated that far back), and the caller falls back to the expression.
func (t *Telemetry) rangeRecorded(ctx context.Context, m metrics.Metric, sel metrics.Selectors, model bool, tier string, start, end time.Time, step time.Duration) ([]metrics.Sample, bool) {
	key := m.ID + "/" + tier
	now := t.now()
	if t.noRecords.absent(key, now) {
		return nil, false
	}
	rs, err := t.querier.Range(ctx, promrules.ReadQuery(m, sel, model, tier, step), start, end, step)
	if err != nil || len(firstSeries(rs)) == 0 {
		if err != nil && ctx.Err() != nil {
			return nil, false
		}
		t.noRecords.mark(key, now)
		if err != nil {
			t.log.Debug("recorded tier unreadable; using the raw expression", "metric", m.ID, "tier", tier, "err", err)
		}
		return nil, false
	}
	return cleanSamples(m, firstSeries(rs)), true
}
