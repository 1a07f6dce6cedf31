//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/telemetry/sim"
)

// Fleet load test size: 16 models of 8 replicas on 2 GPUs each.
const (
	fleetModels    = 16
	fleetInstances = 8
	fleetScopes    = fleetModels * (fleetInstances + 1) // every model and every instance
	fleetRounds    = 5                                  // loads of each page kind
)

// TestFleetRemoteLoad runs a 128-engine, 256-GPU simulated fleet scraped by
// a real Prometheus every 5 s, with Casebook in remote mode and its
// detector on. It checks that every page answers inside the console's
// request timeout, that an Alertmanager message about fleet instances
// opens its incidents, and that the detector evaluates every scope within
// its interval; it prints the page latencies and the detector's round, and
// photographs the fleet overview at desktop and phone width.
func TestFleetRemoteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a simulated fleet, Prometheus and casebook")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	const token = "fleet-load-webhook-token"

	simAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	simDone := runInBackground(t, ctx, "casebook simulate (fleet)", "simulate", "--listen", simAddr, "--seed", "11",
		"--models", strconv.Itoa(fleetModels), "--instances", strconv.Itoa(fleetInstances), "--gpus", "2")
	simURL := "http://" + simAddr
	testenv.WaitFor(t, ctx, 60*time.Second, "the simulated fleet", func() (bool, error) { return httpOK(simURL + "/targets") })

	promPort := testenv.FreePort(t)
	testenv.StartPrometheusOnPort(t, "global:\n  scrape_interval: 5s\n"+fetch(t, simURL+"/prometheus.yml"), promPort)
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)

	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cbDone := runInBackground(t, ctx, "casebook serve (fleet)", "serve", "--listen", cbAddr, "--data", t.TempDir(),
		"--prometheus-url", promURL, "--scrape-interval", "5s", "--detect", "on", "--detect-interval", "30s",
		"--webhook-token", token, "--log-level", "warn")
	base := "http://" + cbAddr
	defer func() { cancel(); <-cbDone; <-simDone }()

	testenv.WaitFor(t, ctx, 3*time.Minute, "every engine's series in Prometheus", func() (bool, error) {
		n := promQuery(t, promURL, `count(count by (pod) (vllm:num_requests_running))`)
		return n >= fleetModels*fleetInstances, nil
	})
	testenv.WaitFor(t, ctx, 2*time.Minute, "the overview to list every model", func() (bool, error) {
		body, code := getPage(t, base+"/")
		return code == http.StatusOK && strings.Count(body, `data-testid="model-group"`) == fleetModels, nil
	})
	// Two minutes of history, so snapshots and charts have something to
	// read.
	time.Sleep(2 * time.Minute)

	overview, _ := getPage(t, base+"/")
	if m := regexp.MustCompile(`data-testid="fleet-engines"><b>(\d+)</b>`).FindStringSubmatch(overview); m == nil || m[1] != strconv.Itoa(fleetModels*fleetInstances) {
		t.Errorf("the fleet summary counts engines %v, want %d", m, fleetModels*fleetInstances)
	}
	model := sim.Models[1].Name
	instance := sim.Models[1].PodPrefix + "-3"
	pages := map[string]string{
		"overview":        "/",
		"overview search": "/?q=" + url.QueryEscape(model),
		"model scope":     route.URL(route.ScopeModel, model),
		"instance scope":  route.URL(route.ScopeInstance, model, instance),
		"incidents":       route.URL(route.IncidentList),
		"storage":         route.URL(route.Storage),
	}
	kinds := make([]string, 0, len(pages))
	for k := range pages {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	client := &http.Client{Timeout: 45 * time.Second} // past the console's own 30 s request timeout
	lat := map[string][]time.Duration{}
	began := time.Now()
	for range fleetRounds {
		for _, k := range kinds {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+pages[k], nil)
			code, body, d := do(client, req)
			if code != http.StatusOK {
				t.Errorf("%s (%s) answered %d after %s: %.300s", k, pages[k], code, d, body)
			}
			lat[k] = append(lat[k], d)
		}
	}
	fmt.Printf("fleet of %d engines on %d GPUs, remote mode (Prometheus, 5 s scrape), %d loads of each page one at a time:\n%s",
		fleetModels*fleetInstances, 2*fleetModels*fleetInstances, fleetRounds, loadReport(kinds, lat, time.Since(began), fleetRounds*len(kinds)))

	// An Alertmanager group about eight instances of one model opens an
	// incident for each.
	var fps []string
	for i := range fleetInstances {
		fps = append(fps, fmt.Sprintf("%s-%d", sim.Models[2].PodPrefix, i))
	}
	msg := fleetAlertMessage(sim.Models[2].Name, fps, time.Now().Add(-2*time.Minute))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+route.URL(route.APIAlertmanager), bytes.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	code, body, d := do(client, req)
	if code != http.StatusOK {
		t.Fatalf("webhook answered %d after %s: %.500s", code, d, body)
	}
	var reply struct{ Alerts []incident.AlertResult }
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatalf("webhook reply %.500s: %v", body, err)
	}
	opened := 0
	for _, r := range reply.Alerts {
		if r.Status == "opened" {
			opened++
		}
	}
	if opened != fleetInstances {
		t.Errorf("the webhook opened %d incidents, want %d: %+v", opened, fleetInstances, reply.Alerts)
	}
	fmt.Printf("webhook with %d alerts answered in %s\n", fleetInstances, d.Round(time.Millisecond))

	// The detector evaluates every scope within its interval once every
	// scope has been warmed up (a steady round: data-warmed="0").
	var round string
	testenv.WaitFor(t, ctx, 4*time.Minute, "a steady detector round over every scope", func() (bool, error) {
		body, code := getPage(t, base+route.URL(route.Storage))
		round = regexp.MustCompile(`<section[^>]*data-testid="detector-round"[^>]*>`).FindString(body)
		return code == http.StatusOK && strings.Contains(round, `data-scopes="`+strconv.Itoa(fleetScopes)+`"`) &&
			strings.Contains(round, `data-warmed="0"`), nil
	})
	if strings.Contains(round, "data-behind") {
		t.Errorf("the detector falls behind at fleet size: %s", round)
	}
	fmt.Printf("steady detector round over the fleet: %s\n", round)

	br := testenv.Chromium(t, chromedp.Flag("hide-scrollbars", true))
	f := &flow{t: t, br: br, base: base}
	f.openAt(1280, 800, "fleet-overview-1280", "/", `[data-testid="fleet-summary"]`)
	f.openAt(390, 844, "fleet-overview-390", "/", `[data-testid="fleet-summary"]`)
	f.openAt(1280, 800, "fleet-overview-search-1280", "/?q="+url.QueryEscape(model), `[data-testid="model-group"]`)
	f.openAt(1280, 800, "fleet-storage-1280", route.URL(route.Storage), `[data-testid="detector-round"]`)
	f.openAt(390, 844, "fleet-storage-390", route.URL(route.Storage), `[data-testid="detector-round"]`)
	if errs := br.PageErrors(); len(errs) > 0 {
		t.Errorf("the pages reported script errors:\n%s", strings.Join(errs, "\n"))
	}
}

// fleetAlertMessage is an Alertmanager webhook message with one firing
// alert per pod of model, labelled as a Prometheus rule over vLLM's
// series labels them.
func fleetAlertMessage(model string, pods []string, startsAt time.Time) []byte {
	var alerts []webhookAlert
	for i, p := range pods {
		alerts = append(alerts, webhookAlert{
			Status:      "firing",
			Labels:      map[string]string{"alertname": "HighTTFT", "model_name": model, "pod": p, "severity": "warning"},
			Annotations: map[string]string{"summary": "TTFT above its objective on " + p},
			StartsAt:    startsAt, Fingerprint: fmt.Sprintf("%016x", i+1),
		})
	}
	return webhookBody("HighTTFT", model, alerts)
}
