package telemetry

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Coverage says which catalog metrics a source can compute, for one scope
// or for the whole source, and how its GPUs join its engines.
type Coverage struct {
	Scope       metrics.Scope // zero for the whole source
	Resolutions []metrics.Resolution
	Join        GPUJoin
	// GPUsJoined is false when the scope's GPU series could not be joined
	// (no join label, or none of its instances named by a GPU series).
	GPUsJoined bool
	At         time.Time
	// Engine is the scope's engine and what is wrong with it, if
	// anything; zero for the whole source.
	Engine EngineStatus
	// Engines lists, for the whole source, every scope's engine.
	Engines []ScopeEngine
}

// ScopeEngine is one scope and its engine.
type ScopeEngine struct {
	Scope  metrics.Scope
	Engine EngineStatus
}

// Resolved returns the metrics the source computes.
func (c Coverage) Resolved() []metrics.Resolution { return c.filter(true) }

// Missing returns the metrics the source cannot compute, each with why.
func (c Coverage) Missing() []metrics.Resolution { return c.filter(false) }

func (c Coverage) filter(ok bool) []metrics.Resolution {
	var out []metrics.Resolution
	for _, r := range c.Resolutions {
		if r.OK == ok {
			out = append(out, r)
		}
	}
	return out
}

// SeriesSet is the set of series a source exposes, by name and by the
// label values of each name, as catalog alternatives refer to them.
type SeriesSet map[string]bool

// NewSeriesSet indexes label sets (each with __name__).
func NewSeriesSet(series []map[string]string) SeriesSet {
	s := SeriesSet{}
	for _, l := range series {
		name := l["__name__"]
		if name == "" {
			continue
		}
		s[name] = true
		for k, v := range l {
			if k != "__name__" {
				s[name+"{"+k+"="+quote(v)+"}"] = true
			}
		}
	}
	return s
}

// Has reports whether a catalog series reference is present.
func (s SeriesSet) Has(ref string) bool {
	name, label, value := metrics.SplitSeries(ref)
	if label == "" {
		return s[name]
	}
	return s[name+"{"+label+"="+quote(value)+"}"]
}

// CoverageOf computes the coverage of a source from the series it
// exposes and the GPU join; gpusJoined false marks every GPU metric
// missing because the GPUs did not join, whatever the source exports.
func CoverageOf(set SeriesSet, join GPUJoin, gpusJoined bool) Coverage {
	return CoverageFor(set, join, gpusJoined, EngineStatus{})
}

// CoverageFor is CoverageOf for one scope's engine: its metrics resolve
// through that engine's alternatives only, and an engine metric it has
// no equivalent of is missing with the engine's reason. A zero status
// resolves through every engine's alternatives (the whole source); a
// status with a problem but no engine marks every engine metric missing
// with that problem.
func CoverageFor(set SeriesSet, join GPUJoin, gpusJoined bool, es EngineStatus) Coverage {
	c := Coverage{Join: join, GPUsJoined: gpusJoined, Engine: es}
	for _, m := range metrics.Catalog {
		if es.Engine != "" || es.Problem != "" {
			m = engineOf(m, es)
		}
		r := m.Resolve(set.Has)
		if m.Source == metrics.SourceGPU && !gpusJoined && r.OK {
			r.OK, r.Using, r.Note = false, nil, ""
			r.Missing = m.Alts[0].Series
			if len(m.Alts) == 0 {
				r.Missing = nil
			}
			r.Why = "the scope's GPU series did not join its engines: " + join.Summary()
		}
		c.Resolutions = append(c.Resolutions, r)
	}
	return c
}

// labelledSeries lists the catalog's series references that select a
// label value, as name and label.
func labelledSeries() [][2]string {
	seen := map[[2]string]bool{}
	var out [][2]string
	for _, m := range metrics.Catalog {
		for _, a := range m.Alts {
			for _, ref := range a.Series {
				name, label, _ := metrics.SplitSeries(ref)
				k := [2]string{name, label}
				if label != "" && !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+out[i][1] < out[j][0]+out[j][1] })
	return out
}

// Coverage reports which catalog metrics the source computes for a scope
// (the zero scope: anywhere in the source), from the series present now,
// and how its GPUs join.
func (t *Telemetry) Coverage(ctx context.Context, scope metrics.Scope) (Coverage, error) {
	join, _, err := t.gpuJoin(ctx)
	if err != nil {
		return Coverage{}, err
	}
	engineSel, gpuSel, instSel := "", "", ""
	var status EngineStatus
	gpuOK := join.InstanceLabel != ""
	if scope.Model != "" {
		sel, ok, es, err := t.scopeSelectors(ctx, scope)
		if err != nil {
			return Coverage{}, err
		}
		engineSel, gpuSel, gpuOK = ","+sel.Engine, ","+sel.GPU, ok
		status = es
		insts, err := t.scopeInstances(ctx, scope)
		if err != nil {
			return Coverage{}, err
		}
		if len(insts) > 0 {
			instSel = "," + t.opts.InstanceLabel + "=~" + quote(alternation(insts))
		}
		gpuOK = gpuOK && !allUnjoined(insts, join)
	}
	now := t.now()
	var series []map[string]string
	queries := []string{
		`group by (__name__) ({__name__=~` + quote(enginePrefixes()+"|gateway_.+") + engineSel + `})`,
		// Dynamo's frontend labels the model as model.
		`group by (__name__) ({__name__=~"dynamo_frontend_.+"` + strings.ReplaceAll(engineSel, "model_name=", "model=") + `})`,
		`group by (__name__) ({__name__="http_requests_total"` + instSel + `})`,
	}
	if !gpuOK {
		// The scope's GPUs do not join: read what the source exports at
		// all, so that its GPU metrics are reported as not joined rather
		// than as not exported.
		gpuSel = ""
	}
	queries = append(queries, `group by (__name__) ({__name__=~"DCGM_.+"`+gpuSel+`})`)
	for _, nl := range labelledSeries() {
		queries = append(queries, "group by (__name__, "+nl[1]+") ("+nl[0]+"{"+strings.TrimPrefix(engineSel, ",")+"})")
	}
	for _, q := range queries {
		rs, err := t.querier.Instant(ctx, q, now)
		if err != nil {
			return Coverage{}, fmt.Errorf("telemetry: coverage of %s: %w", scopeName(scope), err)
		}
		for _, r := range rs {
			series = append(series, r.Labels)
		}
	}
	set := NewSeriesSet(series)
	if scope.Model != "" {
		status = withHistogramCheck(status, set)
	}
	c := CoverageFor(set, join, gpuOK, status)
	c.Scope, c.At = scope, now
	if scope.Model == "" {
		scopes, engines, err := t.listScopes(ctx)
		if err != nil {
			return Coverage{}, fmt.Errorf("telemetry: coverage of the source: %w", err)
		}
		for _, s := range scopes {
			c.Engines = append(c.Engines, ScopeEngine{Scope: s, Engine: t.engineStatus(s, engines[s], instancesOf(s, scopes))})
		}
	}
	return c, nil
}

// allUnjoined reports whether none of the instances has GPU series.
func allUnjoined(insts []string, join GPUJoin) bool {
	for _, in := range insts {
		unjoined := false
		for _, u := range join.Unjoined {
			if u == in || strings.HasSuffix(u, "/"+in) {
				unjoined = true
			}
		}
		if !unjoined {
			return false
		}
	}
	return true
}

func scopeName(s metrics.Scope) string {
	if s.Model == "" {
		return "the source"
	}
	return s.String()
}

// enginePrefixes is a regular expression matching every engine's series.
func enginePrefixes() string {
	var parts []string
	for _, e := range metrics.Engines {
		for _, p := range e.Prefixes {
			parts = append(parts, regexp.QuoteMeta(p)+".+")
		}
	}
	return strings.Join(parts, "|")
}

// withHistogramCheck adds a problem to a scope whose engine's series
// carry none of its latency histograms: a release that exports none, so
// every latency mean and p99 is absent, not zero.
func withHistogramCheck(es EngineStatus, set SeriesSet) EngineStatus {
	spec, ok := metrics.LookupEngine(es.Engine)
	if !ok || es.Problem != "" || len(spec.Histograms) == 0 {
		return es
	}
	for _, h := range spec.Histograms {
		if set[h] {
			return es
		}
	}
	es.Problem = fmt.Sprintf("%s series without its latency histograms (%s): a release that exports none, so the scope's latencies are absent", spec.Name, strings.Join(spec.Histograms, ", "))
	return es
}
