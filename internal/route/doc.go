// Package route names every route of the console and knows its path
// pattern, so that links, form actions and redirects are built from a
// route's name (URL(IncidentShow, id)) instead of by hand. It is a leaf:
// views, handlers, the detector and the server all import it, and it
// imports only the standard library. web/routes.go binds a method, an
// access policy and a handler to each name; the patterns here are the
// ones it registers.
package route
