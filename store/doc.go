// Package store is Casebook's incident archive in SQLite: incidents with the
// snapshot and chart windows captured when they opened, every diagnosis made
// of them, the review labels engineers give, notes, share links,
// engineer-created root causes, full-text search, and the accuracy and
// knowledge-base queries built on the labels.
//
// The schema lives only in the numbered files under migrations/, applied in
// order by Open, each in its own transaction. Diagnoses are stored as opaque
// JSON bodies plus the columns queries need, so the package depends on
// metrics but not on diagnose.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so every
// write that returns without error has been fsynced and survives a process
// crash or a power loss. Concurrent OpenIncident calls are group-committed
// (one transaction and one fsync per batch, a savepoint per incident) to
// keep ingest fast during alert storms without weakening that promise.
//
// Reads go through a separate read-only connection pool, which WAL lets run
// beside the single writer connection.
package store
