//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/promrules"
	"github.com/casebook/casebook/store"
)

// TestPipeline runs the whole alerting path against real servers: the
// simulator serves the cluster, a real Prometheus scrapes it and evaluates
// the alerting rules `casebook rules --alerts` generates, a real
// Alertmanager routes the firing alert to Casebook's webhook with a bearer
// token, and Casebook, in remote mode against that Prometheus, opens the
// incident with the right diagnosis. Clearing the fault resolves the alert.
// It asserts on the stored incident.
func TestPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("pipeline test starts real servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const token = "pipeline-secret-token"

	// 1. The simulated cluster, standalone.
	simAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	simDone := runInBackground(t, ctx, "casebook simulate", "simulate", "--listen", simAddr, "--seed", "7")
	simURL := "http://" + simAddr
	testenv.WaitFor(t, ctx, 30*time.Second, "the simulator", func() (bool, error) { return httpOK(simURL + "/targets") })

	// 2. Casebook in remote mode; Prometheus comes up next, Casebook copes.
	promPort := testenv.FreePort(t)
	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	dataDir := t.TempDir()
	cbDone := runInBackground(t, ctx, "casebook serve", "serve", "--listen", cbAddr, "--data", dataDir,
		"--prometheus-url", fmt.Sprintf("http://127.0.0.1:%d", promPort), "--webhook-token", token, "--log-level", "warn")

	// 3. Alertmanager routes everything to Casebook's webhook.
	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: casebook
  group_by: [alertname, model_name, pod]
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
- name: casebook
  webhook_configs:
  - url: http://%s/api/v1/alerts/alertmanager
    send_resolved: true
    http_config:
      authorization:
        type: Bearer
        credentials: %s
`, cbAddr, token))

	// 4. Prometheus scrapes the simulator with its own scrape config and
	// evaluates Casebook's generated alerting rules, quickly.
	rules, err := promrules.Alerts(promrules.Options{
		Window: 30 * time.Second, For: 5 * time.Second, EvalInterval: time.Second,
		Thresholds: map[string]float64{metrics.ErrorRate: 0.05},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Only the error-rate alert matters here; other fallbacks may fire on
	// the simulator's normal load and would open unrelated incidents.
	rules.Groups[0].Rules = onlyMetric(rules.Groups[0].Rules, metrics.ErrorRate)
	rulesYAML, err := rules.YAML()
	if err != nil {
		t.Fatal(err)
	}
	scrape := fetch(t, simURL+"/prometheus.yml")
	promDir := t.TempDir()
	rulesPath := testenv.WriteFile(t, promDir, "casebook-alerts.yml", string(rulesYAML))
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 2s\n  evaluation_interval: 1s\nrule_files: [%q]\nalerting:\n  alertmanagers:\n  - static_configs:\n    - targets: [%q]\n%s",
		rulesPath, strings.TrimPrefix(am.URL, "http://"), scrape)
	prom := testenv.StartPrometheusOnPort(t, promCfg, promPort)
	_ = prom

	testenv.WaitFor(t, ctx, 60*time.Second, "casebook to serve", func() (bool, error) { return httpOK("http://" + cbAddr + "/healthz") })

	// 5. Inject engine errors on one instance.
	body := `{"cause":"engine_errors","model":"llama-3.1-8b-instruct","instance":"llama-8b-0","severity":1}`
	resp, err := http.Post(simURL+"/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("inject fault: %s", resp.Status)
	}

	// 6. The incident opens, diagnosed as engine errors.
	st, err := store.Open(ctx, filepath.Join(dataDir, "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var inc store.Summary
	testenv.WaitFor(t, ctx, 90*time.Second, "an incident for llama-8b-0", func() (bool, error) {
		page, err := st.List(ctx, store.ListFilter{Instance: "llama-8b-0"})
		if err != nil || len(page.Items) == 0 {
			return false, err
		}
		inc = page.Items[0]
		return true, nil
	})
	if inc.Trigger != store.TriggerAlertmanager || inc.Alert == nil {
		t.Fatalf("incident %d was not opened by the alert: %+v", inc.ID, inc)
	}
	if inc.RootCause != metrics.CauseEngineErrors {
		full, _ := st.Incident(ctx, inc.ID)
		t.Fatalf("incident %d diagnosed %q, want %q; snapshot current: %v", inc.ID, inc.RootCause, metrics.CauseEngineErrors, full.Snapshot.Current)
	}

	// 7. Clearing the fault resolves the alert on the same incident.
	req, _ := http.NewRequest(http.MethodDelete, simURL+"/faults", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	testenv.WaitFor(t, ctx, 120*time.Second, "the alert to resolve", func() (bool, error) {
		got, err := st.Incident(ctx, inc.ID)
		if err != nil {
			return false, err
		}
		return got.Alert != nil && !got.Alert.ResolvedAt.IsZero(), nil
	})
	page, err := st.List(ctx, store.ListFilter{Instance: "llama-8b-0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 {
		t.Errorf("want exactly one incident for the one alert, got %d", len(page.Items))
	}
	cancel()
	<-cbDone
	<-simDone
}

func onlyMetric(rules []promrules.Rule, id string) []promrules.Rule {
	var out []promrules.Rule
	for _, r := range rules {
		if r.Labels["casebook_metric"] == id {
			out = append(out, r)
		}
	}
	return out
}

// runInBackground runs a casebook subcommand in this process until ctx ends,
// logging its output when the test fails.
func runInBackground(t *testing.T, ctx context.Context, name string, args ...string) <-chan error {
	t.Helper()
	var out bytes.Buffer
	w := &lockedWriter{w: &out}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, os.Getenv, w, w) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last output of %s:\n%s", name, tail(w.String(), 3000))
		}
	})
	return done
}

func httpOK(url string) (bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	return string(b)
}

// lockedWriter lets the command's goroutines and the test share a buffer.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
