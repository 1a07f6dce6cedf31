package views

// CoverageView says which catalog metrics a source (or one scope of it)
// can compute, which it cannot and why, and how its GPU series join the
// engines.
type CoverageView struct {
	// Join is one sentence on the GPU join; JoinOK is false when GPUs did
	// not join (the whole source, or this scope).
	Join   string
	JoinOK bool
	// JoinLabels names the labels that joined, e.g. "exported_pod and
	// exported_namespace (detected)"; empty when nothing joined.
	JoinLabels string
	// Joined lists engine instances with their GPU series counts.
	Joined   []JoinRow
	Missing  []CoverageRow
	Resolved []CoverageRow
	// Profiling is one sentence when the GPUs report no DCGM profiling
	// fields (dcgm-exporter's default counters): what is missing and what
	// stands in for it; empty otherwise.
	Profiling string
	// Gaps lists the diagnosis rules that read a missing metric.
	Gaps []GapRow
}

// GapRow is one diagnosis rule that cannot read everything it reads
// elsewhere.
type GapRow struct {
	Cause, Title string
	Metrics      string // the missing metrics it reads, as labels
}

// JoinRow is one engine instance and the GPU series joined to it.
type JoinRow struct {
	Instance string
	GPUs     int
}

// CoverageRow is one catalog metric: the series it reads (or lacks) and
// why.
type CoverageRow struct {
	Metric, Label string
	Series        string // the series used, or those missing
	Note          string // the source generation used, or why it is missing
}

// Shown reports whether a scope page has anything to say: GPUs that did
// not join, or metrics that are missing.
func (v *CoverageView) Shown() bool {
	return v != nil && (!v.JoinOK || len(v.Missing) > 0 || v.Profiling != "")
}
