package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/casebook/casebook/internal/i18n"
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
		lang   string
		kind   store.TriggerKind
		detail string
		want   []string
		not    []string
	}{
		{"two bands left", "en", store.TriggerDetector, detector, []string{
			views.MetricLabel(metrics.TTFT) + " " + views.FormatValue(metrics.TTFT, 900) + ", above its band",
			"by " + views.FormatValue(metrics.TTFT, 400) + " (12.0 standard errors)",
			views.MetricLabel(metrics.GenerationTPS), "below its band", "(7.5 standard errors)"}, nil},
		{"no spread", "en", store.TriggerDetector, `{"metrics":[{"metric":"sm_clock_mhz","value":1400,"lower":1940,"upper":2020,"outside":540,"outside_se":0}]}`,
			[]string{"below its band"}, []string{"standard errors"}},
		{"unknown metric skipped", "en", store.TriggerDetector, `{"metrics":[{"metric":"<b>","value":1}]}`,
			[]string{"Dynamic-threshold detector"}, []string{"<b>", "band"}},
		{"older single-metric detail", "en", store.TriggerDetector, `{"metric":"ttft_ms"}`,
			[]string{"Dynamic-threshold detector on " + views.MetricLabel(metrics.TTFT)}, []string{"band"}},
		{"broken detail", "en", store.TriggerDetector, `{"metrics":`, []string{"Dynamic-threshold detector"}, []string{"band"}},
		{"alertmanager", "en", store.TriggerAlertmanager, `{"alertname":"VLLMHighTTFT"}`, []string{"Alertmanager alert VLLMHighTTFT"}, nil},
		{"lost alerts", "en", store.TriggerAlertmanager, `{"alertname":"A","dropped_alerts":3,"truncated_alerts":2}`,
			[]string{"Alertmanager alert A (3 alerts of its group were past", "; Alertmanager left 2 more"}, nil},
		{"two bands left in Chinese", "zh-CN", store.TriggerDetector, detector, []string{
			"动态阈值检测器：TTFT 为 " + views.FormatValue(metrics.TTFT, 900) + "，高于预期区间", "（12.0 个标准误）；",
			"低于预期区间"}, []string{"band", "standard"}},
		{"lost alerts in Chinese", "zh-CN", store.TriggerAlertmanager, `{"alertname":"A","dropped_alerts":3,"truncated_alerts":2}`,
			[]string{"Alertmanager 告警 A（同组中有 3 条告警", "；Alertmanager 另有 2 条"}, []string{"alerts of"}},
	}
	for _, tc := range tests {
		inc := store.Incident{TriggerDetail: json.RawMessage(tc.detail)}
		inc.Trigger = tc.kind
		lang, _ := i18n.Parse(tc.lang)
		got := triggerTextIn(i18n.With(context.Background(), i18n.New(lang)), inc)
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
