// Package views holds Casebook's templ components and their view models:
// the layout, the shared status, chart and diagnosis components, and one
// page per file with its view-model struct beside it. preview.go draws an
// incident's link-preview picture (PNG) with the standard library's image
// packages and the 7×13 fixed font of golang.org/x/image.
//
// Views only present data that handlers have already fetched; they import
// metrics and diagnose types and nothing that does I/O. Links and form
// actions are built from route names (internal/route), never by hand;
// metric labels and cause titles come from the metrics catalog. Generated
// *_templ.go files are committed; run `go tool templ generate` after editing
// a .templ file.
package views
