package promrules_test

import (
	"log/slog"

	"github.com/prometheus/common/model"
	"strings"
	"testing"

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
