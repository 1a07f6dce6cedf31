package telemetry

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// labelEngine is the reserved target label that sets the engine of the
// target's instance ("sglang"), overriding what its series say.
const labelEngine = "__engine__"

// engineMark is the label the scope listing adds to tell which engine's
// liveness gauge a scope answered with; no engine exports it.
const engineMark = "casebook_engine"

// EngineStatus is the engine of one scope, as detected from the series it
// carries or set per target.
type EngineStatus struct {
	// Engine is the engine whose catalog alternatives the scope is read
	// with; empty when none can be (Problem says why).
	Engine metrics.Engine
	// Overridden is true when a target or option set the engine.
	Overridden bool
	// Problem says in a sentence what is wrong: two engines' series under
	// one scope, no known engine, a release without histograms. Empty
	// when the scope is read normally.
	Problem string
}

// Name is the engine's display name, or "unknown".
func (s EngineStatus) Name() string {
	if s.Engine == "" {
		return "unknown"
	}
	return metrics.EngineName(s.Engine)
}

// scopeQuery lists every scope with the engine whose liveness gauge it
// reported in the last scopeStep: one answer per model, instance and
// engine. llama-server's series carry no model_name; it is copied from the
// configured model label.
func (t *Telemetry) scopeQuery(extra ...string) string {
	inst := t.opts.InstanceLabel
	by := append([]string{"model_name", inst, engineMark}, extra...)
	look := metrics.FormatDuration(scopeStep)
	parts := make([]string, 0, len(metrics.Engines))
	for _, e := range metrics.Engines {
		v := "last_over_time(" + e.Liveness + "[" + look + "])"
		if !e.LabelsModel && t.modelLabel() != "model_name" {
			v = `label_replace(` + v + `, "model_name", "$1", "` + t.modelLabel() + `", "(.*)")`
		}
		parts = append(parts, `label_replace(`+v+`, "`+engineMark+`", "`+string(e.ID)+`", "", "")`)
	}
	return "group by (" + strings.Join(by, ", ") + ") (" + strings.Join(parts, " or ") + ")"
}

// modelLabel is the label that names the model on engines without
// model_name.
func (t *Telemetry) modelLabel() string {
	if t.opts.ModelLabel == "" {
		return "model_name"
	}
	return t.opts.ModelLabel
}

// scopesCacheFor is how long one listing of the scopes serves: the scrape
// interval, as for the fleet's reading. Every page, snapshot and detector
// round lists the scopes, and at a large fleet the listing reads a day of
// every engine's liveness gauge.
const scopesCacheFor = FleetCacheFor

// scopesCache holds the latest listing of the scopes.
type scopesCache struct {
	mu         sync.Mutex
	at         time.Time
	scopes     []metrics.Scope
	engines    map[metrics.Scope][]metrics.Engine
	refreshing bool // a listing runs in the background
}

// scopesStaleFor is how old a listing may be and still answer while a
// new one is read in the background: a scope that appears or goes is
// listed a refresh late, and no page waits for the day-long read.
const scopesStaleFor = FleetStaleFor

// listScopes answers scopeQuery: the scopes, sorted, and the engines each
// scope's series came from (a model's are its instances'). A listing
// younger than scopesCacheFor is reused; one younger than scopesStaleFor
// too, while a new one is read in the background. Callers may modify the
// returned slice but not the map.
func (t *Telemetry) listScopes(ctx context.Context) ([]metrics.Scope, map[metrics.Scope][]metrics.Engine, error) {
	c := &t.scopes
	c.mu.Lock()
	age := time.Since(c.at)
	if !c.at.IsZero() && (age < scopesCacheFor || age < scopesStaleFor && t.bg != nil && t.bg.Err() == nil) {
		scopes, engines := slices.Clone(c.scopes), c.engines
		if age >= scopesCacheFor && !c.refreshing {
			c.refreshing = true
			t.wg.Add(1)
			go func() {
				defer t.wg.Done()
				ctx, cancel := context.WithTimeout(t.bg, embeddedQueryTimeout)
				defer cancel()
				if _, _, err := t.readAndKeepScopes(ctx); err != nil {
					t.log.Warn("refreshing the list of scopes failed", "err", err)
				}
				c.mu.Lock()
				c.refreshing = false
				c.mu.Unlock()
			}()
		}
		c.mu.Unlock()
		return scopes, engines, nil
	}
	c.mu.Unlock()
	scopes, engines, err := t.readAndKeepScopes(ctx)
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(scopes), engines, nil
}

// readAndKeepScopes reads the scopes and keeps the listing unless a later
// one is kept already.
func (t *Telemetry) readAndKeepScopes(ctx context.Context) ([]metrics.Scope, map[metrics.Scope][]metrics.Engine, error) {
	c := &t.scopes
	began := time.Now()
	scopes, engines, err := t.readScopes(ctx)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if began.After(c.at) {
		c.at, c.scopes, c.engines = began, scopes, engines
	}
	c.mu.Unlock()
	return scopes, engines, nil
}

// readScopes lists the scopes from the source.
func (t *Telemetry) readScopes(ctx context.Context) ([]metrics.Scope, map[metrics.Scope][]metrics.Engine, error) {
	inst := t.opts.InstanceLabel
	rs, err := t.seenInLookback(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: list scopes: %w", err)
	}
	engines := map[metrics.Scope][]metrics.Engine{}
	var out []metrics.Scope
	for _, r := range rs {
		m := r.Labels["model_name"]
		if m == "" {
			continue
		}
		e := metrics.Engine(r.Labels[engineMark])
		for _, s := range []metrics.Scope{{Model: m}, {Model: m, Instance: r.Labels[inst]}} {
			if _, seen := engines[s]; !seen {
				out = append(out, s)
				engines[s] = nil
			}
			if e != "" && !containsEngine(engines[s], e) {
				engines[s] = append(engines[s], e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].Instance < out[j].Instance
	})
	return out, engines, nil
}

// scopeStep is the step of the scope listing's read: a point an hour over
// the lookback. The tiered store answers hourly steps from its hourly tier
// (and the last hour from raw data), not from a day of raw samples: at 500
// engines scraped every 5 s that is 8.6 million samples a listing, in block
// files the read maps in.
const scopeStep = time.Hour

// seenInLookback answers scopeQuery(extra...) for every scope that
// reported in the last scopesLookback: hourly points over it, each over
// the hour before it. A range query's series are one per label set, so a
// scope seen at several hours is one result.
func (t *Telemetry) seenInLookback(ctx context.Context, extra ...string) ([]Result, error) {
	now := t.now()
	return t.querier.Range(ctx, t.scopeQuery(extra...), now.Add(-scopesLookback+scopeStep), now, scopeStep)
}

func containsEngine(es []metrics.Engine, e metrics.Engine) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// override returns the engine set for a scope by option or target: the
// instance's own, else the model's; a model scope whose instances are
// all set to one engine takes it.
func (t *Telemetry) override(scope metrics.Scope, instances []string) (metrics.Engine, bool) {
	if scope.Instance != "" {
		if e, ok := t.engineOverrides[scope.Model+"/"+scope.Instance]; ok {
			return e, true
		}
		if e, ok := t.engineOverrides[scope.Instance]; ok {
			return e, true
		}
	}
	if e, ok := t.engineOverrides[scope.Model]; ok {
		return e, true
	}
	var found metrics.Engine
	for _, in := range instances {
		e, ok := t.override(metrics.Scope{Model: scope.Model, Instance: in}, nil)
		if !ok || (found != "" && e != found) {
			return "", false
		}
		found = e
	}
	return found, found != ""
}

// engineStatus decides the engine of a scope from the engines its series
// came from.
func (t *Telemetry) engineStatus(scope metrics.Scope, seen []metrics.Engine, instances []string) EngineStatus {
	if e, ok := t.override(scope, instances); ok {
		return EngineStatus{Engine: e, Overridden: true}
	}
	switch len(seen) {
	case 0:
		return EngineStatus{Problem: fmt.Sprintf("%s: %v; engine metrics are not read", scope, metrics.ErrUnknownEngine)}
	case 1:
		return EngineStatus{Engine: seen[0]}
	}
	names := make([]string, len(seen))
	for i, e := range seen {
		names[i] = metrics.EngineName(e)
	}
	sort.Strings(names)
	return EngineStatus{Problem: fmt.Sprintf("%s: %v (%s); its engine metrics are not read rather than mixed: set the engine per target (%s) to read one",
		scope, metrics.ErrMixedEngines, strings.Join(names, " and "), labelEngine)}
}

// ScopeEngine returns the engine of a scope.
func (t *Telemetry) ScopeEngine(ctx context.Context, scope metrics.Scope) (EngineStatus, error) {
	scopes, engines, err := t.listScopes(ctx)
	if err != nil {
		return EngineStatus{}, err
	}
	return t.engineStatus(scope, engines[scope], instancesOf(scope, scopes)), nil
}

func instancesOf(scope metrics.Scope, scopes []metrics.Scope) []string {
	if scope.Instance != "" {
		return []string{scope.Instance}
	}
	var out []string
	for _, s := range scopes {
		if s.Model == scope.Model && s.Instance != "" {
			out = append(out, s.Instance)
		}
	}
	return out
}

// engineOf returns the catalog entry of m as the scope's engine computes
// it; for a scope without one engine, engine metrics have no query and
// are absent with the engine status's reason.
func engineOf(m metrics.Metric, es EngineStatus) metrics.Metric {
	if m.Source != metrics.SourceEngine {
		if es.Engine == "" {
			return m
		}
		return m.ForEngine(es.Engine)
	}
	if es.Engine == "" {
		m.Alts, m.PromQL, m.Absent = nil, "", es.Problem
		return m
	}
	return m.ForEngine(es.Engine)
}

// parseEngineOverrides reads the option's keys (model, instance or
// model/instance) and engines.
func parseEngineOverrides(in map[string]string) (map[string]metrics.Engine, error) {
	out := make(map[string]metrics.Engine, len(in))
	for k, v := range in {
		if k == "" {
			return nil, fmt.Errorf("telemetry: engine override %q: no scope named", v)
		}
		e, err := metrics.ParseEngine(v)
		if err != nil {
			return nil, fmt.Errorf("telemetry: engine override for %s: %w", k, err)
		}
		out[k] = e
	}
	return out, nil
}
