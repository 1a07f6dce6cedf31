package telemetry

import (
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
)

func TestWindows(t *testing.T) {
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	demo := resolutions{live: 5 * time.Second, coarse: time.Minute, coarseEnd: end.Add(-2 * time.Hour)}
	live := resolutions{live: 5 * time.Second}
	tests := []struct {
		name  string
		got   time.Duration
		want  time.Duration
		floor time.Duration // the window must hold at least two samples at this resolution
	}{
		{"live range at 15s step", live.rangeWindow(end.Add(-time.Hour), 15*time.Second), 20 * time.Second, 5 * time.Second},
		{"live range at 1m step", live.rangeWindow(end.Add(-time.Hour), time.Minute), 65 * time.Second, 5 * time.Second},
		{"back-filled range at 10m step", demo.rangeWindow(end.Add(-7*24*time.Hour), 10*time.Minute), 11 * time.Minute, time.Minute},
		{"back-filled range at 1m step", demo.rangeWindow(end.Add(-3*time.Hour), time.Minute), 4 * time.Minute, time.Minute},
		{"range starting just after back-fill reads it", demo.rangeWindow(end.Add(-2*time.Hour+10*time.Second), 15*time.Second), 4 * time.Minute, time.Minute},
		{"range well after back-fill", demo.rangeWindow(end.Add(-time.Hour), 15*time.Second), 20 * time.Second, 5 * time.Second},
		{"current in live data", demo.currentWindow(end), time.Minute, 5 * time.Second},
		{"current in back-filled data", demo.currentWindow(end.Add(-3 * time.Hour)), 4 * time.Minute, time.Minute},
		{"current right after back-fill", demo.currentWindow(end.Add(-2*time.Hour + 30*time.Second)), 4 * time.Minute, time.Minute},
		{"remote 30s scrape", resolutions{live: 30 * time.Second}.currentWindow(end), 2 * time.Minute, 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("window = %s, want %s", tc.got, tc.want)
			}
			if tc.got < 2*tc.floor {
				t.Fatalf("window %s holds fewer than two samples at %s", tc.got, tc.floor)
			}
		})
	}
}

// The GPU join label and the engines' namespaces narrow the GPU matchers;
// without a join label no GPU metric is queried.
func TestSelectorsFollowTheGPUJoin(t *testing.T) {
	scope := metrics.Scope{Model: "m", Instance: "p-0"}
	tests := []struct {
		name    string
		join    GPUJoin
		ns      []string
		wantGPU string
		ok      bool
	}{
		{"exported_pod", GPUJoin{InstanceLabel: "exported_pod", NamespaceLabel: "exported_namespace"}, []string{"team-a"},
			`exported_pod="p-0",exported_namespace=~"team-a"`, true},
		{"namespace label but engines without namespaces", GPUJoin{InstanceLabel: "pod", NamespaceLabel: "namespace"}, nil, `pod="p-0"`, true},
		{"no join", GPUJoin{}, nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, ok := selectors(scope, "pod", nil, tc.join, tc.ns)
			if sel.GPU != tc.wantGPU || ok != tc.ok {
				t.Fatalf("GPU selector %q %v, want %q %v", sel.GPU, ok, tc.wantGPU, tc.ok)
			}
		})
	}
}

func TestSelectors(t *testing.T) {
	tests := []struct {
		name      string
		scope     metrics.Scope
		instances []string
		wantEng   string
		wantGPU   string
		wantGPUOK bool
	}{
		{"instance", metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"}, nil,
			`model_name="llama-8b",pod="llama-8b-0"`, `pod="llama-8b-0"`, true},
		{"model", metrics.Scope{Model: "llama-8b"}, []string{"llama-8b-0", "llama-8b-1"},
			`model_name="llama-8b"`, `pod=~"llama-8b-0|llama-8b-1"`, true},
		{"model without instances", metrics.Scope{Model: "m"}, nil, `model_name="m"`, "", false},
		{"escaping", metrics.Scope{Model: `meta/Llama "3.1"\x`}, []string{"a.b-0", "c+d"},
			`model_name="meta/Llama \"3.1\"\\x"`, `pod=~"a\\.b-0|c\\+d"`, true},
	}
	p := parser.NewParser(parser.Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, ok := selectors(tc.scope, "pod", tc.instances, GPUJoin{InstanceLabel: "pod"}, nil)
			if sel.Engine != tc.wantEng || sel.GPU != tc.wantGPU || ok != tc.wantGPUOK {
				t.Fatalf("selectors = %+v %v, want engine %s gpu %s %v", sel, ok, tc.wantEng, tc.wantGPU, tc.wantGPUOK)
			}
			// Every catalog query built from them parses, and the matchers
			// select exactly the scope's values.
			for _, m := range metrics.Catalog {
				if m.Source == metrics.SourceGPU && !ok {
					continue
				}
				if _, err := p.ParseExpr(m.Query(sel, time.Minute)); err != nil {
					t.Fatalf("%s: %v", m.ID, err)
				}
			}
			ms, err := p.ParseMetricSelector("{" + sel.Engine + "}")
			if err != nil {
				t.Fatal(err)
			}
			if !ms[0].Matches(tc.scope.Model) {
				t.Fatalf("model matcher %s does not match %q", ms[0], tc.scope.Model)
			}
			if ok && tc.scope.Instance == "" {
				gm, err := p.ParseMetricSelector("{" + sel.GPU + "}")
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range tc.instances {
					if !gm[0].Matches(in) {
						t.Fatalf("GPU matcher %s does not match %q", gm[0], in)
					}
				}
				if gm[0].Matches("x" + tc.instances[0]) {
					t.Fatalf("GPU matcher %s matches another pod", gm[0])
				}
			}
		})
	}
}
