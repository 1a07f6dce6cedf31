// Package handlers holds Casebook's HTTP adapters: one file per resource,
// each parsing its input, calling telemetry and the diagnosis engine through
// the small interfaces declared in handlers.go, and rendering a views page.
//
// Handlers never write error HTML; they return errors (a *ParamError for bad
// input) and web's error handler renders them. They register no routes:
// web's route table binds each handler method to its route, and links,
// form actions and redirects are built from route names with
// internal/route's URL.
package handlers
