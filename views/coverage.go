package views

import (
	"context"
	"strings"
)

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
	// Engine is the scope's engine by name ("SGLang"), EngineHow how it
	// was decided ("detected from its sglang: series", "set per target"),
	// and EngineProblem what keeps its engine metrics from being read
	// (two engines under one scope, none known, no histograms).
	Engine, EngineHow, EngineProblem string
	// Engines lists every scope's engine (the storage page).
	Engines []EngineRow
	// Profiling is one sentence when the GPUs report no DCGM profiling
	// fields (dcgm-exporter's default counters): what is missing and what
	// stands in for it; empty otherwise.
	Profiling string
	// Gaps lists the diagnosis rules that read a missing metric.
	Gaps []GapRow
}

// EngineRow is one scope's engine on the storage page.
type EngineRow struct {
	Scope, Engine, How, Problem string
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

// CoverageFoldRows is how many engine or join rows the storage page lists
// openly; a fleet's longer lists are folded behind a one-line summary, so
// the page stays readable at hundreds of engines.
const CoverageFoldRows = 12

// EngineProblems returns the engine rows with a problem: they stay in
// view when the rest is folded.
func (v *CoverageView) EngineProblems() []EngineRow {
	var out []EngineRow
	for _, e := range v.Engines {
		if e.Problem != "" {
			out = append(out, e)
		}
	}
	return out
}

// EnginesSummary counts the scopes per engine, e.g. "144 scopes: 128
// vLLM, 16 SGLang; 1 with a problem (listed above)".
func (v *CoverageView) EnginesSummary(ctx context.Context) string {
	count := map[string]int{}
	var order []string
	for _, e := range v.Engines {
		if count[e.Engine] == 0 {
			order = append(order, e.Engine)
		}
		count[e.Engine]++
	}
	parts := make([]string, len(order))
	for i, name := range order {
		parts[i] = T(ctx, "coverage.engine_count", count[name], name)
	}
	s := T(ctx, "coverage.engines_summary", len(v.Engines), strings.Join(parts, T(ctx, "list.sep")))
	if n := len(v.EngineProblems()); n > 0 {
		s += T(ctx, "coverage.engines_problems", n)
	}
	return s
}

// JoinedSummary counts the joined instances and their GPU series.
func (v *CoverageView) JoinedSummary(ctx context.Context) string {
	gpus := 0
	for _, j := range v.Joined {
		gpus += j.GPUs
	}
	return T(ctx, "coverage.joined_summary", len(v.Joined), gpus, v.JoinLabels)
}

// Shown reports whether a scope page has anything to say: GPUs that did
// not join, or metrics that are missing.
func (v *CoverageView) Shown() bool {
	return v != nil && (!v.JoinOK || len(v.Missing) > 0 || v.Profiling != "")
}
