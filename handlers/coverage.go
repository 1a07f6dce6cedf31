package handlers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/views"
)

// CoverageReporter says which catalog metrics the source computes for a
// scope (the zero scope: the whole source) and how its GPUs join the
// engines. *telemetry.Telemetry implements it.
type CoverageReporter interface {
	Coverage(ctx context.Context, scope metrics.Scope) (telemetry.Coverage, error)
}

// coverageView reads the coverage of a scope when the telemetry reports
// it; nil when it does not or the source cannot answer (the page then
// simply says nothing about it).
func (d *Deps) coverageView(ctx context.Context, scope metrics.Scope) *views.CoverageView {
	cr, ok := d.Telemetry.(CoverageReporter)
	if !ok {
		return nil
	}
	c, err := cr.Coverage(ctx, scope)
	if err != nil {
		d.Logger.WarnContext(ctx, "coverage unavailable", "scope", scope.String(), "err", err)
		return nil
	}
	return CoverageView(c)
}

// CoverageView shapes a coverage report for the pages.
func CoverageView(c telemetry.Coverage) *views.CoverageView {
	v := &views.CoverageView{Join: c.Join.Summary(), JoinOK: c.GPUsJoined && c.Join.InstanceLabel != ""}
	if c.Scope.Model == "" {
		v.JoinOK = c.Join.OK()
	} else if !v.JoinOK {
		v.Join = fmt.Sprintf("the GPU series of %s did not join its engine. %s", c.Scope, c.Join.Summary())
	}
	if c.Join.InstanceLabel != "" {
		v.JoinLabels = c.Join.InstanceLabel
		if c.Join.NamespaceLabel != "" {
			v.JoinLabels += " and " + c.Join.NamespaceLabel
		}
		if c.Join.Detected {
			v.JoinLabels += " (detected)"
		} else {
			v.JoinLabels += " (configured)"
		}
	}
	for inst, n := range c.Join.Joined {
		v.Joined = append(v.Joined, views.JoinRow{Instance: inst, GPUs: n})
	}
	sort.Slice(v.Joined, func(i, j int) bool { return v.Joined[i].Instance < v.Joined[j].Instance })
	for _, r := range c.Resolutions {
		row := views.CoverageRow{Metric: r.ID, Label: views.MetricLabel(r.ID)}
		if r.OK {
			row.Series, row.Note = strings.Join(r.Using, " + "), r.Note
			v.Resolved = append(v.Resolved, row)
			continue
		}
		row.Series, row.Note = strings.Join(r.Missing, " + "), r.Why
		v.Missing = append(v.Missing, row)
	}
	v.Profiling = profilingSentence(c)
	var missing []string
	for _, r := range c.Missing() {
		missing = append(missing, r.ID)
	}
	for _, g := range diagnose.Gaps(missing) {
		labels := make([]string, len(g.Missing))
		for i, id := range g.Missing {
			labels[i] = views.MetricLabel(id)
		}
		v.Gaps = append(v.Gaps, views.GapRow{Cause: g.Cause, Title: views.CauseTitle(g.Cause), Metrics: strings.Join(labels, ", ")})
	}
	return v
}

// profilingSentence says, when the GPUs report no DCGM profiling field
// (dcgm-exporter's default counter file), which metrics that leaves out
// and what SM activity is read from instead; empty otherwise.
func profilingSentence(c telemetry.Coverage) string {
	var absent []string
	for _, r := range c.Missing() {
		// Missing for that reason, not because the GPUs did not join.
		if len(r.Missing) > 0 && strings.HasPrefix(r.Missing[0], "DCGM_FI_PROF_") && strings.Contains(r.Why, "default-counters.csv") {
			absent = append(absent, views.MetricLabel(r.ID))
		}
	}
	if len(absent) == 0 {
		return ""
	}
	s := fmt.Sprintf("DCGM profiling fields (DCGM_FI_PROF_*) are absent: the GPUs' dcgm-exporter runs its default counter file (default-counters.csv), so %s %s missing.",
		joinWords(absent), map[bool]string{true: "is", false: "are"}[len(absent) == 1])
	for _, r := range c.Resolved() {
		if r.ID == metrics.SMUtil && len(r.Using) > 0 && !strings.HasPrefix(r.Using[0], "DCGM_FI_PROF_") {
			s += fmt.Sprintf(" %s is read from %s, the share of time a kernel ran, not how many SMs it kept busy.", views.MetricLabel(r.ID), r.Using[0])
		}
	}
	return s
}

// joinWords joins "a", "b" and "c" as "a, b and c".
func joinWords(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}
