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
