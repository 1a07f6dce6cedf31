package incidenttest

import "fmt"

// AlertBody is a webhook message of one alert as Alertmanager 0.28 sends
// it (with keys Casebook does not read, which it must ignore), with an
// extra top-level key when extra is set (`,"key":value`). A resolved
// alert ends six minutes after it started.
func AlertBody(status, fingerprint, model, pod, summary string, extra string) string {
	ends := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		ends = "2026-11-30T04:58:00Z"
	}
	return fmt.Sprintf(`{"version":"4","groupKey":"{}:{alertname=\"VLLMHighTTFT\"}","truncatedAlerts":0,"status":%q,"receiver":"casebook",
		"groupLabels":{"alertname":"VLLMHighTTFT"},"commonLabels":{"alertname":"VLLMHighTTFT","severity":"critical"},"commonAnnotations":{},
		"routeLabels":{},"externalURL":"http://am:9093","notification_reason":"first notification"%s,
		"alerts":[{"status":%q,"labels":{"alertname":"VLLMHighTTFT","severity":"critical","model_name":%q,"pod":%q},
		"annotations":{"summary":%q},"startsAt":"2026-11-30T04:52:00.123456789Z","endsAt":%q,
		"generatorURL":"http://prom:9090/graph","fingerprint":%q,"futureKey":{"nested":true}}]}`,
		status, extra, status, model, pod, summary, ends, fingerprint)
}
