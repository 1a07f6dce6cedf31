//go:build integration

package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
)

// TestAlertmanagerLargeGroup sends a group of 2,000 alerts through a real
// Alertmanager whose webhook passes at most 1,500 (max_alerts): Casebook
// opens incidents for the first 500 it handles per message, and every
// incident it opens records the 1,000 it dropped and the 500 Alertmanager
// truncated, so nothing is lost silently.
func TestAlertmanagerLargeGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const token = "group-secret-token"

	// Alertmanager waits 10 s so that all 2,000 alerts are in the group's
	// first message, and sends no second one while the test runs.
	//
	// Casebook scrapes an engine that is not there: the captures find an
	// empty store at once, and the incidents are stored with what there is.
	cbAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	dataDir := t.TempDir()
	runInBackground(t, ctx, "casebook serve", "serve", "--listen", cbAddr, "--data", dataDir, "--detect", "off",
		"--targets", fmt.Sprintf("http://127.0.0.1:%d/metrics", testenv.FreePort(t)), "--webhook-token", token, "--log-level", "warn")
	testenv.WaitFor(t, ctx, 60*time.Second, "casebook to serve", func() (bool, error) { return httpOK("http://" + cbAddr + "/healthz") })

	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: casebook
  group_by: [alertname]
  group_wait: 10s
  group_interval: 10m
  repeat_interval: 1h
receivers:
- name: casebook
  webhook_configs:
  - url: http://%s/api/v1/alerts/alertmanager
    max_alerts: 1500
    http_config:
      authorization:
        type: Bearer
        credentials: %s
`, cbAddr, token))

	type postable struct {
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
	}
	var alerts []postable
	// Alerts that started longer than group_wait ago are flushed at once,
	// before the rest of the group is in: these start now.
	start := time.Now().UTC()
	for i := range 2000 {
		alerts = append(alerts, postable{StartsAt: start, Labels: map[string]string{
			"alertname": "GroupTest", "model_name": "llama-70b", "pod": fmt.Sprintf("llama-70b-%d", i%8), "shard": fmt.Sprint(i)}})
	}
	body, _ := json.Marshal(alerts)
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post alerts to Alertmanager: %s", resp.Status)
	}

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "casebook.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	testenv.WaitFor(t, ctx, 3*time.Minute, "500 incidents", func() (bool, error) {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM incidents`).Scan(&n); err != nil {
			return false, nil // the schema may not be there yet
		}
		return n >= 500, nil
	})
	time.Sleep(2 * time.Second) // nothing more may arrive
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM incidents`).Scan(&n); err != nil || n != 500 {
		t.Fatalf("%d incidents (err %v), want the 500 of the message Casebook handles", n, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT trigger_detail FROM incidents`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var d struct {
			Dropped   int `json:"dropped_alerts"`
			Truncated int `json:"truncated_alerts"`
		}
		if err := json.Unmarshal([]byte(raw), &d); err != nil || d.Dropped != 1000 || d.Truncated != 500 {
			t.Fatalf("trigger detail %s (err %v): want 1000 dropped and 500 truncated alerts recorded", raw, err)
		}
	}
}
