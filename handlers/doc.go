// Package handlers holds Casebook's HTTP adapters: one file per resource,
// each parsing its input, calling telemetry and the diagnosis engine through
// the small interfaces declared in handlers.go, and rendering a views page.
//
// Handlers never write error HTML; they return errors (a *ParamError for bad
// input) and web's error handler renders them.
package handlers
