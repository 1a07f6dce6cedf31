package promrules_test

import (
	"log/slog"

	"github.com/prometheus/common/model"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/promrules"
)

func parse(t *testing.T, f promrules.File) *rulefmt.RuleGroups {
	t.Helper()
	out, err := f.YAML()
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(out, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("Prometheus rejects the generated rules: %v\n%s", errs, out)
	}
	return groups
}

func TestRecordingRulesValid(t *testing.T) {
	groups := parse(t, promrules.Recording(promrules.Options{}))
	records := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			records[r.Record] = true
		}
	}
	for _, m := range metrics.Catalog {
		for _, name := range []string{
			promrules.RecordName(m.ID, "avg", "1m"),
			promrules.RecordName(m.ID, "avg", "1h"),
			promrules.RecordName(m.ID, "max", "1h"),
		} {
			if !records[name] {
				t.Errorf("no recording rule %s", name)
			}
		}
	}
}

func TestAlertRulesCarryScope(t *testing.T) {
	f, err := promrules.Alerts(promrules.Options{Thresholds: map[string]float64{metrics.ErrorRate: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	groups := parse(t, f)
	found := false
	for _, r := range groups.Groups[0].Rules {
		if r.Labels["casebook_metric"] == "" {
			t.Errorf("%s has no casebook_metric label", r.Alert)
		}
		if r.Labels["casebook_metric"] == metrics.ErrorRate {
			found = true
			if !strings.Contains(r.Expr, "by (model_name, pod)") || !strings.HasSuffix(r.Expr, "> 0.01") {
				t.Errorf("error-rate alert expr %q: want grouping by scope and the overridden threshold", r.Expr)
			}
		}
	}
	if !found {
		t.Error("no error-rate alert")
	}
	if _, err := promrules.Alerts(promrules.Options{Thresholds: map[string]float64{"nope": 1}}); err == nil {
		t.Error("unknown metric in thresholds accepted")
	}
}

// TestReadQueriesReadRecordedSeries checks the reader side of the naming
// convention: every long-range query parses and selects only series that
// the recording rules produce, with the scope's matchers.
func TestReadQueriesReadRecordedSeries(t *testing.T) {
	groups := parse(t, promrules.Recording(promrules.Options{}))
	records := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			records[r.Record] = true
		}
	}
	scopes := []struct {
		name  string
		sel   metrics.Selectors
		model bool
	}{
		{"model", metrics.Selectors{Engine: `model_name="llama"`, GPU: `pod=~"a|b"`}, true},
		{"instance", metrics.Selectors{Engine: `model_name="llama",pod="a"`, GPU: `pod="a"`}, false},
	}
	p := parser.NewParser(parser.Options{})
	for _, sc := range scopes {
		for _, tier := range []string{"1m", "1h"} {
			for _, m := range metrics.Catalog {
				q := promrules.ReadQuery(m, sc.sel, sc.model, tier, 2*time.Hour)
				expr, err := p.ParseExpr(q)
				if err != nil {
					t.Fatalf("%s %s %s: %q does not parse: %v", sc.name, tier, m.ID, q, err)
				}
				for _, vs := range parser.ExtractSelectors(expr) {
					var name string
					for _, l := range vs {
						if l.Name == model.MetricNameLabel {
							name = l.Value
						}
					}
					if !records[name] {
						t.Errorf("%s %s %s: %q reads %q, which no rule records", sc.name, tier, m.ID, q, name)
					}
					if !strings.HasSuffix(name, ":avg"+tier) {
						t.Errorf("%s %s %s: reads %q, not the %s tier", sc.name, tier, m.ID, name, tier)
					}
				}
				want := sc.sel.Engine
				if m.Source == metrics.SourceGPU {
					want = sc.sel.GPU
				}
				if !strings.Contains(q, "{"+want+"}") {
					t.Errorf("%s %s %s: %q lacks the scope's matchers %s", sc.name, tier, m.ID, q, want)
				}
			}
		}
	}
	// GPU clocks combine instances with min, as their expression does.
	clk, _ := metrics.Lookup(metrics.SMClock)
	if q := promrules.ReadQuery(clk, scopes[0].sel, true, "1m", time.Hour); !strings.HasPrefix(q, "min (") {
		t.Errorf("SM clock of a model reads %q, want the minimum over instances", q)
	}
}

// One record per metric whatever the engine: the scope: and model:
// records of a metric read every engine's series, each keeping its scope
// labels (llama-server's model copied in from the configured label).
func TestRecordingRulesCoverEveryEngine(t *testing.T) {
	f := promrules.Recording(promrules.Options{ModelLabel: "job"})
	exprs := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			exprs[r.Record] = r.Expr
		}
	}
	tests := []struct{ record, want string }{
		{promrules.RecordName(metrics.TTFT, "avg", "1m"), "sglang:time_to_first_token_seconds_sum"},
		{promrules.RecordName(metrics.TTFT, "avg", "1m"), "trtllm_time_to_first_token_seconds_sum"},
		{promrules.RecordName(metrics.TPOT, "avg", "1m"), `label_replace(rate(llamacpp:tokens_predicted_seconds_total{}[2m]), "model_name", "$1", "job", "(.*)")`},
		{promrules.ModelRecordName(metrics.KVCacheUsage, "avg", "1m"), "avg by (model_name) (sglang:token_usage{})"},
		{promrules.RecordName(metrics.GatewayE2E, "avg", "1m"), "dynamo_frontend_request_duration_seconds_sum"},
	}
	for _, tc := range tests {
		if !strings.Contains(exprs[tc.record], tc.want) {
			t.Errorf("%s = %q, want it to read %q", tc.record, exprs[tc.record], tc.want)
		}
	}
}
