package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// exposition is a test target whose body the test sets between scrapes.
type exposition struct {
	mu    sync.Mutex
	body  string
	delay time.Duration
	code  int
}

func (e *exposition) set(body string) {
	e.mu.Lock()
	e.body = body
	e.mu.Unlock()
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	body, delay, code := e.body, e.delay, e.code
	e.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if code != 0 {
		w.WriteHeader(code)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(body))
}

func newTestLoop(t *testing.T, target http.Handler, labels map[string]string) (*scrapeLoop, *EmbeddedQuerier, *logCounter) {
	t.Helper()
	srv := httptest.NewServer(target)
	t.Cleanup(srv.Close)
	st, err := resolveTarget(Target{URL: srv.URL + "/metrics", Labels: labels}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	logs := &logCounter{}
	l := newScrapeLoop(st, srv.Client(), db, newStatusBoard(slog.New(logs)))
	return l, NewEmbeddedQuerier(db, nil), logs
}

func TestScrapeFailures(t *testing.T) {
	big := strings.Repeat("padding_metric_with_a_long_name{label=\"value\"} 1\n", 100)
	tests := []struct {
		name    string
		target  *exposition
		maxBody int64
		labels  map[string]string
		wantErr string
	}{
		{name: "garbage body", target: &exposition{body: "this is { not an exposition\n"}, wantErr: "parse exposition"},
		{name: "timeout", target: &exposition{body: "up 1\n", delay: 2 * time.Second},
			labels: map[string]string{labelScrapeTimeout: "100ms"}, wantErr: "timed out after 100ms"},
		{name: "oversized body", target: &exposition{body: big}, maxBody: 1024, wantErr: "exceeds the 1024-byte limit"},
		{name: "HTTP error", target: &exposition{body: "oops", code: http.StatusInternalServerError}, wantErr: "HTTP status 500"},
		{name: "valid", target: &exposition{body: "x_total 1\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _, _ := newTestLoop(t, tc.target, tc.labels)
			if tc.maxBody > 0 {
				l.maxBody = tc.maxBody
			}
			l.scrapeAndReport(context.Background(), time.Now())
			st := l.status.list()
			if len(st) != 1 {
				t.Fatalf("status has %d sources, want 1", len(st))
			}
			if tc.wantErr == "" {
				if !st[0].OK {
					t.Fatalf("status failing: %s", st[0].Err)
				}
				return
			}
			if st[0].OK || !strings.Contains(st[0].Err, tc.wantErr) {
				t.Fatalf("status = %+v, want failing with %q", st[0], tc.wantErr)
			}
			if st[0].Since.IsZero() {
				t.Error("failing status has no since time")
			}
		})
	}
}

func TestScrapeStatusLoggedOnce(t *testing.T) {
	target := &exposition{body: "garbage {{{\n"}
	l, _, logs := newTestLoop(t, target, nil)
	t0 := time.Now()
	for i := range 5 {
		l.scrapeAndReport(context.Background(), t0.Add(time.Duration(i)*5*time.Second))
	}
	if n := logs.count(slog.LevelWarn, "failing"); n != 1 {
		t.Fatalf("%d failure records after 5 failed scrapes, want 1", n)
	}
	failingSince := l.status.list()[0].Since
	target.set("x_total 1\n")
	for i := range 3 {
		l.scrapeAndReport(context.Background(), t0.Add(time.Duration(5+i)*5*time.Second))
	}
	if n := logs.count(slog.LevelInfo, "recovered"); n != 1 {
		t.Fatalf("%d recovery records after 3 good scrapes, want 1", n)
	}
	st := l.status.list()[0]
	if !st.OK || !st.Since.After(failingSince) && !st.Since.Equal(failingSince) {
		t.Fatalf("status after recovery = %+v", st)
	}
	if total := len(logs.records); total != 2 {
		t.Fatalf("%d log records in all, want 2 (failing, recovered)", total)
	}
}

func TestScrapeCounterReset(t *testing.T) {
	target := &exposition{}
	l, q, _ := newTestLoop(t, target, map[string]string{"pod": "p-0"})
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	// The target restarts after the third scrape and counts from zero again.
	values := []float64{100, 200, 300, 5, 105}
	for i, v := range values {
		target.set(fmt.Sprintf("requests_total{code=\"200\"} %g\n", v))
		if err := l.scrape(context.Background(), t0.Add(time.Duration(i)*5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	at := t0.Add(20 * time.Second)
	if got := instant(t, q, `resets(requests_total{pod="p-0",job="casebook"}[1m])`, at); got != 1 {
		t.Fatalf("resets = %g, want 1", got)
	}
	// Increase is 100+100 before the restart and 5+100 after it: 305 over
	// the 20 s the samples span, extrapolated by half a scrape interval at
	// the start (22.5 s) and spread over the 60 s window.
	want := 305.0 * 22.5 / 20 / 60
	if got := instant(t, q, `rate(requests_total[1m])`, at); !near(got, want, 0.01) {
		t.Fatalf("rate = %g, want %g (the reset is not a negative step)", got, want)
	}
}

func TestScrapeStaleness(t *testing.T) {
	target := &exposition{body: "a 1\nb 2\n"}
	l, q, _ := newTestLoop(t, target, nil)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := l.scrape(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	target.set("a 1\n") // b vanishes
	if err := l.scrape(context.Background(), t0.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(6 * time.Second)
	if got := instant(t, q, "b", t1); !math.IsNaN(got) {
		t.Fatalf("vanished series b = %g one second after it vanished, want no value (stale)", got)
	}
	if got := instant(t, q, "a", t1); got != 1 {
		t.Fatalf("a = %g, want 1", got)
	}
	// The target dies: every series it had ends at once.
	target.mu.Lock()
	target.code = http.StatusServiceUnavailable
	target.mu.Unlock()
	if err := l.scrape(context.Background(), t0.Add(10*time.Second)); err == nil {
		t.Fatal("scrape of a failing target succeeded")
	}
	if got := instant(t, q, "a", t0.Add(11*time.Second)); !math.IsNaN(got) {
		t.Fatalf("a = %g after its target failed, want no value (stale)", got)
	}
	// The previous values are still there, before the marker.
	if got := instant(t, q, "a", t0.Add(7*time.Second)); got != 1 {
		t.Fatalf("a before the failure = %g, want 1", got)
	}
}

func TestScrapeLabelsAndCreated(t *testing.T) {
	body := "# TYPE x counter\n" +
		"x_total{model_name=\"m\"} 3\n" +
		"x_created{model_name=\"m\"} 1.7e9\n" +
		"dcgm_like{pod=\"own-pod\"} 1\n"
	l, q, _ := newTestLoop(t, &exposition{body: body}, map[string]string{"pod": "target-pod", "job": "vllm"})
	at := time.Now().Truncate(time.Second)
	if err := l.scrape(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr string
		want float64
	}{
		{`x_total{model_name="m",pod="target-pod",job="vllm"}`, 3},
		{`count({__name__=~".*_created"})`, math.NaN()},
		{`dcgm_like{pod="own-pod",job="vllm"}`, 1}, // the series' own pod wins
		{`count(dcgm_like{pod="target-pod"})`, math.NaN()},
	}
	inst := l.target.labels.Get("instance")
	if !strings.HasPrefix(inst, "127.0.0.1:") {
		t.Fatalf("instance label = %q, want host:port", inst)
	}
	for _, tc := range tests {
		got := instant(t, q, tc.expr, at)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s = %g, want %g", tc.expr, got, tc.want)
		}
	}
}

func TestResolveTarget(t *testing.T) {
	tests := []struct {
		name         string
		target       Target
		wantErr      string
		wantInterval time.Duration
		wantTimeout  time.Duration
		wantInstance string
	}{
		{name: "defaults", target: Target{URL: "http://10.0.0.1:8000/metrics"}, wantInterval: 5 * time.Second, wantTimeout: 5 * time.Second, wantInstance: "10.0.0.1:8000"},
		{name: "default port", target: Target{URL: "https://engine.example/metrics"}, wantInterval: 5 * time.Second, wantTimeout: 5 * time.Second, wantInstance: "engine.example:443"},
		{name: "per-target interval", target: Target{URL: "http://h:1/m", Labels: map[string]string{labelScrapeInterval: "30s"}}, wantInterval: 30 * time.Second, wantTimeout: 10 * time.Second, wantInstance: "h:1"},
		{name: "per-target timeout", target: Target{URL: "http://h:1/m", Labels: map[string]string{labelScrapeTimeout: "2s"}}, wantInterval: 5 * time.Second, wantTimeout: 2 * time.Second, wantInstance: "h:1"},
		{name: "timeout over interval", target: Target{URL: "http://h:1/m", Labels: map[string]string{labelScrapeTimeout: "20s"}}, wantErr: "longer than the interval"},
		{name: "not http", target: Target{URL: "ftp://h/m"}, wantErr: "not an http(s) URL"},
		{name: "bad label", target: Target{URL: "http://h:1/m", Labels: map[string]string{"bad-name": "x"}}, wantErr: "not a valid label name"},
		{name: "bad duration", target: Target{URL: "http://h:1/m", Labels: map[string]string{labelScrapeInterval: "soon"}}, wantErr: "not a positive duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := resolveTarget(tc.target, 5*time.Second)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.interval != tc.wantInterval || st.timeout != tc.wantTimeout || st.labels.Get("instance") != tc.wantInstance {
				t.Fatalf("got interval %s timeout %s instance %q", st.interval, st.timeout, st.labels.Get("instance"))
			}
		})
	}
}

// recordingAppendable counts what the scraper appends and commits, for
// the fuzz target (a TSDB per input would make fuzzing crawl).
type recordingAppendable struct {
	appended, committed, rolledBack int
}

type recordingAppender struct {
	storage.Appender // other methods are not used by the scraper
	r                *recordingAppendable
	n                int
}

func (r *recordingAppendable) Appender(context.Context) storage.Appender {
	return &recordingAppender{r: r}
}

func (a *recordingAppender) Append(_ storage.SeriesRef, l labels.Labels, _ int64, _ float64) (storage.SeriesRef, error) {
	if l.Get(labels.MetricName) == "" {
		return 0, errors.New("series without a name")
	}
	a.n++
	return storage.SeriesRef(a.n), nil
}

func (a *recordingAppender) Commit() error {
	a.r.appended += a.n
	a.r.committed++
	return nil
}

func (a *recordingAppender) Rollback() error {
	a.r.rolledBack++
	return nil
}

// FuzzScrapeBody feeds arbitrary bodies to the parse-and-append path: any
// input is either committed or rejected with an error and rolled back,
// never a panic, and a rejected body commits nothing.
func FuzzScrapeBody(f *testing.F) {
	for _, name := range []string{"vllm.prom", "dcgm.prom", "gateway.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("x{a=\"\\\"\"} NaN 123\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\n"))
	f.Add([]byte("garbage {{{"))
	st, err := resolveTarget(Target{URL: "http://fuzz:1/metrics"}, time.Second)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := &recordingAppendable{}
		l := newScrapeLoop(st, nil, rec, newStatusBoard(slog.New(slog.DiscardHandler)))
		err := l.appendBody(context.Background(), body, 1_700_000_000_000)
		switch {
		case err != nil && (rec.committed != 0 || rec.rolledBack != 1):
			t.Fatalf("rejected body (%v): %d commits, %d rollbacks", err, rec.committed, rec.rolledBack)
		case err == nil && rec.committed != 1:
			t.Fatalf("accepted body committed %d times", rec.committed)
		}
	})
}
