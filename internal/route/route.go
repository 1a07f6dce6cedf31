package route

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Name is a route's name: dotted, resource first ("incident.show").
type Name string

// Route names, grouped as web/routes.go registers them.
const (
	// Pages.
	Overview      Name = "overview.show"  // /
	ScopeModel    Name = "scope.model"    // /scopes/:model
	ScopeInstance Name = "scope.instance" // /scopes/:model/:instance
	Storage       Name = "storage.show"   // /storage

	// Diagnose now.
	ScopeModelDiagnose    Name = "diagnosis.create.model"    // /scopes/:model/diagnose
	ScopeInstanceDiagnose Name = "diagnosis.create.instance" // /scopes/:model/:instance/diagnose
	APIDiagnose           Name = "api.diagnosis.create"      // /api/v1/diagnose

	// The demo fault panel.
	Faults      Name = "fault.list"   // /faults
	FaultCreate Name = "fault.create" // /faults
	FaultClear  Name = "fault.clear"  // /faults/clear

	// Operations.
	Healthz Name = "health.live"  // /healthz
	Readyz  Name = "health.ready" // /readyz
	Metrics Name = "metrics"      // /metrics
	Static  Name = "static"       // /static/*

	// The language switch.
	Language Name = "session.language.update" // /language

	// Sign-in and administration.
	Login       Name = "session.login.form" // /login
	LoginPost   Name = "session.login"      // /login
	Logout      Name = "session.logout"     // /logout
	Users       Name = "admin.user.list"    // /admin/users
	UserCreate  Name = "admin.user.create"  // /admin/users
	UserUpdate  Name = "admin.user.update"  // /admin/users/:id
	UserDelete  Name = "admin.user.delete"  // /admin/users/:id/delete
	Tokens      Name = "admin.token.list"   // /admin/tokens
	TokenCreate Name = "admin.token.create" // /admin/tokens
	TokenRevoke Name = "admin.token.revoke" // /admin/tokens/:id/revoke
	Audit       Name = "admin.audit.list"   // /admin/audit
	AuditExport Name = "admin.audit.export" // /admin/audit.json

	// The incident archive.
	IncidentList       Name = "incident.list"             // /incidents
	IncidentShow       Name = "incident.show"             // /incidents/:id
	IncidentLabel      Name = "incident.label.create"     // /incidents/:id/labels
	IncidentNote       Name = "incident.note.create"      // /incidents/:id/notes
	IncidentDiagnose   Name = "incident.diagnosis.create" // /incidents/:id/diagnoses
	IncidentShare      Name = "incident.share.create"     // /incidents/:id/shares
	IncidentRevoke     Name = "incident.share.revoke"     // /incidents/:id/shares/:share/revoke
	IncidentPostmortem Name = "incident.postmortem"       // /incidents/:id/postmortem.md
	IncidentPrint      Name = "incident.print"            // /incidents/:id/print
	IncidentPreview    Name = "incident.preview"          // /incidents/:id/preview.png
	ReviewQueue        Name = "review.queue"              // /review
	ShareShow          Name = "share.show"                // /share/:token
	SharePreview       Name = "share.preview"             // /share/:token/preview.png
	Accuracy           Name = "accuracy.show"             // /accuracy
	KBList             Name = "kb.list"                   // /kb
	KBShow             Name = "kb.show"                   // /kb/:cause

	// Kernel traces of an incident.
	IncidentTraceCreate Name = "incident.trace.create" // /incidents/:id/traces
	IncidentTraceDelete Name = "incident.trace.delete" // /incidents/:id/traces/:trace/delete

	// Change requests of an incident.
	ChangeCreate  Name = "change.create"  // /incidents/:id/changes
	ChangeShow    Name = "change.show"    // /incidents/:id/changes/:cid (also :cid.md, :cid.json)
	ChangeStatus  Name = "change.status"  // /incidents/:id/changes/:cid/status
	ChangeDeliver Name = "change.deliver" // /incidents/:id/changes/:cid/deliver

	// The JSON API and the webhook.
	APIAlertmanager        Name = "api.alert.alertmanager"    // /api/v1/alerts/alertmanager
	APIIncidentList        Name = "api.incident.list"         // /api/v1/incidents
	APIIncidentShow        Name = "api.incident.show"         // /api/v1/incidents/:id
	APIIncidentLabel       Name = "api.incident.label.create" // /api/v1/incidents/:id/labels
	APIIncidentNote        Name = "api.incident.note.create"  // /api/v1/incidents/:id/notes
	APIIncidentExport      Name = "api.incident.export"       // /api/v1/incidents/:id/export
	APIIncidentTraceCreate Name = "api.incident.trace.create" // /api/v1/incidents/:id/traces
	APIIncidentTraceList   Name = "api.incident.trace.list"   // /api/v1/incidents/:id/traces
	APIChangeList          Name = "api.change.list"           // /api/v1/incidents/:id/changes
)

// APIPrefix starts the path of every JSON API route; errors under it are
// answered in JSON.
const APIPrefix = "/api/"

// patterns is the path pattern of every route, in Echo's notation: :name
// is one path segment, a trailing * the rest of the path.
var patterns = map[Name]string{
	Overview:              "/",
	ScopeModel:            "/scopes/:model",
	ScopeInstance:         "/scopes/:model/:instance",
	Storage:               "/storage",
	ScopeModelDiagnose:    "/scopes/:model/diagnose",
	ScopeInstanceDiagnose: "/scopes/:model/:instance/diagnose",
	APIDiagnose:           "/api/v1/diagnose",

	Faults:      "/faults",
	FaultCreate: "/faults",
	FaultClear:  "/faults/clear",

	Healthz: "/healthz",
	Readyz:  "/readyz",
	Metrics: "/metrics",
	Static:  "/static/*",

	Language: "/language",

	Login:       "/login",
	LoginPost:   "/login",
	Logout:      "/logout",
	Users:       "/admin/users",
	UserCreate:  "/admin/users",
	UserUpdate:  "/admin/users/:id",
	UserDelete:  "/admin/users/:id/delete",
	Tokens:      "/admin/tokens",
	TokenCreate: "/admin/tokens",
	TokenRevoke: "/admin/tokens/:id/revoke",
	Audit:       "/admin/audit",
	AuditExport: "/admin/audit.json",

	IncidentList:       "/incidents",
	IncidentShow:       "/incidents/:id",
	IncidentLabel:      "/incidents/:id/labels",
	IncidentNote:       "/incidents/:id/notes",
	IncidentDiagnose:   "/incidents/:id/diagnoses",
	IncidentShare:      "/incidents/:id/shares",
	IncidentRevoke:     "/incidents/:id/shares/:share/revoke",
	IncidentPostmortem: "/incidents/:id/postmortem.md",
	IncidentPrint:      "/incidents/:id/print",
	IncidentPreview:    "/incidents/:id/preview.png",
	ReviewQueue:        "/review",
	ShareShow:          "/share/:token",
	SharePreview:       "/share/:token/preview.png",
	Accuracy:           "/accuracy",
	KBList:             "/kb",
	KBShow:             "/kb/:cause",

	IncidentTraceCreate: "/incidents/:id/traces",
	IncidentTraceDelete: "/incidents/:id/traces/:trace/delete",

	ChangeCreate:  "/incidents/:id/changes",
	ChangeShow:    "/incidents/:id/changes/:cid",
	ChangeStatus:  "/incidents/:id/changes/:cid/status",
	ChangeDeliver: "/incidents/:id/changes/:cid/deliver",

	APIAlertmanager:        "/api/v1/alerts/alertmanager",
	APIIncidentList:        "/api/v1/incidents",
	APIIncidentShow:        "/api/v1/incidents/:id",
	APIIncidentLabel:       "/api/v1/incidents/:id/labels",
	APIIncidentNote:        "/api/v1/incidents/:id/notes",
	APIIncidentExport:      "/api/v1/incidents/:id/export",
	APIIncidentTraceCreate: "/api/v1/incidents/:id/traces",
	APIIncidentTraceList:   "/api/v1/incidents/:id/traces",
	APIChangeList:          "/api/v1/incidents/:id/changes",
}

// Pattern returns the path pattern of route n, in Echo's notation. It
// panics on a name that is not a route: names are constants of this
// package, so that is a programming error.
func (n Name) Pattern() string {
	p, ok := patterns[n]
	if !ok {
		panic(fmt.Sprintf("route: %q is not a route", string(n)))
	}
	return p
}

// Names returns every route name, in no particular order.
func Names() []Name {
	out := make([]Name, 0, len(patterns))
	for n := range patterns {
		out = append(out, n)
	}
	return out
}

// URL returns the path of route n with its parameters filled in, in the
// order of the pattern. A parameter is an int64, an int or a string; a
// string is path-escaped (for the trailing *, each of its segments is).
// It panics when the count or a type is wrong, which is a programming
// error the page's tests catch.
func URL(n Name, params ...any) string {
	pat := n.Pattern()
	var b strings.Builder
	i := 0
	for seg := range strings.SplitSeq(pat[1:], "/") {
		b.WriteByte('/')
		switch {
		case strings.HasPrefix(seg, ":"), seg == "*":
			if i >= len(params) {
				panic(fmt.Sprintf("route: %s (%s) takes more than %d parameters", n, pat, len(params)))
			}
			b.WriteString(param(n, seg, params[i]))
			i++
		default:
			b.WriteString(seg)
		}
	}
	if i != len(params) {
		panic(fmt.Sprintf("route: %s (%s) takes %d parameters, got %d", n, pat, i, len(params)))
	}
	return b.String()
}

// URLQuery is URL with the query q appended; an empty q adds nothing.
func URLQuery(n Name, q url.Values, params ...any) string {
	u := URL(n, params...)
	if e := q.Encode(); e != "" {
		u += "?" + e
	}
	return u
}

func param(n Name, seg string, v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case string:
		if v == "" {
			panic(fmt.Sprintf("route: %s: parameter %s is empty", n, seg))
		}
		if seg != "*" {
			return url.PathEscape(v)
		}
		parts := strings.Split(v, "/")
		for i, p := range parts {
			parts[i] = url.PathEscape(p)
		}
		return strings.Join(parts, "/")
	}
	panic(fmt.Sprintf("route: %s: parameter %s is a %T, not an int64, int or string", n, seg, v))
}
