package sim

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestScenariosDeterministicAndCovering(t *testing.T) {
	n := 240
	if testing.Short() {
		n = 48
	}
	a := Scenarios(ScenarioOptions{N: n, Seed: 7})
	b := Scenarios(ScenarioOptions{N: n, Seed: 7})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("the same seed gave different corpora")
	}
	other, _ := json.Marshal(Scenarios(ScenarioOptions{N: n, Seed: 8}))
	if string(other) == string(ja) {
		t.Fatal("different seeds gave the same corpus")
	}

	labels := map[string]int{}
	secondary, noProf, noGateway, instance := 0, 0, 0, 0
	for i, c := range a {
		labels[c.Label]++
		if len(c.Secondary) > 0 {
			secondary++
			if c.Secondary[0] == c.Label {
				t.Errorf("case %d: secondary equals the label %s", i, c.Label)
			}
		}
		if _, ok := c.Current[metrics.TensorActive]; !ok {
			noProf++
		}
		if _, ok := c.Current[metrics.GatewayE2E]; !ok {
			noGateway++
		}
		if c.Scope.Instance != "" {
			instance++
		}
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := metrics.DecodeCase(line); err != nil {
			t.Errorf("case %d (%s) breaks the contract: %v", i, c.Label, err)
		}
		if len(c.History) != 65 {
			t.Errorf("case %d: %d history points, want 65", i, len(c.History))
			continue
		}
		if first, last := c.History[0].At, c.History[64].At; !first.Equal(c.At.Add(-65*time.Minute)) || !last.Equal(c.At.Add(-time.Minute)) {
			t.Errorf("case %d: history spans %s..%s, want at-65m..at-1m", i, first, last)
		}
		for _, id := range []string{metrics.E2E, metrics.TTFT, metrics.TPOT, metrics.ThroughputRPS, metrics.SMUtil, metrics.KVCacheUsage} {
			if _, ok := c.Current.Get(id); !ok {
				t.Errorf("case %d (%s): current lacks %s", i, c.Label, id)
			}
		}
	}
	for _, cause := range append(metrics.FaultCauses(), metrics.CauseNone) {
		if labels[cause] == 0 {
			t.Errorf("no case labelled %s", cause)
		}
	}
	if testing.Short() {
		return
	}
	for name, k := range map[string]int{"secondary fault": secondary, "no profiling fields": noProf, "no gateway fields": noGateway, "instance scope": instance} {
		if k < 5 || k > n/2 {
			t.Errorf("%d of %d cases with %s, want a minority but some", k, n, name)
		}
	}
}

func TestScenarioFaultShowsAgainstHistory(t *testing.T) {
	// A severe transport fault must lift gateway E2E above every history
	// point while engine E2E stays within its history's range.
	for i := range 200 {
		p := planScenario(11, i)
		if p.label != metrics.CauseTransportLatency || p.severity < 0.5 || p.second != "" || p.noGateway {
			continue
		}
		c := scenario(11, i)
		hist := c.Series(metrics.GatewayE2E)
		if gw := c.Current[metrics.GatewayE2E]; gw <= slices.Max(hist) {
			t.Errorf("case %d: gateway E2E %g does not exceed its history max %g", i, gw, slices.Max(hist))
		}
		return
	}
	t.Fatal("no severe single transport case in the first 200")
}
