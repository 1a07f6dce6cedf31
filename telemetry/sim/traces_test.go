package sim

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite traces_table.go from the Azure trace CSVs")

// traceDir is where the shared checkout keeps the Azure traces; the test
// skips when it is absent.
const traceDir = "../../../shared/data/azure-llm-2023"

func TestTraceTables(t *testing.T) {
	files := []struct{ name, file string }{
		{"code", "AzureLLMInferenceTrace_code.csv"},
		{"conv", "AzureLLMInferenceTrace_conv.csv"},
	}
	var stats []TraceStats
	for _, f := range files {
		fh, err := os.Open(filepath.Join(traceDir, f.file))
		if err != nil {
			t.Skipf("Azure traces not available: %v", err)
		}
		s, err := deriveTrace(f.name, fh)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		stats = append(stats, s)
	}
	src := formatTraceTable(stats)
	if *update {
		if err := os.WriteFile("traces_table.go", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("traces_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != src {
		t.Errorf("traces_table.go is stale; run: go test -tags sqlite_fts5 ./telemetry/sim -run TestTraceTables -update")
	}
}
