package views

import (
	"github.com/a-h/templ"

	"github.com/casebook/casebook/internal/route"
)

// link is the URL of route n with its parameters, for an href or a form
// action.
func link(n route.Name, params ...any) templ.SafeURL {
	return templ.SafeURL(route.URL(n, params...))
}
