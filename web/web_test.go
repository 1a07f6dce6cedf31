package web_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

// archive is the incident archive's handlers over a fresh SQLite file.
func archive(t *testing.T, tel *handlerstest.Telemetry) *handlers.Incidents {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	diag := &handlerstest.Diagnoser{}
	svc := incident.New(incident.Options{Archive: st, Capture: tel, Diagnoser: diag})
	return handlers.NewIncidents(handlers.IncidentDeps{Archive: st, Service: svc})
}

// TestRoutesAreNamedAndArchiveIsMounted checks that every registered
// route is a route of package route, at its pattern, so that links built
// from names reach it.
func TestRoutesAreNamedAndArchiveIsMounted(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: archive(t, tel), Now: func() time.Time { return tel.End }})
	routes := srv.Routes()
	if len(routes) < 30 {
		t.Fatalf("only %d routes", len(routes))
	}
	patterns := map[string]string{}
	for _, n := range route.Names() {
		patterns[string(n)] = n.Pattern()
	}
	for _, r := range routes {
		if r.Method == echo.RouteNotFound {
			continue
		}
		if want, ok := patterns[r.Name]; !ok || want != r.Path {
			t.Errorf("route %s %s is named %q, whose pattern is %q", r.Method, r.Path, r.Name, want)
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, route.URL(route.IncidentList), nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `data-testid="incident-filters"`) {
		t.Errorf("archive route: %d %.300q", rec.Code, rec.Body.String())
	}
	if got, want := srv.Reverse(string(route.ScopeInstance), "m", "i"), route.URL(route.ScopeInstance, "m", "i"); got != want || got != "/scopes/m/i" {
		t.Errorf("Reverse(%s) = %q, route.URL = %q", route.ScopeInstance, got, want)
	}
}

func TestNotFoundKeepsTheHandlersMessage(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: archive(t, tel)})
	for _, tc := range []struct{ path, want string }{
		{route.URL(route.IncidentShow, 7), "There is no incident with this number."},
		{"/nowhere", "There is no page at /nowhere."},
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d, body lacks %q", tc.path, rec.Code, tc.want)
		}
	}
}

func TestPagesAreCompressedOnce(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: 6 * time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Now: func() time.Time { return tel.End }})
	for _, tc := range []struct {
		path string
		want string // in the body after one gunzip
	}{
		{"/scopes/qwen-7b?range=6h", `data-testid="waterfall"`},
		{"/metrics", "# HELP casebook_http_request_duration_seconds"},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("GET %s: %d, Content-Encoding %q", tc.path, rec.Code, rec.Header().Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: body after one gunzip lacks %q (%v)", tc.path, tc.want, err)
		}
	}
}

// TestBodyLimitNamesTheLimit checks that a body over the console-wide
// limit is a 413 that says what the limit is.
func TestBodyLimitNamesTheLimit(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, BodyLimit: "1K"})
	req := httptest.NewRequest(http.MethodPost, "/api/v1/diagnose", strings.NewReader(strings.Repeat("x", 4096)))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "limit of 1KB") {
		t.Errorf("status %d body %s", rec.Code, rec.Body.String())
	}
}

// TestInsecureBanner checks that a console exposed without authentication
// says so on every page, and one on loopback does not.
func TestInsecureBanner(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	for _, insecure := range []bool{false, true} {
		srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Now: func() time.Time { return tel.End },
			Auth: web.AuthOptions{Insecure: insecure}})
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := strings.Contains(rec.Body.String(), `data-testid="insecure-banner"`); got != insecure {
			t.Errorf("insecure=%v: banner shown %v (status %d)", insecure, got, rec.Code)
		}
	}
}
