package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

func TestTriggerTextSaysWhichBandWasLeft(t *testing.T) {
	detector := `{"source":"dynamic-threshold","metrics":[` +
		`{"metric":"ttft_ms","value":900,"forecast":400,"lower":300,"upper":500,"outside":400,"outside_se":12},` +
		`{"metric":"generation_tps","value":100,"forecast":800,"lower":600,"upper":1000,"outside":500,"outside_se":7.5}]}`
	tests := []struct {
		name   string
		kind   store.TriggerKind
		detail string
		want   []string
		not    []string
	}{
		{"two bands left", store.TriggerDetector, detector, []string{
			views.MetricLabel(metrics.TTFT) + " " + views.FormatValue(metrics.TTFT, 900) + ", above its band",
			"by " + views.FormatValue(metrics.TTFT, 400) + " (12.0 standard errors)",
			views.MetricLabel(metrics.GenerationTPS), "below its band", "(7.5 standard errors)"}, nil},
		{"no spread", store.TriggerDetector, `{"metrics":[{"metric":"sm_clock_mhz","value":1400,"lower":1940,"upper":2020,"outside":540,"outside_se":0}]}`,
			[]string{"below its band"}, []string{"standard errors"}},
		{"unknown metric skipped", store.TriggerDetector, `{"metrics":[{"metric":"<b>","value":1}]}`,
			[]string{"Dynamic-threshold detector"}, []string{"<b>", "band"}},
		{"older single-metric detail", store.TriggerDetector, `{"metric":"ttft_ms"}`,
			[]string{"Dynamic-threshold detector on " + views.MetricLabel(metrics.TTFT)}, []string{"band"}},
		{"broken detail", store.TriggerDetector, `{"metrics":`, []string{"Dynamic-threshold detector"}, []string{"band"}},
		{"alertmanager", store.TriggerAlertmanager, `{"alertname":"VLLMHighTTFT"}`, []string{"Alertmanager alert VLLMHighTTFT"}, nil},
	}
	for _, tc := range tests {
		inc := store.Incident{TriggerDetail: json.RawMessage(tc.detail)}
		inc.Trigger = tc.kind
		got := triggerText(inc)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not contain %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q contains %q", tc.name, got, w)
			}
		}
	}
}
