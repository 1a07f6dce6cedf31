package web

import (
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/static"
)

// Route names. Every route is named so that links can be built with
// e.Reverse.
const (
	RouteOverview         = "overview.show"
	RouteModel            = "scope.model"
	RouteInstance         = "scope.instance"
	RouteModelDiagnose    = "diagnosis.create.model"
	RouteInstanceDiagnose = "diagnosis.create.instance"
	RouteFaults           = "fault.list"
	RouteFaultCreate      = "fault.create"
	RouteFaultClear       = "fault.clear"
	RouteAPIDiagnose      = "api.diagnosis.create"
	RouteHealthz          = "health.live"
	RouteReadyz           = "health.ready"
	RouteMetrics          = "metrics"
	RouteStatic           = "static"
)

// registerRoutes is the one route table.
func registerRoutes(e *echo.Echo, h *handlers.Handlers, opts Options, om *observability) {
	// Pages.
	e.GET("/", h.Overview.Show).Name = RouteOverview
	e.GET("/scopes/:model", h.Scopes.Show).Name = RouteModel
	e.GET("/scopes/:model/:instance", h.Scopes.Show).Name = RouteInstance

	// Diagnose now. With an IncidentOpener this opens an incident.
	e.POST("/scopes/:model/diagnose", h.Diagnoses.Create).Name = RouteModelDiagnose
	e.POST("/scopes/:model/:instance/diagnose", h.Diagnoses.Create).Name = RouteInstanceDiagnose

	// Demo fault panel (404 without a simulator).
	e.GET("/faults", h.Faults.List).Name = RouteFaults
	e.POST("/faults", h.Faults.Create).Name = RouteFaultCreate
	e.POST("/faults/clear", h.Faults.Clear).Name = RouteFaultClear
	e.GET("/storage", h.Storage.Show).Name = RouteStorage

	// JSON API.
	e.POST("/api/v1/diagnose", h.Diagnoses.API).Name = RouteAPIDiagnose

	// Operations.
	e.GET("/healthz", h.Health.Live).Name = RouteHealthz
	e.GET("/readyz", h.Health.Ready).Name = RouteReadyz
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(om.reg, promhttp.HandlerOpts{}))).Name = RouteMetrics
	e.GET(static.Prefix+"*", serveStatic).Name = RouteStatic

	// Sign-in and administration (access rules: RoutePolicies).
	if a := opts.Auth.Accounts; a != nil {
		e.GET("/login", a.LoginForm).Name = RouteLogin
		e.POST("/login", a.Login).Name = RouteLoginPost
		e.POST("/logout", a.Logout).Name = RouteLogout
		e.GET("/admin/users", a.Users).Name = RouteUsers
		e.POST("/admin/users", a.CreateUser).Name = RouteUserCreate
		e.POST("/admin/users/:id", a.UpdateUser).Name = RouteUserUpdate
		e.POST("/admin/users/:id/delete", a.DeleteUser).Name = RouteUserDelete
		e.GET("/admin/tokens", a.Tokens).Name = RouteTokens
		e.POST("/admin/tokens", a.CreateToken).Name = RouteTokenCreate
		e.POST("/admin/tokens/:id/revoke", a.RevokeToken).Name = RouteTokenRevoke
		e.GET("/admin/audit", a.Audit).Name = RouteAudit
		e.GET("/admin/audit.json", a.AuditJSON).Name = RouteAuditExport
	}

	// The incident archive (incidents, knowledge base, accuracy).
	if opts.Incidents != nil {
		opts.Incidents.Register(e.Group(""))
	}
}

// serveStatic serves embedded assets. A request carrying the current
// content version may be cached for a year; others must revalidate.
func serveStatic(c echo.Context) error {
	name := path.Clean(c.Param("*"))
	b, err := fs.ReadFile(static.FS, name)
	if err != nil {
		return echo.ErrNotFound
	}
	v := static.Version(name)
	hdr := c.Response().Header()
	if c.QueryParam("v") == v {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "no-cache")
	}
	hdr.Set("ETag", `"`+v+`"`)
	if c.Request().Header.Get("If-None-Match") == `"`+v+`"` {
		return c.NoContent(http.StatusNotModified)
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	return c.Blob(http.StatusOK, ct, b)
}
