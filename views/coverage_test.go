package views

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func renderCoverage(t *testing.T, v *CoverageView) string {
	t.Helper()
	var b strings.Builder
	if err := coverageTables(v).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestCoverageTablesFoldAFleet(t *testing.T) {
	fleet := &CoverageView{Join: "GPUs join through pod", JoinOK: true, JoinLabels: "pod (detected)"}
	for i := range 20 {
		e := EngineRow{Scope: fmt.Sprintf("m/m-%d", i), Engine: "vLLM", How: "detected from its vllm: series"}
		if i == 7 {
			e.Engine, e.How, e.Problem = "SGLang", "", "two engines under one scope"
		}
		fleet.Engines = append(fleet.Engines, e)
		fleet.Joined = append(fleet.Joined, JoinRow{Instance: fmt.Sprintf("m-%d", i), GPUs: 2})
	}
	page := renderCoverage(t, fleet)
	if !strings.Contains(page, `data-testid="storage-engines-fold"`) || !strings.Contains(page, `data-testid="storage-join-fold"`) {
		t.Fatalf("a 20-engine fleet is not folded:\n%.2000s", page)
	}
	if got := fleet.EnginesSummary(context.Background()); got != "20 scopes: 19 vLLM, 1 SGLang; 1 with a problem (listed above)" {
		t.Errorf("engine summary %q", got)
	}
	if got := fleet.JoinedSummary(context.Background()); got != "20 engine instances joined 40 GPU series through pod (detected)" {
		t.Errorf("join summary %q", got)
	}
	// The problem row is shown before the fold as well as inside it.
	fold := strings.Index(page, `data-testid="storage-engines-fold"`)
	if first := strings.Index(page, "two engines under one scope"); first < 0 || first > fold {
		t.Errorf("the engine with a problem is not listed above the fold")
	}

	small := &CoverageView{Join: "GPUs join through pod", JoinOK: true, JoinLabels: "pod",
		Engines: fleet.Engines[:3], Joined: fleet.Joined[:3]}
	page = renderCoverage(t, small)
	if strings.Contains(page, "-fold") || strings.Count(page, `data-testid="storage-engine"`) != 3 || !strings.Contains(page, `data-testid="storage-join-table"`) {
		t.Errorf("a three-engine source should be listed openly:\n%.2000s", page)
	}
}
