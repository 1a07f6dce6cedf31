//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/telemetry/sim"
	"github.com/casebook/casebook/views"
)

// TestThrottlingBehindServiceMonitor runs Casebook in remote mode against
// a real Prometheus that scrapes the simulated cluster the way a
// ServiceMonitor scrapes dcgm-exporter with its Helm chart's defaults (the
// workload's pod arrives as exported_pod) and with dcgm-exporter's default
// counter file (no DCGM_FI_PROF_* fields). Prometheus holds 90 minutes of
// healthy history, back-filled with promtool as an operator would, so the
// diagnosis has its hour of baseline. A throttled GPU group on one
// instance must show on that instance's scope page only, and "Diagnose
// now" there must name gpu_throttling.
func TestThrottlingBehindServiceMonitor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	cluster := sim.New(sim.Options{Seed: 7, Models: 1, DCGMFields: sim.DCGMDefault})
	targets := cluster.Targets()
	hot, cool := targets[0], targets[1]
	simSrv := httptest.NewServer(cluster.Handler())
	defer simSrv.Close()
	host := strings.TrimPrefix(simSrv.URL, "http://")

	// 1. Ninety healthy minutes, labelled as the scrape below stores them.
	history := filepath.Join(t.TempDir(), "history.om")
	f, err := os.Create(history)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = cluster.WriteOpenMetrics(f, host, sim.ScrapeLabelsKubernetes, now.Add(-90*time.Minute), now, 15*time.Second)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	prom := testenv.PrometheusWithHistory(t, "global:\n  scrape_interval: 5s\n"+cluster.PrometheusConfigFor(host, sim.ScrapeLabelsKubernetes), history)
	go cluster.Run(ctx, time.Second)

	// 2. Casebook in remote mode against it.
	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	dataDir := t.TempDir()
	cbDone := runInBackground(t, ctx, "casebook serve", "serve", "--listen", cbAddr, "--data", dataDir,
		"--prometheus-url", prom.URL, "--log-level", "warn")
	base := "http://" + cbAddr
	testenv.WaitFor(t, ctx, 60*time.Second, "casebook to serve", func() (bool, error) { return httpOK(base + "/healthz") })

	// The back-fill and the live scrape are one series per GPU: same
	// labels, so rates and baselines run across the seam.
	gpus := promQuery(t, prom.URL, `count(count_over_time(DCGM_FI_DEV_SM_CLOCK{exported_pod="`+hot.Instance+`"}[2h]))`)
	live := promQuery(t, prom.URL, `count(DCGM_FI_DEV_SM_CLOCK{exported_pod="`+hot.Instance+`"})`)
	if gpus != live || live < 1 {
		t.Fatalf("%g GPU series over two hours, %g live: the back-fill's labels differ from the scrape's", gpus, live)
	}

	// 3. The storage page names the detected join.
	storage := fetch(t, base+"/storage")
	if !strings.Contains(storage, "exported_pod") {
		t.Errorf("storage page does not name exported_pod as the join label")
	}

	// 4. Throttle the hot instance's GPUs from now on.
	if _, err := cluster.Inject(sim.Fault{Cause: metrics.CauseGPUThrottling,
		Scope: metrics.Scope{Model: hot.Model, Instance: hot.Instance}, Severity: 0.9}); err != nil {
		t.Fatal(err)
	}
	scopeURL := func(tg sim.Target) string {
		return base + "/scopes/" + url.PathEscape(tg.Model) + "/" + url.PathEscape(tg.Instance)
	}
	// Diagnose once the minute the snapshot averages over is throttled:
	// the hot group's clock at least 10 % under the healthy one's.
	ratio := `avg(avg_over_time(DCGM_FI_DEV_SM_CLOCK{exported_pod="` + hot.Instance + `"}[1m])) / avg(avg_over_time(DCGM_FI_DEV_SM_CLOCK{exported_pod="` + cool.Instance + `"}[1m]))`
	testenv.WaitFor(t, ctx, 3*time.Minute, "a throttled minute on "+hot.Instance, func() (bool, error) {
		r := promQuery(t, prom.URL, ratio)
		return r > 0 && r < 0.9, nil
	})
	clockOff := regexp.MustCompile(`<li class="[^"]*" data-metric="` + metrics.SMClock + `"`)
	var hotPage string
	// The page lists a metric off baseline once five one-minute readings
	// deviate (diagnose.StatusDeviations).
	testenv.WaitFor(t, ctx, 7*time.Minute, "the SM clock off baseline on "+hot.Instance+"'s scope page", func() (bool, error) {
		hotPage = fetch(t, scopeURL(hot))
		return clockOff.MatchString(hotPage), nil
	})
	if strings.Contains(hotPage, `data-testid="scope-gpu-join"`) {
		t.Errorf("%s's scope page says its GPUs did not join", hot.Instance)
	}
	if coolPage := fetch(t, scopeURL(cool)); clockOff.MatchString(coolPage) {
		t.Errorf("%s's scope page shows the throttled clock of %s: GPUs joined to the wrong engine", cool.Instance, hot.Instance)
	}
	// The scope page says the profiling fields are absent.
	if !strings.Contains(hotPage, `data-metric="`+metrics.TensorActive+`"`) {
		t.Errorf("%s's scope page does not list tensor activity as missing under the default counter file", hot.Instance)
	}

	// 5. "Diagnose now" on the hot instance, as a browser posts the form.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(scopeURL(hot))
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no form token on the scope page")
	}
	resp, err = client.PostForm(scopeURL(hot)+"/diagnose", url.Values{"csrf_token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		t.Fatalf("diagnose now: %s, want a redirect to the incident", resp.Status)
	}
	st, err := store.Open(ctx, filepath.Join(dataDir, "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The detector may have opened its own incident while the page
	// waited for five readings; the one to read is "Diagnose now"'s.
	list, err := st.List(ctx, store.ListFilter{Instance: hot.Instance})
	if err != nil {
		t.Fatal(err)
	}
	var manual []store.Summary
	for _, it := range list.Items {
		if it.Trigger == store.TriggerManual {
			manual = append(manual, it)
		}
	}
	if len(manual) != 1 {
		t.Fatalf("incidents for %s: %v, want one from \"Diagnose now\"", hot.Instance, list.Items)
	}
	inc, err := st.Incident(ctx, manual[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	cur := inc.Snapshot.Current
	t.Logf("snapshot of %s: SM clock %.0f MHz, temperature %.0f C, power %.0f W; %d history points",
		hot.Instance, cur[metrics.SMClock], cur[metrics.GPUTemp], cur[metrics.Power], len(inc.Snapshot.History))
	if len(inc.Snapshot.History) < 60 {
		t.Errorf("%d history points: the back-filled hour did not reach the baseline", len(inc.Snapshot.History))
	}
	if inc.RootCause != metrics.CauseGPUThrottling {
		t.Fatalf("diagnosed %q, want %q (snapshot %v)", inc.RootCause, metrics.CauseGPUThrottling, cur)
	}
	cancel()
	<-cbDone
}

// promQuery returns the single value of an instant query, or -1 when the
// answer is empty.
func promQuery(t *testing.T, promURL, q string) float64 {
	t.Helper()
	body := fetch(t, promURL+"/api/v1/query?query="+url.QueryEscape(q))
	m := regexp.MustCompile(`"value":\[[0-9.]+,"([^"]+)"\]`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	var v float64
	if _, err := fmt.Sscan(m[1], &v); err != nil {
		t.Fatalf("query %s: value %q: %v", q, m[1], err)
	}
	return v
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUnknownLayoutsKeepServing scrapes sources Casebook cannot fully
// read: an engine from a vLLM release that renamed everything but its
// queue gauges, an engine with none of the expected names, and a
// dcgm-exporter with the default counters whose series carry neither a
// pod nor a host label. The console must keep serving, say on the
// storage and scope pages which metrics are missing and why, and a
// diagnosis there must name what it could not read.
func TestUnknownLayoutsKeepServing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded scraper")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pages := map[string]string{
		"/future/metrics": `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="future-model"} 3.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="future-model"} 0.0
# TYPE vllm:request_latency_v2_seconds histogram
vllm:request_latency_v2_seconds_bucket{engine="0",le="1.0",model_name="future-model"} 7.0
vllm:request_latency_v2_seconds_bucket{engine="0",le="+Inf",model_name="future-model"} 9.0
vllm:request_latency_v2_seconds_sum{engine="0",model_name="future-model"} 8.5
vllm:request_latency_v2_seconds_count{engine="0",model_name="future-model"} 9.0
`,
		"/none/metrics": `# TYPE engine_requests_running gauge
engine_requests_running{model="other-model"} 2
`,
		"/gpu/metrics": `# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0a1b"} 71
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-0a1b"} 1980
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0a1b"} 412.5
`,
	}
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, p)
	}))
	defer src.Close()

	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	dataDir := t.TempDir()
	cbDone := runInBackground(t, ctx, "casebook serve", "serve", "--listen", cbAddr, "--data", dataDir, "--log-level", "warn",
		"--scrape-interval", "1s", "--targets", "fut-0="+src.URL+"/future/metrics,"+src.URL+"/none/metrics,"+src.URL+"/gpu/metrics")
	base := "http://" + cbAddr
	testenv.WaitFor(t, ctx, 60*time.Second, "casebook to serve", func() (bool, error) { return httpOK(base + "/healthz") })
	scope := base + "/scopes/future-model/fut-0"
	testenv.WaitFor(t, ctx, 60*time.Second, "the future engine's scope", func() (bool, error) { return httpOK(scope) })

	for _, path := range []string{"/", "/readyz", "/storage"} {
		if ok, err := httpOK(base + path); !ok {
			t.Errorf("GET %s: not 200 (%v)", path, err)
		}
	}
	storage := fetch(t, base+"/storage")
	page := fetch(t, scope)
	for name, body := range map[string]string{"storage": storage, "scope": page} {
		for _, want := range []string{
			// Missing engine metrics, each with the series it lacks.
			`data-metric="` + metrics.TTFT + `"`, "vllm:time_to_first_token_seconds",
			`data-metric="` + metrics.ErrorRate + `"`,
			// No profiling fields, and the rules that read what is missing.
			name + `-profiling`, name + `-rule-gaps`, `data-cause="` + metrics.CauseKVCacheEviction + `"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s page lacks %q", name, want)
			}
		}
	}
	// The GPUs carry no pod or host label: nothing joins, and the pages say so.
	if !strings.Contains(page, `data-testid="scope-gpu-join"`) {
		t.Errorf("scope page does not say its GPUs did not join")
	}
	if !strings.Contains(storage, `data-testid="storage-join-text" class="flash"`) {
		t.Errorf("storage page does not flag the GPU join")
	}
	// GPU_UTIL is there: SM activity is missing for the join, not for
	// the counter file, and the profiling sentence does not blame it.
	sentence, _, _ := strings.Cut(page[max(0, strings.Index(page, `data-testid="scope-profiling"`)):], "</p>")
	if !strings.Contains(sentence, "are missing") || strings.Contains(sentence, views.MetricLabel(metrics.SMUtil)) {
		t.Errorf("scope page blames the counter file for SM activity, which is missing because the GPUs did not join")
	}

	// Diagnose now: the diagnosis names what it could not read.
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(scope)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(readAll(t, resp))
	if m == nil {
		t.Fatal("no form token on the scope page")
	}
	resp, err = client.PostForm(scope+"/diagnose", url.Values{"csrf_token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	incident := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, "/incidents/") {
		t.Fatalf("diagnose now: %s at %s, want the incident page", resp.Status, resp.Request.URL)
	}
	i := strings.Index(incident, `data-testid="diagnosis-missing"`)
	if i < 0 {
		t.Fatalf("the incident page does not say what the rules could not read")
	}
	missing := incident[i:min(len(incident), i+2000)]
	for _, id := range []string{metrics.TTFT, metrics.KVCacheUsage, metrics.DRAMActive} {
		if !strings.Contains(missing, views.MetricLabel(id)) {
			t.Errorf("diagnosis does not name %s as unavailable: %.300s", id, missing)
		}
	}
	cancel()
	<-cbDone
}
