package handlers_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/static"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

var incidentScope = metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}

// fixture is a console with fakes; tests adjust the options before start.
type fixture struct {
	tel    *handlerstest.Telemetry
	diag   *handlerstest.Diagnoser
	opts   web.Options
	srv    *httptest.Server
	faults *handlerstest.Faults
}

func newFixture(t testing.TB, tel *handlerstest.Telemetry, adjust func(*web.Options)) *fixture {
	t.Helper()
	f := &fixture{tel: tel, diag: &handlerstest.Diagnoser{Result: handlerstest.EvictionDiagnosis()}, faults: &handlerstest.Faults{}}
	f.opts = web.Options{
		Telemetry:  tel,
		Diagnoser:  f.diag,
		Deviations: handlerstest.Deviations,
		Now:        func() time.Time { return tel.End },
	}
	if adjust != nil {
		adjust(&f.opts)
	}
	f.srv = httptest.NewServer(web.New(f.opts))
	t.Cleanup(f.srv.Close)
	return f
}

var sharedTel = sync.OnceValue(func() *handlerstest.Telemetry {
	return handlerstest.NewTelemetry(handlerstest.Options{Incident: incidentScope, Span: 2 * 24 * time.Hour})
})

// testCSRF is the form token the fixture's requests carry.
const testCSRF = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type response struct {
	status int
	header http.Header
	body   string
}

func (f *fixture) do(t testing.TB, method, path string, body io.Reader, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet && method != http.MethodHead {
		// A browser posts the form token its page carried, beside the
		// cookie it came with.
		req.AddCookie(&http.Cookie{Name: handlers.CSRFCookie, Value: testCSRF})
		req.Header.Set("X-CSRF-Token", testCSRF)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{res.StatusCode, res.Header, string(b)}
}

func TestPages(t *testing.T) {
	f := newFixture(t, sharedTel(), nil)
	tests := []struct {
		name       string
		path       string
		wantStatus int
		want       []string // substrings that must appear
		wantCount  map[string]int
		notWant    []string
	}{
		{name: "overview", path: "/", wantStatus: 200,
			want: []string{`data-testid="scopes"`, `data-scope="llama-70b/llama-70b-1"`, `data-testid="nav-incidents"`, `data-status="Critical"`,
				`data-testid="fleet-summary"`, `data-testid="overview-filter"`},
			wantCount: map[string]int{`data-testid="model-group"`: 2, `data-testid="scope-row"`: 2, `data-testid="instance-line"`: 4, `data-testid="dim"`: 8}},
		{name: "model live view", path: "/scopes/llama-70b", wantStatus: 200,
			want: []string{`data-testid="panel-latency"`, `data-testid="panel-throughput"`, `data-testid="panel-utilization"`, `data-testid="panel-quality"`,
				`data-testid="chart-latency-request"`, `data-testid="waterfall"`, `data-testid="instances"`, `data-testid="diagnose-now"`,
				`data-testid="instance-rows"`, `href="/scopes/llama-70b/llama-70b-1?range=1h" data-testid="scope-link"`},
			wantCount: map[string]int{`data-testid="scope-row"`: 2}},
		{name: "instance with preset", path: "/scopes/llama-70b/llama-70b-1?range=6h", wantStatus: 200,
			want:    []string{`data-testid="range-6h"`, `last 6h`, `class="active" data-testid="range-6h"`, `Gateway vs engine`, `data-testid="anomalies"`, `data-metric="kv_cache_hit_rate"`},
			notWant: []string{`name="at"`, `data-testid="instance-rows"`}},
		{name: "absolute window", path: "/scopes/qwen-7b/qwen-7b-0?from=2026-11-29T00:00:00Z&to=1795932000", wantStatus: 200,
			want: []string{`value="2026-11-29T00:00:00Z"`, `window`, `name="at" value="2026-11-29T06:00:00Z"`}},
		{name: "unknown route", path: "/no/such/page", wantStatus: 404, want: []string{`data-testid="error"`, `There is no page at /no/such/page`}},
		{name: "bad preset", path: "/scopes/llama-70b?range=3y", wantStatus: 400, want: []string{`data-testid="error-param"`, `<code>range</code>`, `15m, 1h, 6h, 24h, 7d`}},
		{name: "range and from", path: "/scopes/llama-70b?range=1h&from=1", wantStatus: 400, want: []string{`<code>range</code>`, `not both`}},
		{name: "bad from", path: "/scopes/llama-70b?from=yesterday", wantStatus: 400, want: []string{`<code>from</code>`, `RFC 3339`}},
		{name: "bad to", path: "/scopes/llama-70b?to=2026-13-01", wantStatus: 400, want: []string{`<code>to</code>`}},
		{name: "from after to", path: "/scopes/llama-70b?from=2026-11-30T04:00:00Z&to=2026-11-30T03:00:00Z", wantStatus: 400, want: []string{`<code>from</code>`, `must be before to`}},
		{name: "window too long", path: "/scopes/llama-70b?from=2026-01-01T00:00:00Z&to=2026-11-30T00:00:00Z", wantStatus: 400, want: []string{`<code>from</code>`, `31 days`}},
		{name: "unknown model", path: "/scopes/mistral", wantStatus: 400, want: []string{`<code>model</code>`, `no model named &#34;mistral&#34;`}},
		{name: "unknown instance", path: "/scopes/llama-70b/llama-70b-9", wantStatus: 400, want: []string{`<code>instance</code>`}},
		{name: "hostile scope is escaped", path: "/scopes/" + url.PathEscape("<script>alert(1)</script>"), wantStatus: 400,
			want: []string{`&lt;script&gt;alert(1)&lt;/script&gt;`}, notWant: []string{`<script>alert`}},
		{name: "fault panel without simulator", path: "/faults", wantStatus: 404},
		{name: "healthz", path: "/healthz", wantStatus: 200, want: []string{"ok"}},
		{name: "readyz without sources", path: "/readyz", wantStatus: 503, want: []string{"no metric source is configured"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, http.MethodGet, tc.path, nil, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("GET %s: status %d, want %d; body:\n%.2000s", tc.path, r.status, tc.wantStatus, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("GET %s: body lacks %q", tc.path, w)
				}
			}
			for w, n := range tc.wantCount {
				if got := strings.Count(r.body, w); got != n {
					t.Errorf("GET %s: %d x %q, want %d", tc.path, got, w, n)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(r.body, w) {
					t.Errorf("GET %s: body contains %q", tc.path, w)
				}
			}
		})
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, sharedTel(), nil)
	for _, path := range []string{"/", "/scopes/llama-70b", "/nope"} {
		r := f.do(t, http.MethodGet, path, nil, nil)
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "style-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy = %q", path, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Request-Id") == "" ||
			r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("Cross-Origin-Opener-Policy") != "same-origin" ||
			r.header.Get("Permissions-Policy") == "" {
			t.Errorf("GET %s: headers %v", path, r.header)
		}
		if strings.Contains(r.body, "<script>") || strings.Contains(r.body, " style=") {
			t.Errorf("GET %s: page has inline script or style, which the CSP blocks", path)
		}
	}
}

func TestOverviewWorstFirstAndEscaping(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{
		Span:     3 * time.Hour,
		Incident: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"},
		Models: []handlerstest.Model{
			{Name: "<script>alert(1)</script>", Instances: []string{`"><img src=x onerror=alert(2)>`}},
			{Name: "llama-70b", Instances: []string{"llama-70b-0", "llama-70b-1"}, Gateway: true},
		},
		Status: []metrics.SourceStatus{{Name: "target http://10.0.0.7:8000/metrics", Err: "connection refused", Since: handlerstest.DefaultEnd.Add(-7 * time.Minute)}},
	})
	f := newFixture(t, tel, nil)
	r := f.do(t, http.MethodGet, "/", nil, nil)
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	first := strings.Index(r.body, `data-testid="model-group"`)
	if first < 0 || !strings.Contains(r.body[first:first+200], `data-model="llama-70b"`) {
		t.Errorf("the incident's model is not the first group: %.300s", r.body[max(first, 0):])
	}
	line := strings.Index(r.body, `data-testid="instance-line"`)
	if line < 0 || !strings.Contains(r.body[line:line+200], `llama-70b/llama-70b-1`) {
		t.Errorf("the incident scope is not the first instance: %.300s", r.body[max(line, 0):])
	}
	for _, bad := range []string{"<script>alert", "<img src=x"} {
		if strings.Contains(r.body, bad) {
			t.Errorf("overview contains unescaped %q", bad)
		}
	}
	if !strings.Contains(r.body, `data-testid="banner"`) || !strings.Contains(r.body, "connection refused") || !strings.Contains(r.body, "7 min ago") {
		t.Errorf("overview lacks the data-source banner")
	}
	rr := f.do(t, http.MethodGet, "/readyz", nil, nil)
	if rr.status != http.StatusServiceUnavailable || !strings.Contains(rr.body, "connection refused") {
		t.Errorf("readyz with a failing source: %d %q", rr.status, rr.body)
	}
}

// panicking is a Telemetry whose Snapshot panics, to exercise recovery.
type panicking struct{ *handlerstest.Telemetry }

func (panicking) Snapshot(context.Context, metrics.Scope, time.Time) (metrics.Snapshot, error) {
	panic("secret internal detail: nil map in snapshot")
}

func (panicking) Fleet(context.Context, time.Time) (metrics.Fleet, error) {
	panic("secret internal detail: nil map in fleet")
}

func TestServerErrorShowsRequestIDOnly(t *testing.T) {
	failing := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	failing.Err = errors.New("secret internal detail: dial tcp 10.1.2.3")
	tests := []struct {
		name string
		tel  handlers.Telemetry
		path string
	}{
		{"telemetry error", failing, "/scopes/llama-70b"},
		{"panic", panicking{handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})}, "/scopes/llama-70b"},
		{"panic in the overview", panicking{handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})}, "/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour}), func(o *web.Options) { o.Telemetry = tc.tel })
			r := f.do(t, http.MethodGet, tc.path, nil, nil)
			if r.status != 500 {
				t.Fatalf("status %d", r.status)
			}
			if strings.Contains(r.body, "secret internal detail") || strings.Contains(r.body, "goroutine") {
				t.Errorf("500 page leaks internals:\n%s", r.body)
			}
			id := r.header.Get("X-Request-Id")
			if id == "" || !strings.Contains(r.body, id) || !strings.Contains(r.body, `data-testid="error-request-id"`) {
				t.Errorf("500 page does not show the request id %q", id)
			}
		})
	}
}

func TestOverviewWhenTheSourceIsDown(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	tel.Err = errors.New("prometheus http://prom:9090: connection refused")
	f := newFixture(t, tel, nil)
	r := f.do(t, http.MethodGet, "/", nil, nil)
	if r.status != 200 || !strings.Contains(r.body, `data-testid="banner"`) || !strings.Contains(r.body, "connection refused") || !strings.Contains(r.body, `data-testid="no-scopes"`) {
		t.Errorf("status %d, body %.600s", r.status, r.body)
	}
}

func TestDiagnoseNow(t *testing.T) {
	t.Run("shows the diagnosis", func(t *testing.T) {
		f := newFixture(t, sharedTel(), nil)
		form := url.Values{"at": {"2026-11-30T04:50:00Z"}}
		r := f.do(t, http.MethodPost, "/scopes/llama-70b/llama-70b-1/diagnose", strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if r.status != 200 {
			t.Fatalf("status %d: %.1000s", r.status, r.body)
		}
		for _, w := range []string{`data-testid="diagnosis"`, `data-root-cause="kv_cache_eviction"`, `data-testid="diagnosis-evidence"`,
			`data-testid="diagnosis-chain"`, `data-testid="diagnosis-actions"`, `gpu_memory_utilization → 0.95`, `86%`,
			`data-testid="evidence-charts"`, `data-testid="chart-evidence-kv_cache_hit_rate"`, `baseline ±3σ`} {
			if !strings.Contains(r.body, w) {
				t.Errorf("diagnosis page lacks %q", w)
			}
		}
		if f.diag.Calls() != 1 {
			t.Fatalf("diagnoser called %d times", f.diag.Calls())
		}
		s := f.diag.Snapshots[0]
		if s.Scope != incidentScope || !s.At.Equal(time.Date(2026, 11, 30, 4, 50, 0, 0, time.UTC)) || len(s.History) != 60 {
			t.Errorf("snapshot scope %v at %v with %d history points", s.Scope, s.At, len(s.History))
		}
		m := f.do(t, http.MethodGet, "/metrics", nil, nil)
		if !strings.Contains(m.body, "casebook_diagnoses_total 1") || !strings.Contains(m.body, `casebook_http_request_duration_seconds_count{code="200",method="POST",route="/scopes/:model/:instance/diagnose"} 1`) {
			t.Errorf("/metrics lacks the diagnosis counter or route histogram:\n%s", m.body)
		}
	})
	t.Run("bad at", func(t *testing.T) {
		f := newFixture(t, sharedTel(), nil)
		r := f.do(t, http.MethodPost, "/scopes/llama-70b/diagnose", strings.NewReader("at=soon"),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if r.status != 400 || !strings.Contains(r.body, "<code>at</code>") {
			t.Errorf("status %d, body %.500s", r.status, r.body)
		}
	})
	t.Run("cross-site post is refused", func(t *testing.T) {
		f := newFixture(t, sharedTel(), nil)
		r := f.do(t, http.MethodPost, "/scopes/llama-70b/diagnose", nil, map[string]string{"Sec-Fetch-Site": "cross-site"})
		if r.status != http.StatusForbidden || f.diag.Calls() != 0 {
			t.Errorf("status %d, %d diagnoses", r.status, f.diag.Calls())
		}
	})
	t.Run("opens an incident when the archive is wired", func(t *testing.T) {
		op := &opener{id: 42}
		f := newFixture(t, sharedTel(), func(o *web.Options) { o.IncidentOpener = op })
		r := f.do(t, http.MethodPost, "/scopes/llama-70b/diagnose", nil, nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/incidents/42" {
			t.Errorf("status %d location %q", r.status, r.header.Get("Location"))
		}
		if op.got.Scope.Model != incidentScope.Model || op.got.Current == nil {
			t.Errorf("opener got a snapshot of %v", op.got.Scope)
		}
	})
}

type opener struct {
	id  int64
	got metrics.Snapshot
}

func (o *opener) DiagnoseNow(ctx context.Context, s metrics.Snapshot) (store.Incident, error) {
	o.got = s
	var inc store.Incident
	inc.ID = o.id
	return inc, nil
}

func TestDiagnoseAPI(t *testing.T) {
	f := newFixture(t, sharedTel(), func(o *web.Options) { o.BodyLimit = "64K" })
	valid := `{"at":"2026-11-30T04:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":900,"tpot_ms":12}}`
	tests := []struct {
		name       string
		body       string
		wantStatus int
		want       string
		lang       string // Accept-Language
	}{
		{"valid", valid, 200, `"root_cause":"kv_cache_eviction","title":"KV-cache eviction storm"`, ""},
		{"valid in Chinese", valid, 200, `"root_cause":"kv_cache_eviction","title":"KV Cache 驱逐风暴"`, "zh-CN,zh;q=0.9"},
		{"malformed", `{"at":`, 400, `invalid snapshot`, ""},
		{"missing model", `{"at":"2026-11-30T04:00:00Z","scope":{},"current":{}}`, 400, `scope.model`, ""},
		{"out of range", `{"at":"2026-11-30T04:00:00Z","scope":{"model":"m"},"current":{"kv_cache_usage":7}}`, 400, `above its maximum`, ""},
		{"too large", `{"pad":"` + strings.Repeat("x", 70<<10) + `"}`, 413, `error`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Content-Type": "application/json"}
			if tc.lang != "" {
				hdr["Accept-Language"] = tc.lang
			}
			r := f.do(t, http.MethodPost, "/api/v1/diagnose", strings.NewReader(tc.body), hdr)
			if r.status != tc.wantStatus || !strings.Contains(r.body, tc.want) {
				t.Errorf("status %d body %.300s; want %d with %q", r.status, r.body, tc.wantStatus, tc.want)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("content type %q", ct)
			}
		})
	}
}

func TestFaultPanel(t *testing.T) {
	f := newFixture(t, sharedTel(), nil)
	f.srv.Close()
	f = newFixture(t, sharedTel(), func(o *web.Options) { o.Faults = f.faults })
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		want       string
	}{
		{"list empty", "GET", "/faults", "", 200, `data-testid="no-faults"`},
		{"inject", "POST", "/faults", "cause=gpu_throttling&scope=qwen-7b%2Fqwen-7b-0&severity=0.6&duration=30m", 303, ""},
		{"listed", "GET", "/faults?injected=f1", "", 200, `data-testid="fault-row"`},
		{"bad severity", "POST", "/faults", "cause=gpu_throttling&scope=qwen-7b&severity=2", 400, "<code>severity</code>"},
		{"bad cause", "POST", "/faults", "cause=none&scope=qwen-7b&severity=0.5", 400, "<code>cause</code>"},
		{"bad scope", "POST", "/faults", "cause=gpu_throttling&scope=nope&severity=0.5", 400, "<code>scope</code>"},
		{"bad duration", "POST", "/faults", "cause=gpu_throttling&scope=qwen-7b&severity=0.5&duration=forever", 400, "<code>duration</code>"},
		{"clear", "POST", "/faults/clear", "", 303, ""},
		{"cleared", "GET", "/faults?cleared=1", "", 200, `data-testid="no-faults"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, strings.NewReader(tc.body), map[string]string{"Content-Type": form})
			if r.status != tc.wantStatus || !strings.Contains(r.body, tc.want) {
				t.Errorf("%s %s: status %d, want %d with %q; body %.400s", tc.method, tc.path, r.status, tc.wantStatus, tc.want, r.body)
			}
		})
	}
	if r := f.do(t, "GET", "/", nil, nil); !strings.Contains(r.body, `data-testid="nav-faults"`) {
		t.Errorf("nav lacks the fault panel link in demo mode")
	}
}

func TestFragmentAndStatic(t *testing.T) {
	f := newFixture(t, sharedTel(), nil)
	r := f.do(t, "GET", "/scopes/llama-70b?range=15m", nil, map[string]string{handlers.FragmentHeader: "live"})
	if r.status != 200 || strings.Contains(r.body, "<html") || !strings.Contains(r.body, `data-testid="panel-latency"`) {
		t.Errorf("fragment request: status %d, %.200s", r.status, r.body)
	}
	css := static.URL("css/casebook.css")
	r = f.do(t, "GET", css, nil, nil)
	if r.status != 200 || !strings.Contains(r.header.Get("Cache-Control"), "immutable") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/css") {
		t.Errorf("GET %s: %d %v", css, r.status, r.header)
	}
	r = f.do(t, "GET", "/static/js/casebook.js", nil, nil)
	if r.status != 200 || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("unversioned js: %d %v", r.status, r.header)
	}
	if r := f.do(t, "GET", "/static/../web/web.go", nil, nil); r.status != 404 {
		t.Errorf("path traversal: %d", r.status)
	}
}

// archiveHandlers builds the incident service and the archive's handlers
// over a test archive, the way serve wires them: a diagnoser that learns
// cases is also the service's learner.
func archiveHandlers(d handlers.IncidentDeps, st incident.Archive, capture incident.Capture, diag incident.Diagnoser) (*handlers.Incidents, *incident.Service) {
	learner, _ := diag.(incident.CaseLearner)
	svc := incident.New(incident.Options{Archive: st, Capture: capture, Diagnoser: diag, Learner: learner, Now: d.Now})
	d.Service = svc
	if d.Archive == nil {
		d.Archive = st.(handlers.Archive)
	}
	return handlers.NewIncidents(d), svc
}
