package web

import (
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/static"
)

// entry is one route of the console: its name, whose path pattern package
// route holds (so that links are built from the name), its method, who
// may call it, and its handler.
type entry struct {
	name    route.Name
	method  string
	policy  Policy
	handler echo.HandlerFunc
}

const (
	get  = http.MethodGet
	post = http.MethodPost
)

// routeTable is the one route table: every route of the console with its
// name, method, path and access policy. New registers it, and the
// authentication middleware looks each request's policy up in it.
// Optional parts (accounts, the archive, change requests) add their
// routes only when they are configured.
func routeTable(h *handlers.Handlers, opts Options, om *observability) []entry {
	t := []entry{
		// Pages.
		{route.Overview, get, PolicyViewer, h.Overview.Show},
		{route.ScopeModel, get, PolicyViewer, h.Scopes.Show},
		{route.ScopeInstance, get, PolicyViewer, h.Scopes.Show},
		{route.Storage, get, PolicyViewer, h.Storage.Show},

		// Diagnose now. With an IncidentOpener this opens an incident.
		{route.ScopeModelDiagnose, post, PolicyReviewer, h.Diagnoses.Create},
		{route.ScopeInstanceDiagnose, post, PolicyReviewer, h.Diagnoses.Create},
		{route.APIDiagnose, post, PolicyReviewer, h.Diagnoses.API},

		// Demo fault panel (404 without a simulator).
		{route.Faults, get, PolicyViewer, h.Faults.List},
		{route.FaultCreate, post, PolicyReviewer, h.Faults.Create},
		{route.FaultClear, post, PolicyReviewer, h.Faults.Clear},

		// Operations.
		{route.Healthz, get, PolicyPublic, h.Health.Live},
		{route.Readyz, get, PolicyPublic, h.Health.Ready},
		{route.Metrics, get, PolicyViewer, echo.WrapHandler(promhttp.HandlerFor(om.reg, promhttp.HandlerOpts{}))},
		{route.Static, get, PolicyPublic, serveStatic},

		// The language switch: a cookie, for anyone, signed in or not,
		// and the account's preference for someone signed in.
		{route.Language, post, PolicyPublic, languageSwitch(opts.Auth.Accounts, opts.Logger)},
	}

	// Sign-in and administration.
	if a := opts.Auth.Accounts; a != nil {
		t = append(t, []entry{
			{route.Login, get, PolicyPublic, a.LoginForm},
			{route.LoginPost, post, PolicyPublic, a.Login},
			{route.Logout, post, PolicyPublic, a.Logout},
			{route.Users, get, PolicyAdmin, a.Users},
			{route.UserCreate, post, PolicyAdmin, a.CreateUser},
			{route.UserUpdate, post, PolicyAdmin, a.UpdateUser},
			{route.UserDelete, post, PolicyAdmin, a.DeleteUser},
			{route.Tokens, get, PolicyAdmin, a.Tokens},
			{route.TokenCreate, post, PolicyAdmin, a.CreateToken},
			{route.TokenRevoke, post, PolicyAdmin, a.RevokeToken},
			{route.Audit, get, PolicyAdmin, a.Audit},
			{route.AuditExport, get, PolicyAdmin, a.AuditJSON},
		}...)
	}

	// The incident archive.
	if inc := opts.Incidents; inc != nil {
		t = append(t, []entry{
			{route.IncidentList, get, PolicyViewer, inc.List},
			{route.IncidentShow, get, PolicyViewer, inc.Show},
			{route.IncidentLabel, post, PolicyReviewer, inc.Label},
			{route.IncidentNote, post, PolicyReviewer, inc.Note},
			{route.IncidentDiagnose, post, PolicyReviewer, inc.Rediagnose},
			{route.IncidentShare, post, PolicyAdmin, inc.Share},
			{route.IncidentRevoke, post, PolicyAdmin, inc.Revoke},
			{route.IncidentPostmortem, get, PolicyViewer, inc.Postmortem},
			{route.IncidentPrint, get, PolicyViewer, inc.Print},
			{route.IncidentPreview, get, PolicyViewer, inc.Preview},
			{route.ReviewQueue, get, PolicyViewer, inc.Queue},
			// The share link's token is the credential; the handler checks it.
			{route.ShareShow, get, PolicyPublic, inc.Shared},
			// The share link's preview picture: the token is the credential,
			// as for its page, and it shows no more than the page.
			{route.SharePreview, get, PolicyPublic, inc.SharedPreview},
			{route.Accuracy, get, PolicyViewer, inc.Knowledge.Accuracy},
			{route.KBList, get, PolicyViewer, inc.Knowledge.KB},
			{route.KBShow, get, PolicyViewer, inc.Knowledge.KBCause},

			// Kernel traces.
			{route.IncidentTraceCreate, post, PolicyReviewer, inc.Traces.UploadTrace},
			{route.IncidentTraceDelete, post, PolicyReviewer, inc.Traces.DeleteTrace},

			// The JSON API and the Alertmanager webhook.
			{route.APIAlertmanager, post, PolicyWebhook, inc.Alerts.Alertmanager},
			{route.APIIncidentList, get, PolicyViewer, inc.API.APIList},
			{route.APIIncidentShow, get, PolicyViewer, inc.API.APIShow},
			{route.APIIncidentLabel, post, PolicyReviewer, inc.API.APILabel},
			{route.APIIncidentNote, post, PolicyReviewer, inc.API.APINote},
			{route.APIIncidentExport, get, PolicyViewer, inc.API.APIExport},
			{route.APIIncidentTraceCreate, post, PolicyReviewer, inc.Traces.APIUploadTrace},
			{route.APIIncidentTraceList, get, PolicyViewer, inc.Traces.APITraces},
		}...)

		// Change requests: a reviewer's proposal; the team's change
		// process (the webhook's receiver) approves it.
		if ch := inc.Changes; ch != nil {
			t = append(t, []entry{
				{route.ChangeCreate, post, PolicyReviewer, ch.Create},
				{route.ChangeShow, get, PolicyViewer, ch.Show}, // also :cid.md and :cid.json
				{route.ChangeStatus, post, PolicyReviewer, ch.Status},
				{route.ChangeDeliver, post, PolicyReviewer, ch.Deliver},
				{route.APIChangeList, get, PolicyViewer, ch.APIList},
			}...)
		}
	}
	return t
}

// register adds the table's routes to e, each under its name, and
// returns them by "METHOD pattern", the key the authentication
// middleware finds a request's route by.
func register(e *echo.Echo, table []entry) map[string]entry {
	byPath := make(map[string]entry, len(table))
	for _, r := range table {
		p := r.name.Pattern()
		e.Add(r.method, p, r.handler).Name = string(r.name)
		byPath[r.method+" "+p] = r
	}
	return byPath
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
