// Package web assembles Casebook's HTTP server: the Echo instance, the one
// route table, the ordered middleware stack, the single error handler,
// static assets with long cache lifetimes, and the console's own metrics.
//
// The route table (routes.go) lists every route with its name, method,
// access policy and handler; the name's path pattern comes from package
// internal/route, which links are built from. New registers the table,
// and the authentication middleware finds each request's policy in it.
package web
