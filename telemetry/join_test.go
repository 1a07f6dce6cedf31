package telemetry

import (
	"context"
	"strings"
	"testing"
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
