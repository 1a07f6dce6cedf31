// Package archtest holds the tests that keep Casebook's architecture as
// DESIGN.md draws it: the package layering, where data flows one way
// (source -> telemetry -> snapshot -> diagnose -> incident -> store ->
// views) and nothing imports the HTTP layer or the command; and one home
// for URLs, where no source file outside internal/route builds a link to
// a console route by hand. It has no code of its own.
package archtest
