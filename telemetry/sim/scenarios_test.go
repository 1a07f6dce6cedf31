package sim

import (
	"encoding/json"
	"math"
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
		c := scenario(11, i, false, metrics.EngineVLLM)
		hist := c.Series(metrics.GatewayE2E)
		if gw := c.Current[metrics.GatewayE2E]; gw <= slices.Max(hist) {
			t.Errorf("case %d: gateway E2E %g does not exceed its history max %g", i, gw, slices.Max(hist))
		}
		return
	}
	t.Fatal("no severe single transport case in the first 200")
}

func TestScenariosDefaultFieldsHaveNoProfiling(t *testing.T) {
	n := 24
	for i, c := range Scenarios(ScenarioOptions{N: n, Seed: 3, DCGMFields: DCGMDefault}) {
		for _, id := range []string{metrics.TensorActive, metrics.DRAMActive} {
			if _, ok := c.Current[id]; ok {
				t.Errorf("case %d (%s): %s present with the default counters", i, c.Label, id)
			}
		}
		sm, ok := c.Current[metrics.SMUtil]
		if !ok {
			t.Errorf("case %d (%s): no gpu_sm_util with the default counters", i, c.Label)
			continue
		}
		// GPU_UTIL is a whole percent, averaged over at most 16 GPUs.
		if math.Abs(sm*1600-math.Round(sm*1600)) > 1e-6 || sm < 0 || sm > 1 {
			t.Errorf("case %d: gpu_sm_util %g is not a mean of whole percents", i, sm)
		}
	}
}

func TestDrawDeploymentVariesConstantsAndFits(t *testing.T) {
	gpus := map[string]bool{}
	blocks := map[int]bool{}
	hostMs := map[float64]bool{}
	for i := range 64 {
		spec := modelSpec(i % len(Models))
		d := drawDeployment(5, i, spec)
		gpus[d.consts.GPU.Name] = true
		blocks[d.cfg.BlockSize] = true
		hostMs[d.consts.HostStepMs] = true
		if err := d.cfg.Validate(); err != nil {
			t.Errorf("case %d: invalid config: %v", i, err)
		}
		if pool := kvPoolTokensOn(d.consts.GPU, spec, d.cfg, 0); pool <= 0 {
			t.Errorf("case %d: %s on %d x %s leaves no KV pool", i, spec.Name, d.cfg.TensorParallelSize, d.consts.GPU.Name)
		}
		if d.spec.PeakRPS <= 0 {
			t.Errorf("case %d: peak rate %g", i, d.spec.PeakRPS)
		}
	}
	if len(gpus) < 4 || len(blocks) < 3 || len(hostMs) < 32 {
		t.Errorf("64 draws gave %d GPU types, %d block sizes, %d host costs; want them varied", len(gpus), len(blocks), len(hostMs))
	}
	if a, b := drawDeployment(5, 3, Models[0]), drawDeployment(5, 3, Models[0]); a != b {
		t.Error("the same seed and case drew different deployments")
	}
}
