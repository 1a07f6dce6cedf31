package telemetry

import (
	"context"
	"strings"
	"testing"

	"github.com/casebook/casebook/metrics"
)

func TestOpenRejectsBadJoinLabels(t *testing.T) {
	for _, tc := range []struct {
		inst, ns string
		ok       bool
	}{
		{"exported_pod", "exported_namespace", true},
		{"auto", "none", true},
		{"", "", true},
		{`pod"}`, "", false},
		{"pod", "name space", false},
		{"__name__", "", false},
	} {
		tel, err := Open(context.Background(), Options{PrometheusURL: "http://127.0.0.1:1", GPUInstanceLabel: tc.inst, GPUNamespaceLabel: tc.ns})
		if (err == nil) != tc.ok {
			t.Errorf("labels %q/%q: err %v, want ok %v", tc.inst, tc.ns, err, tc.ok)
		}
		if err == nil {
			_ = tel.Close()
		} else if !strings.Contains(err.Error(), "is not a label name") {
			t.Errorf("labels %q/%q: error %q names no label", tc.inst, tc.ns, err)
		}
	}
}

// On the fixture scrape the GPUs join through pod; told to join through a
// label the source does not have, the scope reports its GPU metrics missing
// because they did not join, the snapshot leaves them out, and the status
// board has a failing "gpu join" source.
func TestCoverageOfAScopeWhoseGPUsDoNotJoin(t *testing.T) {
	tel, at := fixtureTelemetry(t)
	ctx := context.Background()
	scope := metrics.Scope{Model: "llama-8b", Instance: "llama-8b-0"}

	cov, err := tel.Coverage(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if !cov.GPUsJoined || cov.Join.InstanceLabel != "pod" || len(cov.Missing()) != 0 {
		t.Fatalf("fixture coverage: joined %v through %q, missing %+v", cov.GPUsJoined, cov.Join.InstanceLabel, cov.Missing())
	}

	tel.opts.GPUInstanceLabel = "exported_pod"
	tel.join = joinCache{}
	cov, err = tel.Coverage(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if cov.GPUsJoined {
		t.Fatal("GPUs reported joined through a label no series has")
	}
	for _, r := range cov.Resolutions {
		m, _ := metrics.Lookup(r.ID)
		if m.Source == metrics.SourceGPU && (r.OK || !strings.Contains(r.Why, "did not join")) {
			t.Errorf("%s: %+v", r.ID, r)
		}
		if m.Source == metrics.SourceEngine && !r.OK {
			t.Errorf("engine metric %s missing: %s", r.ID, r.Why)
		}
	}
	snap, err := tel.Snapshot(ctx, scope, at)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Current.Get(metrics.SMClock); ok {
		t.Error("the snapshot has GPU metrics of GPUs that did not join")
	}
	if _, ok := snap.Current.Get(metrics.TTFT); !ok {
		t.Error("the snapshot lost its engine metrics")
	}
	found := false
	for _, s := range tel.Status() {
		if s.Name == joinSource && !s.OK && strings.Contains(s.Err, "exported_pod") {
			found = true
		}
	}
	if !found {
		t.Errorf("status %+v: want a failing %q source", tel.Status(), joinSource)
	}
}
