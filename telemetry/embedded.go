package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/casebook/casebook/metrics"
)

// Limits of the embedded PromQL engine.
const (
	// embeddedMaxSamples bounds the samples one query may hold in memory
	// (Prometheus' default is 50 million; a console needs far fewer).
	embeddedMaxSamples = 20_000_000
	// embeddedQueryTimeout bounds one query's evaluation.
	embeddedQueryTimeout = 30 * time.Second
	// embeddedLookback is how far back an instant selector looks for the
	// latest sample. It covers the 1-minute back-fill resolution with room
	// for one missed step; live series that vanish end at their staleness
	// marker, not after the lookback.
	embeddedLookback = 3 * time.Minute
)

// EmbeddedQuerier evaluates PromQL on a Prometheus TSDB in this process.
type EmbeddedQuerier struct {
	db     storage.Queryable
	engine *promql.Engine
}

// NewEmbeddedQuerier returns a Querier over db with Casebook's engine limits.
func NewEmbeddedQuerier(db storage.Queryable, log *slog.Logger) *EmbeddedQuerier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eng := promql.NewEngine(promql.EngineOpts{
		Logger:               log,
		MaxSamples:           embeddedMaxSamples,
		Timeout:              embeddedQueryTimeout,
		LookbackDelta:        embeddedLookback,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		NoStepSubqueryIntervalFn: func(int64) int64 {
			return time.Minute.Milliseconds()
		},
	})
	return &EmbeddedQuerier{db: db, engine: eng}
}

// openTSDB opens (or creates) the TSDB in dir. withWAL=false skips the
// write-ahead log, for data that is regenerated on every start.
func openTSDB(dir string, withWAL bool, log *slog.Logger) (*tsdb.DB, error) {
	opts := tsdb.DefaultOptions()
	opts.RetentionDuration = (15 * 24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = (24 * time.Hour).Milliseconds()
	if !withWAL {
		opts.WALSegmentSize = -1
	}
	// The TSDB reports every block it writes at info level (a week of
	// back-fill is over a hundred lines); Casebook's log keeps its warnings.
	tlog := slog.New(minLevel{h: log.Handler(), min: slog.LevelWarn}).With("component", "tsdb")
	db, err := tsdb.Open(dir, tlog, nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("telemetry: open tsdb %s: %w", dir, err)
	}
	return db, nil
}

// Instant implements Querier.
func (q *EmbeddedQuerier) Instant(ctx context.Context, query string, at time.Time) ([]Result, error) {
	qry, err := q.engine.NewInstantQuery(ctx, q.db, nil, query, at)
	if err != nil {
		return nil, fmt.Errorf("telemetry: query %q: %w", query, err)
	}
	defer qry.Close()
	return q.exec(ctx, qry, query)
}

// Range implements Querier.
func (q *EmbeddedQuerier) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Result, error) {
	if step <= 0 {
		return nil, fmt.Errorf("telemetry: query %q: step must be positive", query)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("telemetry: query %q: end %s is before start %s", query, end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	if n := end.Sub(start) / step; n > 11000 {
		return nil, fmt.Errorf("telemetry: query %q: %d points per series is over the 11000 limit; use a coarser step", query, n)
	}
	qry, err := q.engine.NewRangeQuery(ctx, q.db, nil, query, start, end, step)
	if err != nil {
		return nil, fmt.Errorf("telemetry: query %q: %w", query, err)
	}
	defer qry.Close()
	return q.exec(ctx, qry, query)
}

func (q *EmbeddedQuerier) exec(ctx context.Context, qry promql.Query, query string) ([]Result, error) {
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("telemetry: query %q: %w", query, res.Err)
	}
	var out []Result
	switch v := res.Value.(type) {
	case promql.Vector:
		if err := checkSeries(query, len(v)); err != nil {
			return nil, err
		}
	case promql.Matrix:
		if err := checkSeries(query, len(v)); err != nil {
			return nil, err
		}
	}
	switch v := res.Value.(type) {
	case promql.Scalar:
		out = append(out, Result{Labels: map[string]string{}, Samples: []metrics.Sample{{T: msTime(v.T), V: v.V}}})
	case promql.Vector:
		for _, s := range v {
			if s.H != nil {
				continue
			}
			out = append(out, Result{Labels: promLabelMap(s.Metric), Samples: []metrics.Sample{{T: msTime(s.T), V: s.F}}})
		}
	case promql.Matrix:
		for _, s := range v {
			r := Result{Labels: promLabelMap(s.Metric), Samples: make([]metrics.Sample, 0, len(s.Floats))}
			for _, p := range s.Floats {
				r.Samples = append(r.Samples, metrics.Sample{T: msTime(p.T), V: p.F})
			}
			out = append(out, r)
		}
	case nil:
	default:
		return nil, fmt.Errorf("telemetry: query %q: unexpected result type %s", query, res.Value.Type())
	}
	sortResults(out)
	return out, nil
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func promLabelMap(ls labels.Labels) map[string]string {
	out := make(map[string]string, ls.Len())
	ls.Range(func(l labels.Label) { out[l.Name] = l.Value })
	return out
}

// minLevel drops records below min, to quiet a chatty library.
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}

func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h: m.h.WithAttrs(as), min: m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h: m.h.WithGroup(name), min: m.min}
}
