// Package store is Casebook's incident archive in SQLite: incidents with the
// snapshot and chart windows captured when they opened, every diagnosis made
// of them, the review labels engineers give, notes, share links,
// engineer-created root causes, full-text search, and the accuracy and
// knowledge-base queries built on the labels.
//
// The schema lives only in the numbered files under migrations/, applied in
// order by Open. Diagnoses are stored as opaque JSON bodies plus a few
// columns, so the package depends on metrics but not on diagnose.
//
// Every write that returns without error has been committed with
// synchronous=FULL: it survives a process crash and a power loss.
package store
