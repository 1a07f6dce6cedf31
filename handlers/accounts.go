package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// AccountStore is what sign-in and the administration pages need from the
// archive. *store.Store implements it.
type AccountStore interface {
	AddUser(ctx context.Context, name, role string, passwordHash []byte, now time.Time) (store.User, error)
	UserByName(ctx context.Context, name string) (store.User, error)
	Users(ctx context.Context) ([]store.User, error)
	UpdateUser(ctx context.Context, id int64, role string, passwordHash []byte, now time.Time) (store.User, error)
	DeleteUser(ctx context.Context, id int64, now time.Time) error
	SetUserLanguage(ctx context.Context, name, lang string) error
	CreateSession(ctx context.Context, idHash []byte, userID int64, csrf, remote string, now, expiresAt time.Time) error
	SessionByHash(ctx context.Context, idHash []byte, now time.Time) (store.Session, error)
	DeleteSession(ctx context.Context, idHash []byte) error
	AddToken(ctx context.Context, name, scope string, hash []byte, now time.Time) (store.APIToken, error)
	TokenByHash(ctx context.Context, hash []byte, now time.Time) (store.APIToken, error)
	Tokens(ctx context.Context) ([]store.APIToken, error)
	RevokeToken(ctx context.Context, id int64, now time.Time) error
	Audit(ctx context.Context, at time.Time, action, target string, before, after any) error
	AuditLog(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error)
}

// Cookie names. The session cookie holds a random session id (the store
// keeps its hash); the form-token cookie backs the double-submit check
// where there is no session.
const (
	SessionCookie = "casebook_session"
	CSRFCookie    = "casebook_csrf"
)

// AccountDeps are the dependencies of sign-in and administration.
type AccountDeps struct {
	Store AccountStore // required
	// PasswordLogin enables /login (the accounts authentication mode).
	PasswordLogin bool
	// Layout builds the page frame; nil means a plain frame.
	Layout func(title, nav string) views.LayoutView
	// Limiter bounds failed sign-ins per (client address, name) and per
	// client address; nil means auth.NewLoginLimiter().
	Limiter *auth.LoginLimiter
	// SessionTTL is how long a sign-in lasts; zero means 12 h.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure (the console is served over
	// HTTPS, directly or behind a proxy).
	SecureCookies bool
	Logger        *slog.Logger
	Now           func() time.Time // nil means time.Now
}

// Accounts serves sign-in, sign-out and the administration pages (users,
// API tokens, audit log).
type Accounts struct{ d AccountDeps }

// NewAccounts builds the account handlers, filling in defaults.
func NewAccounts(d AccountDeps) *Accounts {
	if d.Limiter == nil {
		d.Limiter = auth.NewLoginLimiter()
	}
	if d.SessionTTL <= 0 {
		d.SessionTTL = 12 * time.Hour
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Accounts{d: d}
}

// Store returns the account store, for the authentication middleware.
func (h *Accounts) Store() AccountStore { return h.d.Store }

// SecureCookies reports whether cookies are marked Secure.
func (h *Accounts) SecureCookies() bool { return h.d.SecureCookies }

func (h *Accounts) layout(title, nav string) views.LayoutView {
	if h.d.Layout != nil {
		return h.d.Layout(title, nav)
	}
	return views.LayoutView{Title: title, Nav: nav}
}

// LoginForm shows the sign-in page. Status is 200 here; the middleware
// renders it with 401 for pages that need a sign-in.
func (h *Accounts) LoginForm(c echo.Context) error {
	if !h.d.PasswordLogin {
		return HTTPError(http.StatusNotFound, "error.password_off_long")
	}
	return h.RenderLogin(c, http.StatusOK, "", "")
}

// RenderLogin renders the sign-in page with status, keeping the page asked
// for as the place to return to.
func (h *Accounts) RenderLogin(c echo.Context, status int, name, msg string) error {
	next := c.FormValue("next")
	if c.Request().Method == http.MethodGet && c.Path() != route.Login.Pattern() {
		next = c.Request().URL.RequestURI()
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, status, views.LoginPage(views.LoginView{Layout: h.layout(i18n.T(c.Request().Context(), "login.title"), ""), Next: safeNext(next), Name: name, Error: msg}))
}

// safeNext keeps only local paths, so that the sign-in page cannot be used
// to send someone elsewhere.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || len(next) > 2048 {
		return route.URL(route.Overview)
	}
	return next
}

// Login checks a name and password and starts a session.
func (h *Accounts) Login(c echo.Context) error {
	if !h.d.PasswordLogin {
		return HTTPError(http.StatusNotFound, "error.password_off")
	}
	ctx := c.Request().Context()
	name := strings.TrimSpace(c.FormValue("name"))
	password := c.FormValue("password")
	now := h.d.Now()
	if len(name) > auth.MaxUserLen {
		return badParam("name", "is %d bytes; the limit is %d", len(name), auth.MaxUserLen)
	}
	if ok, wait := h.d.Limiter.Begin(now, c.RealIP(), name); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		c.Response().Header().Set("Retry-After", fmt.Sprint(secs))
		return h.RenderLogin(c, http.StatusTooManyRequests, name, fmt.Sprintf("Too many sign-in attempts: an address may fail %d times in a row for one name and %d for all names, then once every %d seconds. Try again in %d s.",
			auth.LoginPairBurst, auth.LoginAddrBurst, int(auth.LoginRefillTime.Seconds()), secs))
	}
	u, err := h.d.Store.UserByName(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		auth.BurnPasswordCheck(password)
	case err != nil:
		return err
	default:
		err = auth.CheckPassword(u.PasswordHash, password)
	}
	if err != nil {
		_ = h.d.Store.Audit(ctx, now, "session.login_failed", "user "+name, nil, nil)
		return h.RenderLogin(c, http.StatusUnauthorized, name, i18n.T(ctx, "login.wrong"))
	}
	h.d.Limiter.Succeeded(now, c.RealIP(), name)
	sid, err := auth.NewToken("")
	if err != nil {
		return err
	}
	csrf, err := auth.NewToken("")
	if err != nil {
		return err
	}
	exp := now.Add(h.d.SessionTTL)
	if err := h.d.Store.CreateSession(ctx, auth.HashToken(sid), u.ID, csrf, c.RealIP(), now, exp); err != nil {
		return err
	}
	_ = h.d.Store.Audit(store.WithActor(ctx, store.Actor{Name: u.Name, Addr: c.RealIP()}), now, "session.login", "user "+u.Name, nil, nil)
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: sid, Path: "/", Expires: exp, MaxAge: int(h.d.SessionTTL.Seconds()),
		HttpOnly: true, Secure: h.d.SecureCookies, SameSite: http.SameSiteLaxMode})
	return redirect(c, safeNext(c.FormValue("next")))
}

// Logout ends the session.
func (h *Accounts) Logout(c echo.Context) error {
	if ck, err := c.Cookie(SessionCookie); err == nil && ck.Value != "" {
		if err := h.d.Store.DeleteSession(c.Request().Context(), auth.HashToken(ck.Value)); err != nil {
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.d.SecureCookies, SameSite: http.SameSiteLaxMode})
	if h.d.PasswordLogin {
		return redirect(c, route.URL(route.Login))
	}
	return redirect(c, route.URL(route.Overview))
}

// author is the name recorded for a label, note or share link: the
// signed-in user when there is one (a session or the proxy), else the name
// the form or request gave, else "local"; an API token is "token NAME", whatever its
// request says, so a token cannot write as a person.
func author(c echo.Context, given string) string {
	p := auth.FromContext(c.Request().Context())
	switch p.Kind {
	case auth.KindSession, auth.KindProxy:
		if p.Name != "" {
			return p.Name
		}
	case auth.KindToken:
		// A token writes as itself: its "by" may not name a person.
		return "token " + p.Name
	}
	if g := strings.TrimSpace(given); g != "" {
		return g
	}
	// No name given without authentication: the console's own actor
	// ("local"), so that a review is one click in every mode.
	return p.Actor()
}

// webhookToken reports whether the request carries an API token with the
// webhook scope (checked by the authentication middleware).
func webhookToken(c echo.Context) bool {
	p := auth.FromContext(c.Request().Context())
	return p.Kind == auth.KindToken && p.Scope == auth.ScopeWebhook
}
