package web_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/web"
)

type archiveRoutes struct{ registered bool }

func (a *archiveRoutes) Register(g *echo.Group) {
	a.registered = true
	g.GET("/incidents", func(c echo.Context) error { return c.String(http.StatusOK, "incident list") }).Name = "incident.list"
}

func TestRoutesAreNamedAndArchiveIsMounted(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	arch := &archiveRoutes{}
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: arch, Now: func() time.Time { return tel.End }})
	if !arch.registered {
		t.Fatal("IncidentRoutes.Register was not called")
	}
	routes := srv.Routes()
	if len(routes) < 12 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, r := range routes {
		if r.Name == "" || strings.Contains(r.Name, "func") || strings.Contains(r.Name, "github.com") {
			t.Errorf("route %s %s has no name (%q)", r.Method, r.Path, r.Name)
		}
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/incidents", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "incident list" {
		t.Errorf("archive route: %d %q", rec.Code, rec.Body.String())
	}
	if got := srv.Reverse(web.RouteInstance, "m", "i"); got != "/scopes/m/i" {
		t.Errorf("Reverse(%s) = %q", web.RouteInstance, got)
	}
}

func TestNotFoundKeepsTheHandlersMessage(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: routeFunc(func(g *echo.Group) {
		g.GET("/incidents/:id", func(c echo.Context) error {
			return echo.NewHTTPError(http.StatusNotFound, "incident "+c.Param("id")+" does not exist")
		}).Name = "incident.show"
	})})
	for _, tc := range []struct{ path, want string }{
		{"/incidents/7", "incident 7 does not exist"},
		{"/nowhere", "There is no page at /nowhere."},
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d, body lacks %q", tc.path, rec.Code, tc.want)
		}
	}
}

type routeFunc func(g *echo.Group)

func (f routeFunc) Register(g *echo.Group) { f(g) }

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
