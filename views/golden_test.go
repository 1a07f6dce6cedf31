package views

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

var update = flag.Bool("update", false, "rewrite views/testdata/*.golden.html from the current output")

// TestGolden compares whole rendered pages with views/testdata. Run
// `go test -tags sqlite_fts5 ./views/ -run TestGolden -update` after an
// intended markup change and review the diff.
func TestGolden(t *testing.T) {
	layout := LayoutView{Title: "Bad Request", Assets: Assets{CSS: "/static/css/casebook.css?v=1", JS: "/static/js/casebook.js?v=1"}}
	at := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		c    templ.Component
	}{
		{"error_400", ErrorPage(ErrorView{Layout: layout, Status: 400, Title: "Bad Request", Param: "range", Message: `"3y" is not a preset; use one of 15m, 1h, 6h, 24h, 7d`})},
		{"error_500", ErrorPage(ErrorView{Layout: layout, Status: 500, Title: "Internal Server Error", Message: "Something went wrong on our side.", RequestID: "req-123"})},
		{"diagnosis_page", DiagnosisPage(DiagnosisView{
			Layout: layout, Scope: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}, At: at, BackHref: "/scopes/llama-70b/llama-70b-1",
			Panel: NewDiagnosisPanel(diagnose.Diagnosis{
				RootCause: metrics.CauseSpecDecodeDegradation, Confidence: .81, Severity: diagnose.SeverityWarning,
				Candidates:  []diagnose.Candidate{{RootCause: metrics.CauseSpecDecodeDegradation, Score: .81, Source: "rule"}, {RootCause: metrics.CauseMemoryBandwidthBound, Score: .3, Source: "baseline"}},
				Evidence:    []diagnose.Evidence{{Metric: metrics.RejectionRate, Value: .62, BaselineMean: .27, Z: 11.5, Text: "Most draft tokens are rejected."}},
				CausalChain: []string{metrics.RejectionRate, metrics.TPOT},
				Actions: []diagnose.Action{{ID: "lower_num_speculative_tokens", Title: "Propose fewer draft tokens", Knob: "num_speculative_tokens", Proposed: "2",
					Why: "Fewer wasted drafts per step.", Effects: []diagnose.Effect{{Metric: metrics.TPOT, Direction: "down", Size: "-10..-25%"}}, Risk: "Lower peak speed-up.", Rollback: "Restore 5."}},
				EngineVersion: "rules-1/test",
			}),
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderString(t, tc.c)
			path := filepath.Join("testdata", tc.name+".golden.html")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s; if the change is intended, rerun with -update and review the diff.\ngot:\n%s", tc.name, path, got)
			}
		})
	}
}
