package telemetry

import (
	"context"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Result is one series of a query answer: its labels and its samples, oldest
// first. An instant query answers one sample per series.
type Result struct {
	Labels  map[string]string
	Samples []metrics.Sample
}

// Querier evaluates PromQL. Both implementations, the remote Prometheus API
// and the embedded TSDB, answer the same expressions the same way, so the
// catalog's PromQL runs unchanged in every mode.
type Querier interface {
	// Instant evaluates query at one instant. Range-vector results are an
	// error: the catalog only asks for instant vectors and scalars.
	Instant(ctx context.Context, query string, at time.Time) ([]Result, error)
	// Range evaluates query at every step from start to end inclusive.
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]Result, error)
}
