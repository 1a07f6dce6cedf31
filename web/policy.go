package web

import (
	"fmt"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/handlers"
)

// Policy is who may call a route.
type Policy int

// Route policies.
const (
	// PolicyPublic routes need no sign-in: health checks, static assets,
	// the sign-in page, and share links (whose token is the credential the
	// handler checks).
	PolicyPublic Policy = iota
	// PolicyWebhook routes take an API token with the webhook scope or
	// the --webhook-token, in every authentication mode; the middleware
	// is the one place that checks it.
	PolicyWebhook
	// PolicyViewer routes read.
	PolicyViewer
	// PolicyReviewer routes label, note, diagnose and attach traces.
	PolicyReviewer
	// PolicyAdmin routes manage share links, tokens and accounts.
	PolicyAdmin
)

// String names the policy for tests and errors.
func (p Policy) String() string {
	return [...]string{"public", "webhook", "viewer", "reviewer", "admin"}[p]
}

// Route names of sign-in and administration.
const (
	RouteLogin       = "session.login.form"
	RouteLoginPost   = "session.login"
	RouteLogout      = "session.logout"
	RouteUsers       = "admin.user.list"
	RouteUserCreate  = "admin.user.create"
	RouteUserUpdate  = "admin.user.update"
	RouteUserDelete  = "admin.user.delete"
	RouteTokens      = "admin.token.list"
	RouteTokenCreate = "admin.token.create"
	RouteTokenRevoke = "admin.token.revoke"
	RouteAudit       = "admin.audit.list"
	RouteAuditExport = "admin.audit.export"
	RouteStorage     = "storage.show"
)

// RoutePolicies is the one table of who may call which route, by route
// name. web.New refuses to build a console with a route missing here.
var RoutePolicies = map[string]Policy{
	RouteHealthz:            PolicyPublic,
	RouteReadyz:             PolicyPublic,
	RouteStatic:             PolicyPublic,
	RouteLogin:              PolicyPublic,
	RouteLoginPost:          PolicyPublic,
	RouteLogout:             PolicyPublic,
	handlers.RouteShareShow: PolicyPublic,
	// The share link's preview picture: the token is the credential, as
	// for its page, and it shows no more than the page.
	handlers.RouteSharePreview: PolicyPublic,

	handlers.RouteAPIAlertmanager: PolicyWebhook,

	RouteOverview:                      PolicyViewer,
	RouteModel:                         PolicyViewer,
	RouteInstance:                      PolicyViewer,
	RouteFaults:                        PolicyViewer,
	RouteStorage:                       PolicyViewer,
	RouteMetrics:                       PolicyViewer,
	handlers.RouteIncidentList:         PolicyViewer,
	handlers.RouteIncidentShow:         PolicyViewer,
	handlers.RouteIncidentPostmortem:   PolicyViewer,
	handlers.RouteIncidentPrint:        PolicyViewer,
	handlers.RouteIncidentPreview:      PolicyViewer,
	handlers.RouteReviewQueue:          PolicyViewer,
	handlers.RouteAccuracy:             PolicyViewer,
	handlers.RouteKBList:               PolicyViewer,
	handlers.RouteKBShow:               PolicyViewer,
	handlers.RouteAPIIncidentList:      PolicyViewer,
	handlers.RouteAPIIncidentShow:      PolicyViewer,
	handlers.RouteAPIIncidentExport:    PolicyViewer,
	handlers.RouteAPIIncidentTraceList: PolicyViewer,
	handlers.RouteChangeShow:           PolicyViewer,
	handlers.RouteAPIChangeList:        PolicyViewer,

	RouteModelDiagnose:                   PolicyReviewer,
	RouteInstanceDiagnose:                PolicyReviewer,
	RouteAPIDiagnose:                     PolicyReviewer,
	RouteFaultCreate:                     PolicyReviewer,
	RouteFaultClear:                      PolicyReviewer,
	handlers.RouteIncidentLabel:          PolicyReviewer,
	handlers.RouteIncidentNote:           PolicyReviewer,
	handlers.RouteIncidentDiagnose:       PolicyReviewer,
	handlers.RouteIncidentTraceCreate:    PolicyReviewer,
	handlers.RouteIncidentTraceDelete:    PolicyReviewer,
	handlers.RouteAPIIncidentLabel:       PolicyReviewer,
	handlers.RouteAPIIncidentNote:        PolicyReviewer,
	handlers.RouteAPIIncidentTraceCreate: PolicyReviewer,
	// A change request is a reviewer's proposal; the team's change
	// process (the webhook's receiver) approves it.
	handlers.RouteChangeCreate:  PolicyReviewer,
	handlers.RouteChangeStatus:  PolicyReviewer,
	handlers.RouteChangeDeliver: PolicyReviewer,

	handlers.RouteIncidentShare:  PolicyAdmin,
	handlers.RouteIncidentRevoke: PolicyAdmin,
	RouteUsers:                   PolicyAdmin,
	RouteUserCreate:              PolicyAdmin,
	RouteUserUpdate:              PolicyAdmin,
	RouteUserDelete:              PolicyAdmin,
	RouteTokens:                  PolicyAdmin,
	RouteTokenCreate:             PolicyAdmin,
	RouteTokenRevoke:             PolicyAdmin,
	RouteAudit:                   PolicyAdmin,
	RouteAuditExport:             PolicyAdmin,
}

// Allows reports whether p may call a route under this policy.
func (pol Policy) Allows(p auth.Principal) bool {
	switch pol {
	case PolicyPublic:
		return true
	case PolicyWebhook:
		return p.Kind == auth.KindToken && p.Scope == auth.ScopeWebhook
	case PolicyViewer:
		return p.Can(auth.RoleViewer)
	case PolicyReviewer:
		return p.Can(auth.RoleReviewer)
	case PolicyAdmin:
		return p.Can(auth.RoleAdmin)
	}
	return false
}

// route is a registered route's name and policy.
type route struct {
	name string
	pol  Policy
}

// cookieless are the routes that never set a cookie: they render no form
// (a share link's page must not track its reader).
var cookieless = map[string]bool{
	handlers.RouteShareShow: true, handlers.RouteSharePreview: true, RouteStatic: true, RouteHealthz: true, RouteReadyz: true, RouteMetrics: true,
}

// routeTable maps "METHOD path" of every registered route to its name
// and policy; it fails when a route has no policy.
func routeTable(e *echo.Echo) (map[string]route, error) {
	out := map[string]route{}
	var missing []string
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		pol, ok := RoutePolicies[r.Name]
		if !ok {
			missing = append(missing, r.Method+" "+r.Path+" ("+r.Name+")")
			continue
		}
		out[r.Method+" "+r.Path] = route{name: r.Name, pol: pol}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("web: routes without an access policy: %v", missing)
	}
	return out, nil
}
