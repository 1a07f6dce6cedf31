package incident_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/casebook/casebook/incident"
)

func TestDecodeTriggerDetail(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      incident.TriggerDetail
		err       bool
	}{
		{"none", ``, incident.TriggerDetail{}, false},
		{"webhook", `{"alertname":"VLLMHighTTFT","labels":{"pod":"p"},"dropped_alerts":3,"truncated_alerts":2,"truncated":true}`,
			incident.TriggerDetail{AlertName: "VLLMHighTTFT", DroppedAlerts: 3, TruncatedAlerts: 2}, false},
		{"detector", `{"source":"dynamic-threshold","metrics":[{"metric":"ttft_ms","value":900,"forecast":400,"lower":300,"upper":500,"outside":400,"outside_se":12}]}`,
			incident.TriggerDetail{Bands: []incident.BandExit{{Metric: "ttft_ms", Value: 900, Lower: 300, Upper: 500, Outside: 400, OutsideSE: 12}}}, false},
		{"older detector", `{"metric":"ttft_ms"}`, incident.TriggerDetail{Metric: "ttft_ms"}, false},
		{"broken", `{"metrics":`, incident.TriggerDetail{}, true},
		{"wrong type", `{"alertname":7}`, incident.TriggerDetail{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := incident.DecodeTriggerDetail(json.RawMessage(tc.raw))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzDecodeTriggerDetail: any stored detail decodes, and then encodes
// and decodes to the same detail, or is refused with an error that says
// what failed and no partial detail.
func FuzzDecodeTriggerDetail(f *testing.F) {
	for _, s := range []string{``, `{}`, `null`, `{"alertname":"a","dropped_alerts":1}`, `{"metrics":[{"metric":"x","value":1e308}]}`, `{"metrics":{}}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := incident.DecodeTriggerDetail(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "incident: decode trigger detail: ") || !reflect.DeepEqual(d, incident.TriggerDetail{}) {
				t.Fatalf("error %q with detail %+v", err, d)
			}
			return
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("a decoded detail does not encode: %v", err)
		}
		again, err := incident.DecodeTriggerDetail(b)
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, d)
		}
	})
}
