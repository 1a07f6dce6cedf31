//go:build integration

package watch

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose/forecast"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
)

// TestAlertsArriveAtARealAlertmanager posts a firing alert to a real
// Alertmanager, reads it back from GET /api/v2/alerts, then resolves it.
func TestAlertsArriveAtARealAlertmanager(t *testing.T) {
	amp := testenv.Alertmanager(t, `
route:
  receiver: nowhere
receivers:
- name: nowhere
`)
	am, err := NewAlertmanager(AlertmanagerOptions{URL: amp.URL, Backoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Second)
	act := Active{
		Alert: forecast.Alert{Scope: testScope, Metric: metrics.TTFT, State: forecast.Firing, Start: now.Add(-3 * time.Minute),
			At: now, Value: 900, Forecast: 400, Lower: 300, Upper: 500, Z: 8},
		Incident: 7, URL: "http://casebook.test/incidents/7",
	}
	if err := am.Post(ctx, []Active{act}); err != nil {
		amp.Fatalf(t, "post: %v", err)
	}

	type gettable struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		GeneratorURL string            `json:"generatorURL"`
		Status       struct {
			State string `json:"state"`
		} `json:"status"`
	}
	read := func() []gettable {
		url := amp.URL + "/api/v2/alerts?filter=alertname%3D%22" + AlertName + "%22"
		resp, err := http.Get(url)
		if err != nil {
			amp.Fatalf(t, "get alerts: %v", err)
		}
		defer resp.Body.Close()
		var as []gettable
		if err := json.NewDecoder(resp.Body).Decode(&as); err != nil {
			amp.Fatalf(t, "decode alerts: %v", err)
		}
		return as
	}
	var got []gettable
	testenv.WaitFor(t, ctx, 10*time.Second, "the alert in the Alertmanager", func() (bool, error) {
		got = read()
		return len(got) == 1, nil
	})
	a := got[0]
	want := map[string]string{"alertname": AlertName, "model_name": testScope.Model, "pod": testScope.Instance,
		"casebook_metric": metrics.TTFT, "severity": "critical"}
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if a.GeneratorURL != act.URL || a.Annotations["summary"] == "" || a.Status.State != "active" {
		t.Errorf("alert %+v: want the incident URL, a summary, active", a)
	}

	// Resolved: the Alertmanager no longer lists it as active.
	act.EndsAt = now
	if err := am.Post(ctx, []Active{act}); err != nil {
		amp.Fatalf(t, "post resolved: %v", err)
	}
	testenv.WaitFor(t, ctx, 10*time.Second, "the alert resolved", func() (bool, error) { return len(read()) == 0, nil })
}
