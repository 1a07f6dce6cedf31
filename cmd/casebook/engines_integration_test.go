//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// TestMixedFleetRemote runs a mixed fleet against real servers: the
// simulator serves a vLLM model and an SGLang model, a real Prometheus
// scrapes both with its own scrape config, and Casebook in remote mode
// reads each through its own engine's catalog entries. A fault injected on
// the SGLang model is diagnosed from Prometheus's data, and the SGLang
// scope's snapshot says which metrics SGLang cannot provide.
func TestMixedFleetRemote(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	simAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	simDone := runInBackground(t, ctx, "casebook simulate", "simulate", "--listen", simAddr, "--seed", "7",
		"--models", "2", "--engine", "vllm,sglang")
	simURL := "http://" + simAddr
	testenv.WaitFor(t, ctx, 30*time.Second, "the simulator", func() (bool, error) { return httpOK(simURL + "/targets") })

	promPort := testenv.FreePort(t)
	promCfg := "global:\n  scrape_interval: 2s\n" + fetch(t, simURL+"/prometheus.yml")
	testenv.StartPrometheusOnPort(t, promCfg, promPort)
	promURL := fmt.Sprintf("http://127.0.0.1:%d", promPort)

	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	dataDir := t.TempDir()
	cbDone := runInBackground(t, ctx, "casebook serve", "serve", "--listen", cbAddr, "--data", dataDir,
		"--prometheus-url", promURL, "--scrape-interval", "2s", "--log-level", "warn")
	cbURL := "http://" + cbAddr
	testenv.WaitFor(t, ctx, 60*time.Second, "casebook to serve", func() (bool, error) { return httpOK(cbURL + "/healthz") })

	// Both engines' series reach Prometheus under their own names.
	for _, q := range []string{"vllm:num_requests_running", "sglang:num_running_reqs"} {
		testenv.WaitFor(t, ctx, 60*time.Second, q+" in Prometheus", func() (bool, error) {
			return promHas(promURL, q)
		})
	}

	const model, instance = "qwen2.5-32b-instruct", "qwen-32b-0"
	scopePage := cbURL + "/scopes/" + url.PathEscape(model)
	testenv.WaitFor(t, ctx, 60*time.Second, "the SGLang scope page to name its engine", func() (bool, error) {
		body, code := getPage(t, scopePage)
		return code == http.StatusOK && strings.Contains(body, `data-engine="SGLang"`), nil
	})
	body, _ := getPage(t, cbURL+"/scopes/llama-3.1-8b-instruct")
	if !strings.Contains(body, `data-engine="vLLM"`) {
		t.Errorf("the vLLM scope page does not name vLLM")
	}

	// A few minutes of normal history, then the SGLang model's draft
	// model drifts: SGLang reports it through its spec_accept_rate gauge,
	// which the catalog reads as the rejection rate.
	time.Sleep(2 * time.Minute)
	fault := `{"cause":"spec_decode_degradation","model":"` + model + `","instance":"` + instance + `","severity":1}`
	resp, err := http.Post(simURL+"/faults", "application/json", strings.NewReader(fault))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("inject fault: %s", resp.Status)
	}
	time.Sleep(75 * time.Second)

	// "Diagnose now", as a JSON client (no form token) would press it.
	resp, err = http.Post(cbURL+"/scopes/"+url.PathEscape(model)+"/"+url.PathEscape(instance)+"/diagnose", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st, err := store.Open(ctx, filepath.Join(dataDir, "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.List(ctx, store.ListFilter{Instance: instance})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("no incident for %s (diagnose answered %s): %v", instance, resp.Status, err)
	}
	inc, err := st.Incident(ctx, page.Items[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Snapshot.Engine != metrics.EngineSGLang {
		t.Errorf("snapshot engine %q, want sglang", inc.Snapshot.Engine)
	}
	for _, id := range []string{metrics.TTFT, metrics.TPOT, metrics.ThroughputRPS, metrics.KVCacheUsage, metrics.KVCacheHitRate, metrics.SMClock} {
		if _, ok := inc.Snapshot.Current[id]; !ok {
			t.Errorf("the SGLang snapshot lacks %s: %v", id, inc.Snapshot.Current)
		}
	}
	if why := inc.Snapshot.Absent[metrics.PrefillTime]; !strings.Contains(why, "SGLang") {
		t.Errorf("absent prefill_ms says %q, want SGLang's reason", why)
	}
	if inc.RootCause != metrics.CauseSpecDecodeDegradation {
		t.Fatalf("incident %d diagnosed %q, want %q; snapshot current: %v", inc.ID, inc.RootCause, metrics.CauseSpecDecodeDegradation, inc.Snapshot.Current)
	}
	cancel()
	<-cbDone
	<-simDone
}

func promHas(promURL, name string) (bool, error) {
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape("count("+name+")"))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var ans struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return false, err
	}
	return len(ans.Data.Result) > 0, nil
}

func getPage(t *testing.T, u string) (string, int) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String(), resp.StatusCode
}
