package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/casebook/casebook/metrics"
)

// RemoteOptions configures a Querier against a Prometheus-compatible API
// (Prometheus, Thanos, Mimir, VictoriaMetrics).
type RemoteOptions struct {
	URL string
	// Timeout bounds one query, on the server (the timeout parameter) and
	// on the client. Default 30s.
	Timeout time.Duration
	// Client is the HTTP client; nil uses one with the timeout above.
	Client *http.Client
	Logger *slog.Logger
}

// RemoteQuerier evaluates PromQL on a remote Prometheus-compatible server.
type RemoteQuerier struct {
	api     v1.API
	url     string
	timeout time.Duration
	log     *slog.Logger
	status  *statusBoard // may be nil

	mu     sync.Mutex
	warned map[string]bool
}

// maxRememberedWarnings caps the set of warnings already logged.
const maxRememberedWarnings = 256

// NewRemoteQuerier returns a Querier for the server at opts.URL. It does not
// contact the server; the first query does.
func NewRemoteQuerier(opts RemoteOptions) (*RemoteQuerier, error) {
	if opts.URL == "" {
		return nil, errors.New("telemetry: remote querier: URL is empty")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: opts.Timeout + 5*time.Second}
	}
	c, err := api.NewClient(api.Config{Address: opts.URL, Client: client})
	if err != nil {
		return nil, fmt.Errorf("telemetry: remote querier %s: %w", opts.URL, err)
	}
	return &RemoteQuerier{
		api:     v1.NewAPI(c),
		url:     opts.URL,
		timeout: opts.Timeout,
		log:     opts.Logger,
		warned:  make(map[string]bool),
	}, nil
}

func (q *RemoteQuerier) sourceName() string { return "prometheus " + q.url }

// Instant implements Querier.
func (q *RemoteQuerier) Instant(ctx context.Context, query string, at time.Time) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	v, warnings, infos, err := q.api.Query(ctx, query, at, v1.WithTimeout(q.timeout))
	return q.finish(query, v, warnings, infos, err)
}

// Range implements Querier.
func (q *RemoteQuerier) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	v, warnings, infos, err := q.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(q.timeout))
	return q.finish(query, v, warnings, infos, err)
}

func (q *RemoteQuerier) finish(query string, v model.Value, warnings v1.Warnings, infos v1.Infos, err error) ([]Result, error) {
	q.logOnce(query, warnings, "warning")
	q.logOnce(query, infos, "info")
	if err != nil {
		// A query the server rejects (bad data, execution) says nothing
		// about reachability; transport and server failures do.
		var apiErr *v1.Error
		if errors.Is(err, context.Canceled) {
			// The caller went away; that says nothing about the server.
		} else if !errors.As(err, &apiErr) || apiErr.Type == v1.ErrServer || apiErr.Type == v1.ErrClient || apiErr.Type == v1.ErrBadResponse {
			q.markFailing(err)
		}
		return nil, fmt.Errorf("telemetry: prometheus %s: query %q: %w", q.url, query, err)
	}
	q.markOK()
	switch val := v.(type) {
	case model.Vector:
		if err := checkSeries(query, len(val)); err != nil {
			return nil, err
		}
	case model.Matrix:
		if err := checkSeries(query, len(val)); err != nil {
			return nil, err
		}
	}
	return convertValue(v)
}

func (q *RemoteQuerier) markOK() {
	if q.status != nil {
		q.status.ok(q.sourceName())
	}
}

func (q *RemoteQuerier) markFailing(err error) {
	if q.status != nil {
		q.status.fail(q.sourceName(), err)
	}
}

func (q *RemoteQuerier) logOnce(query string, msgs []string, kind string) {
	if len(msgs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range msgs {
		if q.warned[m] {
			continue
		}
		if len(q.warned) >= maxRememberedWarnings {
			return
		}
		q.warned[m] = true
		q.log.Warn("prometheus query "+kind, "url", q.url, "query", query, kind, m)
	}
}

// MaxSeriesPerQuery bounds the series one query may return, so that a
// query matching a whole fleet cannot exhaust the console's memory.
const MaxSeriesPerQuery = 10000

// ErrTooManySeries is returned for a query answering more than
// MaxSeriesPerQuery series.
var ErrTooManySeries = errors.New("telemetry: too many series")

func checkSeries(query string, n int) error {
	if n > MaxSeriesPerQuery {
		return fmt.Errorf("%w: query %q returned %d series; the limit is %d", ErrTooManySeries, query, n, MaxSeriesPerQuery)
	}
	return nil
}

// convertValue turns a client_golang value into results sorted by labels.
func convertValue(v model.Value) ([]Result, error) {
	var out []Result
	switch val := v.(type) {
	case nil:
		return nil, nil
	case *model.Scalar:
		out = append(out, Result{Labels: map[string]string{}, Samples: []metrics.Sample{{T: val.Timestamp.Time().UTC(), V: float64(val.Value)}}})
	case model.Vector:
		for _, s := range val {
			if s.Histogram != nil {
				continue
			}
			out = append(out, Result{Labels: labelMap(s.Metric), Samples: []metrics.Sample{{T: s.Timestamp.Time().UTC(), V: float64(s.Value)}}})
		}
	case model.Matrix:
		for _, ss := range val {
			r := Result{Labels: labelMap(ss.Metric), Samples: make([]metrics.Sample, 0, len(ss.Values))}
			for _, p := range ss.Values {
				r.Samples = append(r.Samples, metrics.Sample{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
			}
			out = append(out, r)
		}
	default:
		return nil, fmt.Errorf("telemetry: unexpected result type %s", v.Type())
	}
	sortResults(out)
	return out, nil
}

func labelMap(m model.Metric) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

func sortResults(rs []Result) {
	// One key per series, not two per comparison: a fleet-wide answer
	// holds thousands of series.
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = labelKey(r.Labels)
	}
	sort.Sort(byKey{rs, keys})
}

// byKey sorts results by their precomputed label keys.
type byKey struct {
	rs   []Result
	keys []string
}

func (b byKey) Len() int           { return len(b.rs) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.rs[i], b.rs[j] = b.rs[j], b.rs[i]
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
}

func labelKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, 64)
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, m[k]...)
		b = append(b, 0)
	}
	return string(b)
}
