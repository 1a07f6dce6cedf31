package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// cannedPrometheus serves Prometheus API answers from testdata: each
// request is answered by the first rule whose query substring matches.
type cannedPrometheus struct {
	t     *testing.T
	rules []cannedRule
}

type cannedRule struct {
	path   string // "/api/v1/query" or "/api/v1/query_range"
	match  string // substring of the query
	status int
	file   string
}

func (c *cannedPrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	for _, rule := range c.rules {
		if rule.path == r.URL.Path && strings.Contains(q, rule.match) {
			body, err := os.ReadFile(filepath.Join("testdata", rule.file))
			if err != nil {
				c.t.Errorf("read fixture: %v", err)
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if rule.status != 0 {
				w.WriteHeader(rule.status)
			}
			_, _ = w.Write(body)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
}

func newCanned(t *testing.T, rules ...cannedRule) *httptest.Server {
	srv := httptest.NewServer(&cannedPrometheus{t: t, rules: rules})
	t.Cleanup(srv.Close)
	return srv
}

func TestRemoteQuerier(t *testing.T) {
	srv := newCanned(t,
		cannedRule{path: "/api/v1/query", match: "group by", file: "api_vector.json"},
		cannedRule{path: "/api/v1/query_range", match: "matrix", file: "api_matrix.json"},
		cannedRule{path: "/api/v1/query", match: "broken(", status: http.StatusBadRequest, file: "api_error.json"},
		cannedRule{path: "/api/v1/query", match: "warned", file: "api_warnings.json"},
	)
	logs := &logCounter{}
	q, err := NewRemoteQuerier(RemoteOptions{URL: srv.URL, Logger: slog.New(logs), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q.status = newStatusBoard(slog.New(logs))
	ctx := context.Background()
	at := time.Unix(1764480000, 0)

	t.Run("vector", func(t *testing.T) {
		rs, err := q.Instant(ctx, "group by (model_name, pod) (x)", at)
		if err != nil {
			t.Fatal(err)
		}
		var pods []string
		for _, r := range rs {
			pods = append(pods, r.Labels["pod"])
		}
		if got := strings.Join(pods, ","); got != "llama-8b-0,llama-8b-1,qwen-7b-0" {
			t.Fatalf("pods = %s, want sorted by labels", got)
		}
		if !rs[0].Samples[0].T.Equal(at) || rs[0].Samples[0].V != 1 {
			t.Fatalf("sample = %+v", rs[0].Samples[0])
		}
	})
	t.Run("matrix", func(t *testing.T) {
		rs, err := q.Range(ctx, "matrix_query", at, at.Add(3*time.Minute), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 1 || len(rs[0].Samples) != 4 || rs[0].Samples[2].V != 44 || !rs[0].Samples[1].T.Equal(at.Add(time.Minute)) {
			t.Fatalf("matrix = %+v", rs)
		}
	})
	t.Run("error envelope", func(t *testing.T) {
		_, err := q.Instant(ctx, "broken(", at)
		if err == nil || !strings.Contains(err.Error(), "parse error") {
			t.Fatalf("err = %v, want the server's parse error", err)
		}
		// A rejected query says nothing about the server's health.
		for _, s := range q.status.list() {
			if !s.OK {
				t.Fatalf("status failing after a bad query: %+v", s)
			}
		}
	})
	t.Run("warnings are logged once and not fatal", func(t *testing.T) {
		for range 3 {
			rs, err := q.Instant(ctx, "warned", at)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Samples[0].V != 0.25 {
				t.Fatalf("result = %+v", rs)
			}
		}
		if n := logs.count(slog.LevelWarn, "prometheus query warning"); n != 1 {
			t.Fatalf("%d warning records for 3 queries, want 1", n)
		}
		if n := logs.count(slog.LevelWarn, "prometheus query info"); n != 1 {
			t.Fatalf("%d info-annotation records for 3 queries, want 1", n)
		}
	})
}

func TestRemoteTelemetry(t *testing.T) {
	srv := newCanned(t,
		cannedRule{path: "/api/v1/query_range", match: "group by (model_name, pod, casebook_engine)", file: "api_group_matrix.json"},
		cannedRule{path: "/api/v1/query_range", match: "vllm:time_to_first_token_seconds_sum", file: "api_matrix.json"},
	)
	tel, err := Open(context.Background(), Options{PrometheusURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	ctx := context.Background()
	scopes, err := tel.Scopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range scopes {
		names = append(names, s.String())
	}
	if got := strings.Join(names, " "); got != "llama-8b llama-8b/llama-8b-0 llama-8b/llama-8b-1 qwen-7b qwen-7b/qwen-7b-0" {
		t.Fatalf("scopes = %s", got)
	}
	at := time.Unix(1764480000, 0)
	series, err := tel.Range(ctx, metrics.Scope{Model: "llama-8b"}, []string{metrics.TTFT, metrics.QueueDepth},
		metrics.Range{Start: at, End: at.Add(4 * time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].Metric != metrics.TTFT || series[1].Metric != metrics.QueueDepth {
		t.Fatalf("series = %+v", series)
	}
	// NaN and +Inf are dropped: the chart shows a gap, not a wrong value.
	if got := len(series[0].Samples); got != 2 {
		t.Fatalf("ttft samples = %+v, want the 2 finite ones", series[0].Samples)
	}
	if series[1].Samples == nil || len(series[1].Samples) != 0 {
		t.Fatalf("queue depth without data = %+v, want empty samples", series[1].Samples)
	}
	for _, s := range tel.Status() {
		if !s.OK {
			t.Fatalf("status failing: %+v", s)
		}
	}
	if simulator(tel) != nil {
		t.Fatal("remote mode has a simulator")
	}
}

func TestRemoteUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	logs := &logCounter{}
	tel, err := Open(context.Background(), Options{PrometheusURL: url, Logger: slog.New(logs)})
	if err != nil {
		t.Fatalf("Open failed for an unreachable Prometheus: %v", err)
	}
	defer tel.Close()
	ctx := context.Background()
	if _, err := tel.Scopes(ctx); err == nil || !strings.Contains(err.Error(), url) {
		t.Fatalf("Scopes err = %v, want one naming the server", err)
	}
	if _, err := tel.Snapshot(ctx, metrics.Scope{Model: "m", Instance: "p"}, time.Now()); err == nil {
		t.Fatal("Snapshot succeeded against an unreachable Prometheus")
	}
	st := tel.Status()
	if len(st) != 1 || st[0].OK || st[0].Name != "prometheus "+url || st[0].Err == "" {
		t.Fatalf("status = %+v, want one failing prometheus source", st)
	}
	if n := logs.count(slog.LevelWarn, "failing"); n != 1 {
		t.Fatalf("%d failure records after many failed queries, want 1", n)
	}
}

func TestOpenOptionErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"remote with demo", Options{PrometheusURL: "http://p:9090", Demo: newSimDemo()}, "excludes demo mode"},
		{"embedded without data dir", Options{}, "needs a data directory"},
		{"bad target", Options{DataDir: "x", Targets: []Target{{URL: "not a url"}}}, "not an http(s) URL"},
		{"negative interval", Options{DataDir: "x", ScrapeInterval: -time.Second}, "negative"},
		{"replay without demo", Options{DataDir: "x", DemoUntil: time.Now().Add(-time.Hour)}, "needs demo mode"},
		{"replay ending in the future", Options{DataDir: "x", Demo: newSimDemo(), DemoUntil: time.Now().Add(time.Hour)}, "a time in the past"},
		{"demo with another instance label", Options{DataDir: "x", Demo: newSimDemo(), InstanceLabel: "instance"}, `names instances by the "pod" label`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
