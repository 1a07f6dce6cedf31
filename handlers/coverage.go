package handlers

import (
	"context"
	"sort"
	"strings"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
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
	return CoverageView(ctx, c)
}

// CoverageView shapes a coverage report for the pages, in ctx's
// language; the source's own reasons (why a series is missing, an
// engine's problem) are shown as the source words them.
func CoverageView(ctx context.Context, c telemetry.Coverage) *views.CoverageView {
	l := i18n.From(ctx)
	v := &views.CoverageView{Join: joinSummary(l, c.Join), JoinOK: c.GPUsJoined && c.Join.InstanceLabel != ""}
	if c.Scope.Model == "" {
		v.JoinOK = c.Join.OK()
	} else if !v.JoinOK {
		v.Join = l.T("coverage.scope_unjoined", c.Scope.String(), v.Join)
	}
	if c.Join.InstanceLabel != "" {
		v.JoinLabels = joinLabels(l, c.Join)
		if c.Join.Detected {
			v.JoinLabels = l.T("coverage.labels_detected", v.JoinLabels)
		} else {
			v.JoinLabels = l.T("coverage.labels_configured", v.JoinLabels)
		}
	}
	for inst, n := range c.Join.Joined {
		v.Joined = append(v.Joined, views.JoinRow{Instance: inst, GPUs: n})
	}
	sort.Slice(v.Joined, func(i, j int) bool { return v.Joined[i].Instance < v.Joined[j].Instance })
	v.Engine, v.EngineHow, v.EngineProblem = engineWords(l, c.Engine)
	for _, se := range c.Engines {
		name, how, problem := engineWords(l, se.Engine)
		v.Engines = append(v.Engines, views.EngineRow{Scope: se.Scope.String(), Engine: name, How: how, Problem: problem})
	}
	for _, r := range c.Resolutions {
		row := views.CoverageRow{Metric: r.ID, Label: views.MetricLabelIn(ctx, r.ID)}
		if r.OK {
			row.Series, row.Note = strings.Join(r.Using, " + "), r.Note
			v.Resolved = append(v.Resolved, row)
			continue
		}
		row.Series, row.Note = strings.Join(r.Missing, " + "), r.Why
		v.Missing = append(v.Missing, row)
	}
	v.Profiling = profilingSentence(ctx, c)
	var missing []string
	for _, r := range c.Missing() {
		missing = append(missing, r.ID)
	}
	for _, g := range diagnose.Gaps(missing) {
		labels := make([]string, len(g.Missing))
		for i, id := range g.Missing {
			labels[i] = views.MetricLabelIn(ctx, id)
		}
		v.Gaps = append(v.Gaps, views.GapRow{Cause: g.Cause, Title: views.CauseTitleIn(ctx, g.Cause), Metrics: strings.Join(labels, l.T("list.sep"))})
	}
	return v
}

// engineWords names a scope's engine, how it was decided and what is
// wrong with it; all empty for the whole source.
func engineWords(l *i18n.Locale, es telemetry.EngineStatus) (name, how, problem string) {
	if es.Engine == "" && es.Problem == "" {
		return "", "", ""
	}
	name, problem = es.Name(), es.Problem
	switch {
	case es.Overridden:
		how = l.T("coverage.engine_set")
	case es.Engine != "":
		if spec, ok := metrics.LookupEngine(es.Engine); ok {
			how = l.T("coverage.engine_detected", joinWords(l, spec.Prefixes))
		}
	}
	return name, how, problem
}

// profilingSentence says, when the GPUs report no DCGM profiling field
// (dcgm-exporter's default counter file), which metrics that leaves out
// and what SM activity is read from instead; empty otherwise.
func profilingSentence(ctx context.Context, c telemetry.Coverage) string {
	var absent []string
	for _, r := range c.Missing() {
		// Missing for that reason, not because the GPUs did not join.
		if len(r.Missing) > 0 && strings.HasPrefix(r.Missing[0], "DCGM_FI_PROF_") && strings.Contains(r.Why, "default-counters.csv") {
			absent = append(absent, views.MetricLabelIn(ctx, r.ID))
		}
	}
	if len(absent) == 0 {
		return ""
	}
	l := i18n.From(ctx)
	s := l.T("coverage.no_profiling", len(absent), joinWords(l, absent))
	for _, r := range c.Resolved() {
		if r.ID == metrics.SMUtil && len(r.Using) > 0 && !strings.HasPrefix(r.Using[0], "DCGM_FI_PROF_") {
			s += l.T("coverage.sm_from", views.MetricLabelIn(ctx, r.ID), r.Using[0])
		}
	}
	return s
}

// joinWords joins "a", "b" and "c" as "a, b and c" ("a、b 和 c").
func joinWords(l *i18n.Locale, w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return l.T("words.and", strings.Join(w[:len(w)-1], l.T("list.sep")), w[len(w)-1])
}

// joinLabels names the GPU labels of a join: "exported_pod and
// exported_namespace".
func joinLabels(l *i18n.Locale, j telemetry.GPUJoin) string {
	if j.NamespaceLabel == "" {
		return j.InstanceLabel
	}
	return l.T("words.and", j.InstanceLabel, j.NamespaceLabel)
}

// joinSummary is telemetry's GPUJoin.Summary in l's language; Why, the
// reason nothing joined, stays in the source's words.
func joinSummary(l *i18n.Locale, j telemetry.GPUJoin) string {
	switch {
	case j.InstanceLabel == "":
		return l.T("coverage.join_none", j.Why)
	case len(j.Unjoined) > 0:
		return l.T("coverage.join_some", joinLabels(l, j), len(j.Unjoined), strings.Join(j.Unjoined, ", "))
	}
	return l.T("coverage.join_all", joinLabels(l, j))
}
