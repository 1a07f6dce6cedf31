package metrics

import "time"

// Fleet is every scope's snapshot at one instant: what the overview
// classifies and sorts. Snapshots are sorted by model, the model scope
// before its instances.
type Fleet struct {
	At        time.Time
	Snapshots []Snapshot
	// GPUs are the GPUs joined to each instance scope; empty when GPU
	// series do not join the engines.
	GPUs map[Scope]int
}
