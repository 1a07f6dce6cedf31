package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
)

// localize chooses the request's language (i18n.Match: ?lang=, the
// switch's cookie, Accept-Language) and puts its Locale in the request
// context, where pages, error pages and exports print from it.
func localize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		var cookie string
		if ck, err := req.Cookie(i18n.CookieName); err == nil {
			cookie = ck.Value
		}
		tag := i18n.Match(req.URL.Query().Get(i18n.QueryParam), cookie, "", req.Header.Get("Accept-Language"))
		h := c.Response().Header()
		h.Add("Vary", "Accept-Language, Cookie")
		h.Set("Content-Language", i18n.Code(tag))
		c.SetRequest(req.WithContext(i18n.With(req.Context(), i18n.New(tag))))
		return next(c)
	}
}

// languageCookieAge keeps the switch's choice for a year.
const languageCookieAge = 365 * 24 * time.Hour

// setLanguage is the language switch: it keeps the chosen language in a
// cookie and sends the browser back to the page it came from.
func setLanguage(c echo.Context) error {
	tag, ok := i18n.Parse(c.FormValue("lang"))
	if !ok {
		return echo.NewHTTPError(http.StatusBadRequest, i18n.T(c.Request().Context(), "error.language_unknown"))
	}
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
