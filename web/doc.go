// Package web assembles Casebook's HTTP server: the Echo instance, the one
// route table, the ordered middleware stack, the single error handler,
// static assets with long cache lifetimes, and the console's own metrics.
package web
