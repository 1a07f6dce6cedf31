//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/store"
)

// Load run bounds: a fixed number of requests, and a time cap so a slow
// machine ends the run early instead of the suite's timeout ending it.
const (
	loadRequests = 2000
	loadWorkers  = 8
	loadCap      = 10 * time.Second
)

// TestLoadRun builds casebook, runs `casebook serve` on the demo cluster as
// a child process, and drives a bounded mix of page views and Alertmanager
// webhooks at it from this process over loopback. It prints throughput and
// latency percentiles per request kind, and asserts correctness only: no
// 5xx, and every alert the webhook acknowledged stored exactly once, also
// when Alertmanager retries a message.
func TestLoadRun(t *testing.T) {
	if testing.Short() {
		t.Skip("load run builds and starts casebook")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const token = "load-run-webhook-token"

	bin := testenv.GoBuild(t, ".", "casebook", "sqlite_fts5")
	port := testenv.FreePort(t)
	data := t.TempDir()
	cb := testenv.StartReady(t, "casebook serve", bin, port, "/readyz", 150*time.Second,
		"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data", data,
		"--webhook-token", token, "--log-level", "warn")
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: loadWorkers}}

	// One scope page and one incident page to load.
	overview := get(t, cb, client, "/")
	scopes := regexp.MustCompile(`href="(/scopes/[^"?]+)"`).FindAllStringSubmatch(overview, -1)
	if len(scopes) == 0 {
		cb.Fatalf(t, "the overview links no scope")
	}
	scopePath := scopes[0][1]
	model := strings.Split(strings.TrimPrefix(scopePath, "/scopes/"), "/")[0]
	seed := alertMessage(model, []string{"seed-0"}, time.Now().Add(-time.Minute))
	res := postAlerts(t, cb, client, token, seed)
	if len(res) != 1 || res[0].Status != "opened" || res[0].IncidentID == 0 {
		cb.Fatalf(t, "seed alert: %+v", res)
	}
	incidentPath := fmt.Sprintf("/incidents/%d", res[0].IncidentID)

	// Alertmanager resends a message whose reply it lost: the same alert
	// must come back as the incident it already opened.
	if again := postAlerts(t, cb, client, token, seed); len(again) != 1 || again[0].Status != "existing" || again[0].IncidentID != res[0].IncidentID {
		cb.Fatalf(t, "resent seed alert: %+v, want existing incident %d", again, res[0].IncidentID)
	}

	// The run: workers take request numbers in turn; every fourth is a
	// webhook of two new alerts, and every tenth webhook resends the
	// worker's previous message.
	kinds := []string{"overview", "scope", "incident", "webhook"}
	var (
		mu       sync.Mutex
		lat      = map[string][]time.Duration{}
		errs     []string
		acked    = map[string]int64{} // fingerprint -> incident id
		sent     = map[string]bool{}
		resent   atomic.Int64
		next     atomic.Int64
		startsAt = time.Now().Add(-30 * time.Second).UTC().Truncate(time.Second)
		deadline = time.Now().Add(loadCap)
		lastByW  = make([][]string, loadWorkers)
		fail     = func(s string) { mu.Lock(); errs = append(errs, s); mu.Unlock() }
		wg       sync.WaitGroup
	)
	began := time.Now()
	for w := range loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= loadRequests || time.Now().After(deadline) || ctx.Err() != nil {
					return
				}
				kind := kinds[i%int64(len(kinds))]
				var (
					status int
					body   []byte
					fps    []string
					took   time.Duration
				)
				switch kind {
				case "webhook":
					fps = []string{fmt.Sprintf("load-%d-a", i), fmt.Sprintf("load-%d-b", i)}
					if prev := lastByW[w]; prev != nil && i%40 == 3 {
						fps = prev // a retry of this worker's last message
						resent.Add(1)
					}
					lastByW[w] = fps
					msg := alertMessage(model, fps, startsAt)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cb.URL+"/api/v1/alerts/alertmanager", bytes.NewReader(msg))
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					status, body, took = do(client, req)
				default:
					path := map[string]string{"overview": "/", "scope": scopePath, "incident": incidentPath}[kind]
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb.URL+path, nil)
					status, body, took = do(client, req)
				}
				mu.Lock()
				lat[kind] = append(lat[kind], took)
				for _, fp := range fps {
					sent[fp] = true
				}
				mu.Unlock()
				switch {
				case status == 0:
					fail(fmt.Sprintf("%s: %s", kind, body))
				case status >= 500:
					fail(fmt.Sprintf("%s: HTTP %d: %.200s", kind, status, body))
				case status != http.StatusOK:
					fail(fmt.Sprintf("%s: HTTP %d: %.200s", kind, status, body))
				case kind == "webhook":
					var r struct{ Alerts []incident.AlertResult }
					if err := json.Unmarshal(body, &r); err != nil || len(r.Alerts) != len(fps) {
						fail(fmt.Sprintf("webhook reply %.200s: %v", body, err))
						continue
					}
					mu.Lock()
					for _, a := range r.Alerts {
						if a.Status != "opened" && a.Status != "existing" {
							errs = append(errs, fmt.Sprintf("alert %s: %s (%s)", a.Fingerprint, a.Status, a.Reason))
							continue
						}
						if id, ok := acked[a.Fingerprint]; ok && id != a.IncidentID {
							errs = append(errs, fmt.Sprintf("alert %s acknowledged as incident %d and %d", a.Fingerprint, id, a.IncidentID))
						}
						acked[a.Fingerprint] = a.IncidentID
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	if len(errs) > 0 {
		sort.Strings(errs)
		cb.Fatalf(t, "%d of the load run's requests failed, first ones:\n%s", len(errs), strings.Join(errs[:min(len(errs), 10)], "\n"))
	}
	total := 0
	for _, k := range kinds {
		total += len(lat[k])
	}
	report := loadReport(kinds, lat, elapsed, total)
	t.Logf("load run against the casebook child process, %d workers, %d alerts acknowledged (%d resent messages):\n%s",
		loadWorkers, len(acked), resent.Load(), report)
	fmt.Fprint(os.Stdout, report)
	if len(lat["webhook"]) == 0 || len(lat["overview"]) == 0 {
		t.Fatalf("the run made no webhook or page requests: %v", lat)
	}
	if len(acked) != len(sent) {
		t.Errorf("%d alerts sent, %d acknowledged", len(sent), len(acked))
	}
	// Resend one message of the run after it, whatever the run's length.
	for _, fps := range lastByW {
		if fps == nil {
			continue
		}
		for _, a := range postAlerts(t, cb, client, token, alertMessage(model, fps, startsAt)) {
			if a.Status != "existing" || a.IncidentID != acked[a.Fingerprint] {
				t.Errorf("resent alert %s: %s incident %d, want existing incident %d", a.Fingerprint, a.Status, a.IncidentID, acked[a.Fingerprint])
			}
		}
		break
	}

	// The storm: webhooks at a steady 200 alerts/s while pages load.
	for fp, id := range webhookStorm(t, ctx, cb, client, token, model, []string{"/", scopePath, incidentPath, "/incidents"}) {
		if prev, ok := acked[fp]; ok && prev != id {
			t.Errorf("storm alert %s acknowledged as %d and %d", fp, prev, id)
		}
		acked[fp] = id
	}

	// Stop the server and read its archive: every acknowledged alert is
	// there exactly once, under the incident the webhook named.
	cb.Stop()
	st, err := store.Open(ctx, filepath.Join(data, "casebook.db"))
	if err != nil {
		t.Fatalf("open the archive after the run: %v", err)
	}
	defer st.Close()
	stored := map[string][]int64{}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			t.Fatalf("list incidents: %v", err)
		}
		for _, s := range page.Items {
			if s.Alert != nil {
				stored[s.Alert.Fingerprint] = append(stored[s.Alert.Fingerprint], s.ID)
			}
		}
		if page.Next == (store.Cursor{}) {
			break
		}
		f.After = page.Next
	}
	acked["seed-0"] = res[0].IncidentID
	var wrong []string
	for fp, id := range acked {
		if ids := stored[fp]; len(ids) != 1 || ids[0] != id {
			wrong = append(wrong, fmt.Sprintf("%s: acknowledged as %d, stored as %v", fp, id, ids))
		}
	}
	for fp, ids := range stored {
		if _, ok := acked[fp]; !ok {
			wrong = append(wrong, fmt.Sprintf("%s: stored as %v but never acknowledged", fp, ids))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Errorf("%d alerts not stored exactly once:\n%s", len(wrong), strings.Join(wrong[:min(len(wrong), 10)], "\n"))
	}
}

// Storm bounds: alerts per second of webhooks, how long, page workers.
const (
	stormAlertsPerSec = 200
	stormFor          = 6 * time.Second
	stormPageWorkers  = 4
)

// webhookStorm sends Alertmanager webhooks (two alerts each) at
// stormAlertsPerSec for stormFor while page workers load pages, prints
// the achieved alert rate and the page latency percentiles, and fails on
// any page that is not a 200 and any webhook that is not acknowledged. It
// returns the acknowledged alerts.
func webhookStorm(t *testing.T, ctx context.Context, cb *testenv.Process, client *http.Client, token, model string, pages []string) map[string]int64 {
	t.Helper()
	var (
		mu       sync.Mutex
		acked    = map[string]int64{}
		pageLat  []time.Duration
		hookLat  []time.Duration
		errs     []string
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		inflight = make(chan struct{}, 64)
		startsAt = time.Now().Add(-10 * time.Second).UTC().Truncate(time.Second)
	)
	fail := func(s string) { mu.Lock(); errs = append(errs, s); mu.Unlock() }
	for w := range stormPageWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb.URL+pages[i%len(pages)], nil)
				status, body, took := do(client, req)
				mu.Lock()
				pageLat = append(pageLat, took)
				mu.Unlock()
				if status != http.StatusOK {
					fail(fmt.Sprintf("page %s during the storm: HTTP %d %.200s", pages[i%len(pages)], status, body))
				}
			}
		}()
	}
	interval := time.Second * 2 / stormAlertsPerSec // two alerts per message
	tick := time.NewTicker(interval)
	began := time.Now()
	sent := 0
	for time.Since(began) < stormFor && ctx.Err() == nil {
		<-tick.C
		fps := []string{fmt.Sprintf("storm-%d-a", sent), fmt.Sprintf("storm-%d-b", sent)}
		sent++
		inflight <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cb.URL+"/api/v1/alerts/alertmanager", bytes.NewReader(alertMessage(model, fps, startsAt)))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			status, body, took := do(client, req)
			var r struct{ Alerts []incident.AlertResult }
			if status != http.StatusOK || json.Unmarshal(body, &r) != nil || len(r.Alerts) != len(fps) {
				fail(fmt.Sprintf("storm webhook: HTTP %d %.200s", status, body))
				return
			}
			mu.Lock()
			defer mu.Unlock()
			hookLat = append(hookLat, took)
			for _, a := range r.Alerts {
				acked[a.Fingerprint] = a.IncidentID
			}
		}()
	}
	tick.Stop()
	sendTime := time.Since(began)
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		cb.Fatalf(t, "%d failures during the webhook storm, first ones:\n%s", len(errs), strings.Join(errs[:min(10, len(errs))], "\n"))
	}
	slices.Sort(pageLat)
	slices.Sort(hookLat)
	report := fmt.Sprintf("webhook storm: %d alerts in %s (%.0f alerts/s offered, target %d), %d page loads by %d workers\n"+
		"pages under the storm: p50 %s p99 %s; webhooks: p50 %s p99 %s\n",
		2*sent, sendTime.Round(time.Millisecond), float64(2*sent)/sendTime.Seconds(), stormAlertsPerSec, len(pageLat), stormPageWorkers,
		percentile(pageLat, 0.5).Round(10*time.Microsecond), percentile(pageLat, 0.99).Round(10*time.Microsecond),
		percentile(hookLat, 0.5).Round(10*time.Microsecond), percentile(hookLat, 0.99).Round(10*time.Microsecond))
	t.Log(report)
	fmt.Fprint(os.Stdout, report)
	if len(pageLat) == 0 || len(acked) != 2*sent {
		t.Fatalf("storm: %d page loads, %d of %d alerts acknowledged", len(pageLat), len(acked), 2*sent)
	}
	return acked
}

// loadReport is one line per request kind: count, throughput over the
// whole run, p50 and p99.
func loadReport(kinds []string, lat map[string][]time.Duration, elapsed time.Duration, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %6s %9s %9s %9s\n", "kind", "count", "req/s", "p50", "p99")
	for _, k := range kinds {
		d := slices.Clone(lat[k])
		slices.Sort(d)
		fmt.Fprintf(&b, "%-9s %6d %9.1f %9s %9s\n", k, len(d), float64(len(d))/elapsed.Seconds(),
			percentile(d, 0.50).Round(10*time.Microsecond), percentile(d, 0.99).Round(10*time.Microsecond))
	}
	fmt.Fprintf(&b, "%-9s %6d %9.1f   (%s)\n", "all", total, float64(total)/elapsed.Seconds(), elapsed.Round(time.Millisecond))
	return b.String()
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// alertMessage is an Alertmanager webhook message (version 4) with one
// firing alert per fingerprint on the model.
func alertMessage(model string, fingerprints []string, startsAt time.Time) []byte {
	var alerts []webhookAlert
	for _, fp := range fingerprints {
		alerts = append(alerts, webhookAlert{
			Status:      "firing",
			Labels:      map[string]string{"alertname": "CasebookLoadRun", "model_name": model, "severity": "warning", "run": fp},
			Annotations: map[string]string{"summary": "load run alert " + fp},
			StartsAt:    startsAt, Fingerprint: fp,
		})
	}
	return webhookBody("CasebookLoadRun", model, alerts)
}

// webhookAlert is one alert of an Alertmanager webhook message.
type webhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// webhookBody is an Alertmanager (version 4) webhook message grouping
// alerts by alertname.
func webhookBody(alertname, model string, alerts []webhookAlert) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "4", "groupKey": "{}:{alertname=\"" + alertname + "\"}", "status": "firing", "receiver": "casebook",
		"groupLabels": map[string]string{"alertname": alertname}, "commonLabels": map[string]string{"model_name": model},
		"externalURL": "http://alertmanager.invalid", "alerts": alerts,
	})
	return b
}

func postAlerts(t *testing.T, cb *testenv.Process, client *http.Client, token string, msg []byte) []incident.AlertResult {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, cb.URL+"/api/v1/alerts/alertmanager", bytes.NewReader(msg))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	status, body, _ := do(client, req)
	if status != http.StatusOK {
		cb.Fatalf(t, "POST webhook: HTTP %d: %s", status, body)
	}
	var r struct{ Alerts []incident.AlertResult }
	if err := json.Unmarshal(body, &r); err != nil {
		cb.Fatalf(t, "webhook reply %s: %v", body, err)
	}
	return r.Alerts
}

func get(t *testing.T, cb *testenv.Process, client *http.Client, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, cb.URL+path, nil)
	status, body, _ := do(client, req)
	if status != http.StatusOK {
		cb.Fatalf(t, "GET %s: HTTP %d: %.300s", path, status, body)
	}
	return string(body)
}

// do sends one request and reads the whole reply; status 0 means the
// request failed, with the error as the body.
func do(client *http.Client, req *http.Request) (int, []byte, time.Duration) {
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error()), time.Since(start)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		return 0, []byte("read reply: " + err.Error()), took
	}
	return resp.StatusCode, body, took
}
