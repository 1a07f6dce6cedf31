package auth

import (
	"context"
	"fmt"
)

// Role is what a principal may do. Roles are ordered: each includes the
// ones below it.
type Role int

// Roles, lowest first. RoleNone is an anonymous request (or a share-link
// holder, whose link is its own credential for one incident).
const (
	RoleNone Role = iota
	RoleViewer
	RoleReviewer
	RoleAdmin
)

// String is the role's stable name, as stored and shown.
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleReviewer:
		return "reviewer"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole parses viewer, reviewer or admin.
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return RoleViewer, nil
	case "reviewer":
		return RoleReviewer, nil
	case "admin":
		return RoleAdmin, nil
	}
	return RoleNone, fmt.Errorf("auth: role %q: want viewer, reviewer or admin", s)
}

// Scope is what an API token may be used for.
type Scope string

// API-token scopes. A webhook token may only post alerts; read acts as a
// viewer and write as a reviewer. No token is ever an admin.
const (
	ScopeWebhook Scope = "webhook"
	ScopeRead    Scope = "read"
	ScopeWrite   Scope = "write"
)

// ParseScope parses webhook, read or write.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeWebhook, ScopeRead, ScopeWrite:
		return Scope(s), nil
	}
	return "", fmt.Errorf("auth: scope %q: want webhook, read or write", s)
}

// Role is the role a token of this scope acts with.
func (s Scope) Role() Role {
	switch s {
	case ScopeRead:
		return RoleViewer
	case ScopeWrite:
		return RoleReviewer
	}
	return RoleNone
}

// Kind says how a principal was authenticated.
type Kind string

// Kinds of authentication.
const (
	KindAnonymous Kind = ""        // nothing presented
	KindOpen      Kind = "open"    // no authentication configured: everyone is an admin
	KindSession   Kind = "session" // a built-in account's login session
	KindProxy     Kind = "proxy"   // headers from a trusted authenticating proxy
	KindToken     Kind = "token"   // an API token (Authorization: Bearer)
)

// Principal is who makes a request.
type Principal struct {
	Name  string // the user or token name; "" for anonymous and open access
	Role  Role
	Kind  Kind
	Scope Scope // for KindToken
}

// Authenticated reports whether the request presented valid credentials
// (or needs none).
func (p Principal) Authenticated() bool { return p.Kind != KindAnonymous }

// Can reports whether p holds at least role r.
func (p Principal) Can(r Role) bool { return p.Role >= r }

// Actor is the name written to labels, notes and the audit log.
func (p Principal) Actor() string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Kind == KindOpen:
		return "local"
	}
	return "anonymous"
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of a request context; anonymous when
// none was set.
func FromContext(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}
