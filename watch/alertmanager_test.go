package watch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// amServer records the alert posts it receives and fails the first fail
// of them with a 503.
type amServer struct {
	mu    sync.Mutex
	posts [][]PostableAlert
	fail  int
	calls int
}

func (s *amServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if r.Method != http.MethodPost || r.URL.Path != "/api/v2/alerts" || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if s.fail > 0 {
		s.fail--
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var as []PostableAlert
	if err := json.Unmarshal(body, &as); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.posts = append(s.posts, as)
}

func (s *amServer) last() ([]PostableAlert, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.posts) == 0 {
		return nil, s.calls
	}
	return s.posts[len(s.posts)-1], s.calls
}

func TestWatcherForwardsAlertsToAlertmanager(t *testing.T) {
	srv := &amServer{fail: 1}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var log syncBuffer
	am, err := NewAlertmanager(AlertmanagerOptions{URL: ts.URL, Backoff: time.Millisecond, Logger: testLogger(&log)})
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 2, stepped: map[string]bool{metrics.TTFT: true}}
	w, _, clk := newTestWatcher(t, src, []string{metrics.TTFT}, am, &log)
	w.Round(context.Background())
	runMinutes(w, clk, 30)
	if _, calls := srv.last(); calls != 0 {
		t.Fatalf("%d posts with nothing firing, want 0", calls)
	}
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 10)

	got, calls := srv.last()
	if len(got) != 1 {
		t.Fatalf("last post has %d alerts, want 1 (calls %d)", len(got), calls)
	}
	a := got[0]
	wantLabels := map[string]string{"alertname": AlertName, "model_name": testScope.Model, "pod": testScope.Instance,
		"casebook_metric": metrics.TTFT}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, a.Labels[k], v, a.Labels)
		}
	}
	if s := a.Labels["severity"]; s != "warning" && s != "critical" {
		t.Errorf("severity %q, want warning or critical", s)
	}
	if !strings.Contains(a.Annotations["summary"], "forecast") || !strings.Contains(a.Annotations["summary"], "band") {
		t.Errorf("summary %q does not give the forecast and band", a.Annotations["summary"])
	}
	if a.GeneratorURL != "http://casebook.test/incidents/1" || a.EndsAt != nil || a.StartsAt.IsZero() || a.StartsAt.After(clk.Now()) {
		t.Errorf("alert %+v: want the incident URL, a past start and no end", a)
	}
	if !strings.Contains(log.String(), "forwarding alerts to the Alertmanager failed") && calls < 2 {
		t.Errorf("the first post failed and was not retried (calls %d)", calls)
	}

	// The anomaly ends: the alert is posted once more with its end.
	src.set(func(f *fakeSource) { f.stepAt = time.Time{} })
	runMinutes(w, clk, 15)
	srv.mu.Lock()
	var ended *PostableAlert
	for _, p := range srv.posts {
		for i := range p {
			if p[i].EndsAt != nil {
				ended = &p[i]
			}
		}
	}
	srv.mu.Unlock()
	if ended == nil || !ended.EndsAt.After(ended.StartsAt) {
		t.Fatalf("no post ended the alert: %+v", ended)
	}
}

func TestAlertmanagerFailuresLoggedOncePerChange(t *testing.T) {
	srv := &amServer{fail: 1 << 30}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var log syncBuffer
	am, err := NewAlertmanager(AlertmanagerOptions{URL: ts.URL, Attempts: 3, Backoff: time.Millisecond, Logger: testLogger(&log)})
	if err != nil {
		t.Fatal(err)
	}
	alerts := []Active{{}}
	alerts[0].Alert.Scope, alerts[0].Alert.Metric = testScope, metrics.TTFT
	for i := 0; i < 5; i++ {
		if err := am.Post(context.Background(), alerts); err == nil {
			t.Fatal("post to a failing Alertmanager succeeded")
		}
	}
	if _, calls := srv.last(); calls != 15 {
		t.Errorf("%d requests for 5 posts of 3 attempts, want 15", calls)
	}
	srv.mu.Lock()
	srv.fail = 0
	srv.mu.Unlock()
	if err := am.Post(context.Background(), alerts); err != nil {
		t.Fatal(err)
	}
	logs := log.String()
	if n := strings.Count(logs, "Alertmanager failed"); n != 1 {
		t.Errorf("failure logged %d times, want once\n%s", n, logs)
	}
	if n := strings.Count(logs, "works again"); n != 1 {
		t.Errorf("recovery logged %d times, want once\n%s", n, logs)
	}
}

func TestNewAlertmanagerRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "alertmanager:9093", "ftp://am", "http://"} {
		if _, err := NewAlertmanager(AlertmanagerOptions{URL: u}); err == nil {
			t.Errorf("NewAlertmanager(%q) succeeded, want an error", u)
		}
	}
}
