//go:build integration

package testenv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRealComponentsStart proves the harness starts and stops the real
// servers and that they answer on their API.
func TestRealComponentsStart(t *testing.T) {
	prom := Prometheus(t, "global:\n  scrape_interval: 1s\nscrape_configs: []\n")
	am := Alertmanager(t, "route:\n  receiver: none\nreceivers:\n- name: none\n")
	for _, c := range []struct {
		p          *Process
		path, want string
	}{
		{prom, "/api/v1/status/buildinfo", `"version"`},
		{am, "/api/v2/status", `"versionInfo"`},
	} {
		resp, err := http.Get(c.p.URL + c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.p.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), c.want) {
			t.Fatalf("%s %s: %s %s", c.p.Name, c.path, resp.Status, body)
		}
	}
	prom.Stop()
	WaitFor(t, context.Background(), 10*time.Second, "prometheus to exit", func() (bool, error) { return !prom.Alive(), nil })
}
