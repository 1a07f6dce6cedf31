package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session is a signed-in account. The store keeps only the SHA-256 of the
// session id; CSRF is the session's form token.
type Session struct {
	User      User
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateSession stores a session of user id under idHash until expiresAt.
func (s *Store) CreateSession(ctx context.Context, idHash []byte, userID int64, csrf, remote string, now, expiresAt time.Time) error {
	_, err := s.w.ExecContext(ctx, `
		INSERT INTO sessions (id_hash, user_id, csrf, created_at, expires_at, remote_addr) VALUES (?, ?, ?, ?, ?, ?)`,
		idHash, userID, csrf, nanos(now), nanos(expiresAt), remote)
	if isForeignKey(err) {
		return fmt.Errorf("store: create session: user %d: %w", userID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	// Expired sessions go when new ones come.
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, nanos(now)); err != nil {
		return fmt.Errorf("store: create session: prune: %w", err)
	}
	return nil
}

// SessionByHash returns the session stored under idHash with its account,
// when it has not expired at now.
func (s *Store) SessionByHash(ctx context.Context, idHash []byte, now time.Time) (Session, error) {
	var ss Session
	var created, expires, ucreated int64
	err := s.r.QueryRowContext(ctx, `
		SELECT s.csrf, s.created_at, s.expires_at, u.id, u.name, u.role, u.created_at, coalesce(u.language, '')
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id_hash = ? AND s.expires_at > ?`, idHash, nanos(now)).
		Scan(&ss.CSRF, &created, &expires, &ss.User.ID, &ss.User.Name, &ss.User.Role, &ucreated, &ss.User.Language)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("store: session: %w", ErrNotFound)
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: session: %w", err)
	}
	ss.CreatedAt, ss.ExpiresAt, ss.User.CreatedAt = fromNanos(created), fromNanos(expires), fromNanos(ucreated)
	return ss, nil
}

// DeleteSession ends the session stored under idHash; an unknown one is
// not an error.
func (s *Store) DeleteSession(ctx context.Context, idHash []byte) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("store: delete session: %w", err)
	}
	return nil
}
