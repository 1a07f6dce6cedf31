package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Actor is who makes a change and from where; the audit log records it.
type Actor struct {
	Name string // the user, token or "local"
	Addr string // the client address; "" for the command line
}

type actorKey struct{}

// WithActor returns ctx carrying the actor of the changes made with it.
// Changes made without one are recorded as "system".
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

func actorOf(ctx context.Context) Actor {
	a, ok := ctx.Value(actorKey{}).(Actor)
	if !ok || a.Name == "" {
		a.Name = "system"
	}
	return a
}

// AuditEntry is one recorded change.
type AuditEntry struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"`
	Target     string          `json:"target"`
	RemoteAddr string          `json:"remote_addr"`
	Before     json.RawMessage `json:"before,omitempty"`
	After      json.RawMessage `json:"after,omitempty"`
}

// execer is a transaction or a database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// audit writes an entry with the context's actor through ex, which is the
// transaction of the change it describes where there is one.
func audit(ctx context.Context, ex execer, at time.Time, action, target string, before, after any) error {
	a := actorOf(ctx)
	enc := func(v any) (sql.NullString, error) {
		if v == nil {
			return sql.NullString{}, nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return sql.NullString{}, err
		}
		return sql.NullString{String: string(b), Valid: true}, nil
	}
	b, err := enc(before)
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	af, err := enc(after)
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	if at.IsZero() {
		at = time.Now()
	}
	_, err = ex.ExecContext(ctx, `
		INSERT INTO audit_log (at, actor, action, target, remote_addr, before, after) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		nanos(at), a.Name, action, target, a.Addr, b, af)
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// Audit records an entry that has no change of its own in the store (a
// login, a share link opened).
func (s *Store) Audit(ctx context.Context, at time.Time, action, target string, before, after any) error {
	if err := audit(ctx, s.w, at, action, target, before, after); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// AuditFilter selects audit entries: those with an id below Before (0: the
// newest), at most Limit (0: 100, capped at MaxPageSize).
type AuditFilter struct {
	Before int64
	Limit  int
}

// AuditLog returns audit entries, newest first.
func (s *Store) AuditLog(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, MaxPageSize)
	before := f.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT id, at, actor, action, target, remote_addr, before, after
		FROM audit_log WHERE id < ? ORDER BY id DESC LIMIT ?`, before, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		var b, a sql.NullString
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Target, &e.RemoteAddr, &b, &a); err != nil {
			return nil, fmt.Errorf("store: audit log: %w", err)
		}
		e.At = fromNanos(at)
		if b.Valid {
			e.Before = json.RawMessage(b.String)
		}
		if a.Valid {
			e.After = json.RawMessage(a.String)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: audit log: %w", err)
	}
	return out, nil
}
