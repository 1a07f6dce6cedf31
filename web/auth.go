package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// AuthMode is how the console authenticates people.
type AuthMode string

// Authentication modes.
const (
	// AuthNone: no sign-in; everyone is an admin. Only for a console on
	// the loopback interface (or exposed with --insecure-no-auth).
	AuthNone AuthMode = "none"
	// AuthProxy: an authenticating proxy (oauth2-proxy) names the user in
	// X-Forwarded-User / X-Forwarded-Email; trusted only from its addresses.
	AuthProxy AuthMode = "proxy"
	// AuthAccounts: built-in accounts with passwords and sessions.
	AuthAccounts AuthMode = "accounts"
)

// AuthOptions configures authentication. The zero value is AuthNone
// without API tokens or administration pages.
type AuthOptions struct {
	Mode AuthMode
	// Accounts serves sign-in and administration and resolves sessions
	// and API tokens; required for AuthProxy and AuthAccounts.
	Accounts *handlers.Accounts
	// Proxy lists the trusted proxies: their identity headers are believed
	// (AuthProxy) and their X-Forwarded-For names the client.
	Proxy auth.Proxy
	// ProxyRole is the role of a proxy user without an account; zero means
	// viewer.
	ProxyRole auth.Role
	// WebhookToken is the static --webhook-token; it authenticates as an
	// API token with the webhook scope.
	WebhookToken string
	// Insecure shows every page a red banner: the console is exposed
	// without authentication.
	Insecure bool
}

// authenticator resolves the principal of every request, enforces the
// route policies and checks form tokens.
type authenticator struct {
	opts   AuthOptions
	routes map[string]entry // by "METHOD pattern"
	now    func() time.Time
}

// errBadToken is a bearer token that is neither a known API token nor the
// webhook token.
var errBadToken = handlers.HTTPError(http.StatusUnauthorized, "error.bad_token")

func (a *authenticator) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := req.Context()
		p, sess, err := a.principal(c)
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="casebook"`)
			return err
		}
		rt, ok := a.routes[req.Method+" "+c.Path()]
		csrf := sess.CSRF
		if p.Kind != auth.KindToken && csrf == "" && !cookieless[rt.name] {
			csrf = a.csrfCookie(c)
		}
		ctx = auth.WithPrincipal(ctx, p)
		ctx = store.WithActor(ctx, store.Actor{Name: p.Actor(), Addr: c.RealIP()})
		ctx = views.WithRequestInfo(ctx, views.RequestInfo{
			User: p.Name, Role: p.Role.String(), Admin: p.Can(auth.RoleAdmin) && a.opts.Accounts != nil,
			Logout: p.Kind == auth.KindSession, CSRF: csrf,
			Insecure: a.opts.Insecure && p.Kind == auth.KindOpen,
			Path:     req.URL.RequestURI(),
		})
		c.SetRequest(req.WithContext(ctx))
		accountLanguage(c, sess.User.Language)

		if !ok {
			return next(c) // no such route: 404 or 405
		}
		pol := rt.policy
		if !pol.Allows(p) {
			if pol == PolicyWebhook && (p.Kind == auth.KindOpen || !p.Authenticated()) {
				return a.denyWebhook(c)
			}
			return a.deny(c, p)
		}
		if unsafeMethod(req.Method) && pol != PolicyWebhook && p.Kind != auth.KindToken && !isJSON(req) && !a.validCSRF(c, csrf) {
			return handlers.HTTPError(http.StatusForbidden, "error.form_token")
		}
		return next(c)
	}
}

// principal resolves who makes the request: a bearer token first, then
// the mode's own credential.
func (a *authenticator) principal(c echo.Context) (auth.Principal, store.Session, error) {
	req := c.Request()
	ctx := req.Context()
	acc := a.opts.Accounts
	if bearer, ok := strings.CutPrefix(req.Header.Get(echo.HeaderAuthorization), "Bearer "); ok {
		bearer = strings.TrimSpace(bearer)
		if a.opts.WebhookToken != "" && equalSecret(bearer, a.opts.WebhookToken) {
			return auth.Principal{Name: "webhook-token", Kind: auth.KindToken, Scope: auth.ScopeWebhook}, store.Session{}, nil
		}
		if acc != nil && auth.LooksLikeToken(bearer, auth.TokenPrefix) {
			t, err := acc.Store().TokenByHash(ctx, auth.HashToken(bearer), a.now())
			if err == nil {
				sc := auth.Scope(t.Scope)
				return auth.Principal{Name: t.Name, Kind: auth.KindToken, Scope: sc, Role: sc.Role()}, store.Session{}, nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return auth.Principal{}, store.Session{}, err
			}
		}
		if a.opts.Mode != AuthNone && a.opts.Mode != "" {
			return auth.Principal{}, store.Session{}, errBadToken
		}
		// Without authentication a wrong bearer changes nothing but on
		// webhook routes, which take only a webhook token.
	}
	switch a.opts.Mode {
	case AuthAccounts:
		if ck, err := c.Cookie(handlers.SessionCookie); err == nil && ck.Value != "" && len(ck.Value) <= 128 {
			s, err := acc.Store().SessionByHash(ctx, auth.HashToken(ck.Value), a.now())
			if err == nil {
				r, _ := auth.ParseRole(s.User.Role)
				return auth.Principal{Name: s.User.Name, Role: r, Kind: auth.KindSession}, s, nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return auth.Principal{}, store.Session{}, err
			}
		}
		return auth.Principal{}, store.Session{}, nil
	case AuthProxy:
		name := a.opts.Proxy.User(req.RemoteAddr, req.Header.Get)
		if name == "" {
			return auth.Principal{}, store.Session{}, nil
		}
		role := a.opts.ProxyRole
		if role == auth.RoleNone {
			role = auth.RoleViewer
		}
		u, err := acc.Store().UserByName(ctx, name)
		switch {
		case err == nil:
			role, _ = auth.ParseRole(u.Role)
		case !errors.Is(err, store.ErrNotFound):
			return auth.Principal{}, store.Session{}, err
		}
		// No session, but the account (when there is one) and its
		// preferences.
		return auth.Principal{Name: name, Role: role, Kind: auth.KindProxy}, store.Session{User: u}, nil
	}
	return auth.Principal{Role: auth.RoleAdmin, Kind: auth.KindOpen}, store.Session{}, nil
}

// deny answers a request its principal may not make: 401 with the sign-in
// page (or a JSON error) when no one is signed in, else 403.
func (a *authenticator) deny(c echo.Context, p auth.Principal) error {
	req := c.Request()
	if p.Authenticated() {
		return handlers.HTTPError(http.StatusForbidden, "error.role", p.Role.String())
	}
	if a.opts.Mode == AuthAccounts && req.Method == http.MethodGet && !strings.HasPrefix(req.URL.Path, route.APIPrefix) {
		return a.opts.Accounts.RenderLogin(c, http.StatusUnauthorized, "", "")
	}
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="casebook"`)
	return handlers.HTTPError(http.StatusUnauthorized, "error.sign_in")
}

// denyWebhook answers a webhook request without a webhook-scoped token:
// 403 while no --webhook-token is configured, else 401.
func (a *authenticator) denyWebhook(c echo.Context) error {
	if a.opts.WebhookToken == "" {
		return handlers.HTTPError(http.StatusForbidden, "error.webhook_off")
	}
	c.Response().Header().Set("WWW-Authenticate", `Bearer realm="casebook"`)
	return handlers.HTTPError(http.StatusUnauthorized, "error.bearer")
}

// csrfCookie returns the browser's form token, setting a new one when it
// has none.
func (a *authenticator) csrfCookie(c echo.Context) string {
	if ck, err := c.Cookie(handlers.CSRFCookie); err == nil && auth.LooksLikeToken(ck.Value, "") {
		return ck.Value
	}
	tok, err := auth.NewToken("")
	if err != nil {
		return ""
	}
	secure := a.opts.Accounts != nil && a.opts.Accounts.SecureCookies()
	c.SetCookie(&http.Cookie{Name: handlers.CSRFCookie, Value: tok, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	// The request's own check compares with the cookie it sent, which is
	// none: a first post without a cookie fails, as it should.
	return tok
}

// validCSRF compares the submitted form token (form field, X-CSRF-Token
// header, or for multipart uploads the query parameter) with want.
func (a *authenticator) validCSRF(c echo.Context, want string) bool {
	req := c.Request()
	if want == "" {
		return false
	}
	got := req.Header.Get("X-CSRF-Token")
	if got == "" {
		if ct, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); ct == echo.MIMEMultipartForm {
			got = c.QueryParam(views.CSRFFieldName) // reading the form would consume the upload
		} else {
			got = c.FormValue(views.CSRFFieldName)
		}
	}
	return got != "" && equalSecret(got, want)
}

func equalSecret(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// isJSON reports a JSON request body: a browser cannot send one across
// sites without a CORS preflight, which the console never grants.
func isJSON(req *http.Request) bool {
	ct, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	return err == nil && ct == echo.MIMEApplicationJSON
}
