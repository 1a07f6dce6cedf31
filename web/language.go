package web

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
)

// localize chooses the request's language (i18n.Match: ?lang=, the
// switch's cookie, Accept-Language) and puts its Locale in the request
// context, where pages, error pages and exports print from it. The
// authentication middleware chooses again once it knows the account
// (accountLanguage).
func localize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Add("Vary", "Accept-Language, Cookie")
		setLocale(c, "")
		return next(c)
	}
}

// setLocale puts the language i18n.Match picks for the request, given
// the account's preference (empty: none), in the request context.
func setLocale(c echo.Context, account string) {
	req := c.Request()
	var cookie string
	if ck, err := req.Cookie(i18n.CookieName); err == nil {
		cookie = ck.Value
	}
	tag := i18n.Match(req.URL.Query().Get(i18n.QueryParam), cookie, account, req.Header.Get("Accept-Language"))
	c.Response().Header().Set("Content-Language", i18n.Code(tag))
	c.SetRequest(req.WithContext(i18n.With(req.Context(), i18n.New(tag))))
}

// accountLanguage applies a signed-in account's language preference: it
// comes after a shared link's ?lang= and the switch's cookie, before the
// browser's Accept-Language.
func accountLanguage(c echo.Context, pref string) {
	if pref != "" {
		setLocale(c, pref)
	}
}

// languageCookieAge keeps the switch's choice for a year.
const languageCookieAge = 365 * 24 * time.Hour

// languageSwitch is the language switch: it keeps the chosen language in
// a cookie, and as the account's preference when someone with an account
// is signed in (accounts nil: no accounts), and sends the browser back
// to the page it came from. The preference is kept on a best-effort
// basis: a store that cannot write leaves the cookie doing the work.
func languageSwitch(accounts *handlers.Accounts, log *slog.Logger) echo.HandlerFunc {
	return func(c echo.Context) error {
		tag, ok := i18n.Parse(c.FormValue("lang"))
		if !ok {
			return echo.NewHTTPError(http.StatusBadRequest, i18n.T(c.Request().Context(), "error.language_unknown"))
		}
		ctx := c.Request().Context()
		if p := auth.FromContext(ctx); accounts != nil && (p.Kind == auth.KindSession || p.Kind == auth.KindProxy) {
			err := accounts.Store().SetUserLanguage(ctx, p.Name, i18n.Code(tag))
			if err != nil && !errors.Is(err, store.ErrNotFound) { // a proxy user without an account has no preference
				log.WarnContext(ctx, "language switch: keep the account's preference", "user", p.Name, "err", err)
			}
		}
		return setLanguage(c, tag)
	}
}

// setLanguage keeps tag in the switch's cookie and redirects to the
// form's next page.
func setLanguage(c echo.Context, tag language.Tag) error {
	c.SetCookie(&http.Cookie{
		Name: i18n.CookieName, Value: i18n.Code(tag), Path: "/",
		MaxAge: int(languageCookieAge / time.Second), HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https",
	})
	return c.Redirect(http.StatusSeeOther, localPath(c.FormValue("next")))
}

// localPath returns next when it is a path on this console, else the
// overview: the switch must not redirect anywhere else.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return route.URL(route.Overview)
	}
	return next
}
