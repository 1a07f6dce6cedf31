package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// recordingPrometheus answers scope discovery from a fixed vector and range
// queries with a constant per query kind: 42 from recorded series (when it
// has them), 7 from raw expressions. It keeps every range query it saw.
type recordingPrometheus struct {
	hasRecords bool
	mu         sync.Mutex
	queries    []string
}

func (p *recordingPrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(q, "group by (model_name") {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"model_name":"llama","pod":"llama-0","casebook_engine":"vllm"},"values":[[1764480000,"1"]]}]}}`)
		return
	}
	if r.URL.Path != "/api/v1/query_range" {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		return
	}
	p.mu.Lock()
	p.queries = append(p.queries, q)
	p.mu.Unlock()
	recorded := strings.Contains(q, "scope:") || strings.Contains(q, "model:")
	if recorded && !p.hasRecords {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		return
	}
	v := "7"
	if recorded {
		v = "42"
	}
	start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
	end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
	step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
	var pts []string
	for t := start; t <= end; t += step {
		pts = append(pts, fmt.Sprintf(`[%g,"%s"]`, t, v))
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[%s]}]}}`, strings.Join(pts, ","))
}

func (p *recordingPrometheus) seen(sub string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, q := range p.queries {
		if strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

func TestRemoteLongRangesReadRecordingRules(t *testing.T) {
	tests := []struct {
		name       string
		hasRecords bool
		span, step time.Duration
		want       float64
		wantRead   string // a substring of the range query that must have been sent
	}{
		{"a week reads the 1m records", true, 7 * 24 * time.Hour, 30 * time.Minute, 42, "model:tpot_ms:avg1m"},
		{"a quarter reads the 1h records", true, 90 * 24 * time.Hour, 6 * time.Hour, 42, "model:tpot_ms:avg1h"},
		{"an hour reads the raw expression", true, time.Hour, 15 * time.Second, 7, "vllm:request_time_per_output_token_seconds_sum"},
		{"without records a week falls back to the expression", false, 7 * 24 * time.Hour, 30 * time.Minute, 7, "vllm:request_time_per_output_token_seconds_sum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prom := &recordingPrometheus{hasRecords: tc.hasRecords}
			srv := httptest.NewServer(prom)
			defer srv.Close()
			tel, err := Open(context.Background(), Options{PrometheusURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Close()
			end := time.Now().Truncate(time.Minute)
			series, err := tel.Range(context.Background(), metrics.Scope{Model: "llama"}, []string{metrics.TPOT},
				metrics.Range{Start: end.Add(-tc.span), End: end, Step: tc.step})
			if err != nil {
				t.Fatal(err)
			}
			ss := series[0].Samples
			if len(ss) == 0 {
				t.Fatal("no samples")
			}
			for _, s := range ss {
				if s.V != tc.want {
					t.Fatalf("sample %v = %g, want %g", s.T, s.V, tc.want)
				}
			}
			if prom.seen(tc.wantRead) == 0 {
				t.Errorf("no range query read %s; queries: %q", tc.wantRead, prom.queries)
			}
		})
	}
}

func TestRecordedTier(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		span, step  time.Duration
		raw, minute time.Duration // configured retentions; zero: defaults
		want        string
	}{
		{time.Hour, 15 * time.Second, 0, 0, ""},
		{day, 5 * time.Minute, 0, 0, ""},
		{7 * day, 30 * time.Minute, 0, 0, "1m"},
		{7 * day, 30 * time.Second, 0, 0, ""}, // finer than the tier
		{30 * day, 2 * time.Hour, 0, 0, "1m"},
		// A remote that keeps raw samples 15 days serves a week raw; one
		// whose 1m records last 7 days reads 1h beyond them.
		{7 * day, 30 * time.Minute, 15 * day, 0, ""},
		{10 * day, 2 * time.Hour, 0, 7 * day, "1h"},
		{90 * day, 6 * time.Hour, 0, 0, "1h"},
		{90 * day, 30 * time.Minute, 0, 0, ""},
	}
	for _, tc := range tests {
		if got := recordedTier(tc.span, tc.step, tc.raw, tc.minute); got != tc.want {
			t.Errorf("recordedTier(%s, %s, raw %s, 1m %s) = %q, want %q", tc.span, tc.step, tc.raw, tc.minute, got, tc.want)
		}
	}
}
