package views

import (
	"context"
	"net/url"
)

// RequestInfo is what every page knows about the request: who is signed in
// and the form token. The console's middleware puts it in the request
// context; pages read it through the templ context.
type RequestInfo struct {
	User     string // "" when no one is signed in (or no authentication is configured)
	Role     string // viewer, reviewer or admin
	Admin    bool   // show the administration links
	Logout   bool   // the user signed in with a password and may sign out here
	CSRF     string // the form token every state-changing form posts
	Insecure bool   // the console is exposed without authentication
	Path     string // the page's path and query, where the language switch returns to
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying ri for the pages rendered with it.
func WithRequestInfo(ctx context.Context, ri RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

// RequestInfoFrom returns the request's info; the zero value when none.
func RequestInfoFrom(ctx context.Context) RequestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(RequestInfo)
	return ri
}

// CSRFFieldName is the form field (and query parameter, for uploads)
// carrying the form token.
const CSRFFieldName = "csrf_token"

// withCSRF appends the form token to an action URL, for multipart forms
// whose body the server must not read before the handler streams it.
func withCSRF(ctx context.Context, action string) string {
	tok := RequestInfoFrom(ctx).CSRF
	if tok == "" {
		return action
	}
	u, err := url.Parse(action)
	if err != nil {
		return action
	}
	q := u.Query()
	q.Set(CSRFFieldName, tok)
	u.RawQuery = q.Encode()
	return u.String()
}
