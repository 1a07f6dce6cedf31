package metrics

import "time"

// Sample is one timestamped value.
type Sample struct {
	T time.Time
	V float64
}

// Series is one catalog metric over time for one scope.
type Series struct {
	Metric  string
	Scope   Scope
	Samples []Sample
}

// Range is a half-open query window with a resolution.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// SourceStatus reports the health of one metric source (a scrape target,
// a remote Prometheus, DCGM) so that a panel can say what is wrong and since
// when instead of showing an empty chart.
type SourceStatus struct {
	Name  string    // e.g. "prometheus http://prom:9090" or "target http://10.0.0.1:8000/metrics"
	OK    bool      // the last attempt succeeded
	Err   string    // the last error, when not OK
	Since time.Time // when the current state (OK or failing) began
}
