package web

import (
	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/internal/route"
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

// cookieless are the routes that never set a cookie: they render no form
// (a share link's page must not track its reader).
var cookieless = map[route.Name]bool{
	route.ShareShow: true, route.SharePreview: true, route.Static: true, route.Healthz: true, route.Readyz: true, route.Metrics: true,
}
