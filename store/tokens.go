package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// APIToken is a named, scoped credential for scripts and Alertmanager.
// The store keeps only its SHA-256.
type APIToken struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	Scope      string    `json:"scope"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

func (t APIToken) tokenAudit() map[string]any {
	m := map[string]any{"name": t.Name, "scope": t.Scope}
	if !t.RevokedAt.IsZero() {
		m["revoked_at"] = t.RevokedAt
	}
	return m
}

func validScope(s string) bool { return s == "webhook" || s == "read" || s == "write" }

// AddToken stores a token under its hash.
func (s *Store) AddToken(ctx context.Context, name, scope string, hash []byte, now time.Time) (APIToken, error) {
	if name == "" || len(name) > MaxNameBytes {
		return APIToken{}, fmt.Errorf("store: add token: %w", invalidf("name is empty or longer than %d bytes", MaxNameBytes))
	}
	if !validScope(scope) {
		return APIToken{}, fmt.Errorf("store: add token %q: %w", name, invalidf("scope %q is not webhook, read or write", scope))
	}
	t := APIToken{Name: name, Scope: scope, CreatedBy: actorOf(ctx).Name, CreatedAt: now.UTC()}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return APIToken{}, fmt.Errorf("store: add token %q: %w", name, err)
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `
		INSERT INTO api_tokens (name, token_hash, scope, created_by, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
		name, hash, scope, t.CreatedBy, nanos(now)).Scan(&t.ID)
	if err != nil {
		return APIToken{}, fmt.Errorf("store: add token %q: %w", name, err)
	}
	if err := audit(ctx, tx, now, "token.create", fmt.Sprintf("token %d", t.ID), nil, t.tokenAudit()); err != nil {
		return APIToken{}, fmt.Errorf("store: add token %q: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return APIToken{}, fmt.Errorf("store: add token %q: commit: %w", name, err)
	}
	return t, nil
}

const tokenColumns = `id, name, scope, created_by, created_at, revoked_at, last_used_at`

func scanToken(sc interface{ Scan(...any) error }) (APIToken, error) {
	var t APIToken
	var created int64
	var revoked, used sql.NullInt64
	if err := sc.Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedBy, &created, &revoked, &used); err != nil {
		return APIToken{}, err
	}
	t.CreatedAt, t.RevokedAt, t.LastUsedAt = fromNanos(created), fromNullNanos(revoked), fromNullNanos(used)
	return t, nil
}

// TokenByHash returns the unrevoked token stored under hash and records
// its use (at most once a minute, to spare the writer).
func (s *Store) TokenByHash(ctx context.Context, hash []byte, now time.Time) (APIToken, error) {
	t, err := scanToken(s.r.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return APIToken{}, fmt.Errorf("store: token: %w", ErrNotFound)
	}
	if err != nil {
		return APIToken{}, fmt.Errorf("store: token: %w", err)
	}
	if now.Sub(t.LastUsedAt) > time.Minute {
		if _, err := s.w.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, nanos(now), t.ID); err != nil {
			return APIToken{}, fmt.Errorf("store: token %d: last use: %w", t.ID, err)
		}
	}
	return t, nil
}

// Tokens returns every token, newest first, without secrets.
func (s *Store) Tokens(ctx context.Context) ([]APIToken, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("store: tokens: %w", err)
	}
	defer rows.Close()
	var out []APIToken
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("store: tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: tokens: %w", err)
	}
	return out, nil
}

// RevokeToken revokes token id at now; revoking again keeps the first time.
func (s *Store) RevokeToken(ctx context.Context, id int64, now time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: revoke token %d: %w", id, err)
	}
	defer tx.Rollback()
	t, err := scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: revoke token %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: revoke token %d: %w", id, err)
	}
	if !t.RevokedAt.IsZero() {
		return nil
	}
	before := t.tokenAudit()
	if _, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ?`, nanos(now), id); err != nil {
		return fmt.Errorf("store: revoke token %d: %w", id, err)
	}
	t.RevokedAt = now.UTC()
	if err := audit(ctx, tx, now, "token.revoke", fmt.Sprintf("token %d", id), before, t.tokenAudit()); err != nil {
		return fmt.Errorf("store: revoke token %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: revoke token %d: commit: %w", id, err)
	}
	return nil
}
