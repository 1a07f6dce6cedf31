// Package archtest holds the test that keeps Casebook's package layering
// as DESIGN.md draws it: data flows one way (source -> telemetry ->
// snapshot -> diagnose -> incident -> store -> views), and nothing imports
// the HTTP layer or the command. It has no code of its own.
package archtest
