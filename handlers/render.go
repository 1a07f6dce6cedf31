package handlers

import (
	"bytes"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// FragmentHeader is set by the page script when it asks for the refreshable
// part of a page rather than the whole document.
const FragmentHeader = "X-Casebook-Fragment"

// render renders a component into a buffer first, so that a failing
// template yields a clean error page instead of half a document.
func render(c echo.Context, status int, cmp templ.Component) error {
	var buf bytes.Buffer
	if err := cmp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// isFragment tells a live-refresh request from our script from a normal
// page navigation.
func isFragment(c echo.Context) bool {
	return c.Request().Header.Get(FragmentHeader) != ""
}

// redirect answers a form post with 303 See Other.
func redirect(c echo.Context, url string) error {
	return c.Redirect(http.StatusSeeOther, url)
}
