package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ShareLink is a read-only link to one incident. The token is returned only
// by CreateShare; the store keeps its SHA-256.
type ShareLink struct {
	ID         int64     `json:"id"`
	Token      string    `json:"token,omitempty"`
	IncidentID int64     `json:"incident_id"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Active reports whether the link still opens its incident at now.
func (l ShareLink) Active(now time.Time) bool {
	return l.RevokedAt.IsZero() && now.Before(l.ExpiresAt)
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateShare makes a link to an incident that expires at expiresAt. The
// token is 128 random bits, hex-encoded.
func (s *Store) CreateShare(ctx context.Context, incidentID int64, by string, now, expiresAt time.Time) (ShareLink, error) {
	if strings.TrimSpace(by) == "" || len(by) > MaxNameBytes || strings.ContainsRune(by, 0) {
		return ShareLink{}, fmt.Errorf("store: share incident %d: %w", incidentID, invalidf("creator name is empty or too long"))
	}
	if !expiresAt.After(now) {
		return ShareLink{}, fmt.Errorf("store: share incident %d: %w", incidentID, invalidf("expiry is not in the future"))
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return ShareLink{}, fmt.Errorf("store: share incident %d: token: %w", incidentID, err)
	}
	token := hex.EncodeToString(raw[:])
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ShareLink{}, fmt.Errorf("store: share incident %d: begin: %w", incidentID, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO share_links (token_hash, incident_id, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?)
		RETURNING id`, hashToken(token), incidentID, by, nanos(now), nanos(expiresAt)).Scan(&id)
	if isForeignKey(err) {
		return ShareLink{}, fmt.Errorf("store: share incident %d: %w", incidentID, ErrNotFound)
	}
	if err != nil {
		return ShareLink{}, fmt.Errorf("store: share incident %d: %w", incidentID, err)
	}
	after := map[string]any{"share": id, "created_by": by, "expires_at": expiresAt.UTC()}
	if err := audit(ctx, tx, now, "share.create", shareTarget(incidentID, id), nil, after); err != nil {
		return ShareLink{}, fmt.Errorf("store: share incident %d: %w", incidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return ShareLink{}, fmt.Errorf("store: share incident %d: commit: %w", incidentID, err)
	}
	return ShareLink{ID: id, Token: token, IncidentID: incidentID, CreatedBy: by, CreatedAt: now.UTC(), ExpiresAt: expiresAt.UTC()}, nil
}

// ResolveShare returns the link for token when it is active at now;
// unknown, expired and revoked tokens all give ErrNotFound.
func (s *Store) ResolveShare(ctx context.Context, token string, now time.Time) (ShareLink, error) {
	if len(token) != 32 {
		return ShareLink{}, fmt.Errorf("store: share link: %w", ErrNotFound)
	}
	var l ShareLink
	var created, expires int64
	var revoked sql.NullInt64
	err := s.r.QueryRowContext(ctx, `
		SELECT id, incident_id, created_by, created_at, expires_at, revoked_at FROM share_links WHERE token_hash = ?`,
		hashToken(token)).Scan(&l.ID, &l.IncidentID, &l.CreatedBy, &created, &expires, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return ShareLink{}, fmt.Errorf("store: share link: %w", ErrNotFound)
	}
	if err != nil {
		return ShareLink{}, fmt.Errorf("store: share link: %w", err)
	}
	l.CreatedAt, l.ExpiresAt, l.RevokedAt = fromNanos(created), fromNanos(expires), fromNullNanos(revoked)
	if !l.Active(now) {
		return ShareLink{}, fmt.Errorf("store: share link %d expired or revoked: %w", l.ID, ErrNotFound)
	}
	if err := audit(ctx, s.w, now, "share.open", shareTarget(l.IncidentID, l.ID), nil, nil); err != nil {
		return ShareLink{}, fmt.Errorf("store: share link %d: %w", l.ID, err)
	}
	return l, nil
}

// RevokeShare revokes link id of an incident at now. Revoking again keeps
// the first revocation time.
func (s *Store) RevokeShare(ctx context.Context, incidentID, id int64, now time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: revoke share link %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	var revoked sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT revoked_at FROM share_links WHERE id = ? AND incident_id = ?`, id, incidentID).Scan(&revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: revoke share link %d of incident %d: %w", id, incidentID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: revoke share link %d: %w", id, err)
	}
	if revoked.Valid {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE share_links SET revoked_at = ? WHERE id = ?`, nanos(now), id); err != nil {
		return fmt.Errorf("store: revoke share link %d: %w", id, err)
	}
	if err := audit(ctx, tx, now, "share.revoke", shareTarget(incidentID, id), map[string]any{"revoked_at": nil}, map[string]any{"revoked_at": now.UTC()}); err != nil {
		return fmt.Errorf("store: revoke share link %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: revoke share link %d: commit: %w", id, err)
	}
	return nil
}

func shareTarget(incidentID, id int64) string {
	return fmt.Sprintf("incident %d share %d", incidentID, id)
}

// Shares returns an incident's share links, newest first, without tokens.
func (s *Store) Shares(ctx context.Context, incidentID int64) ([]ShareLink, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT id, incident_id, created_by, created_at, expires_at, revoked_at
		FROM share_links WHERE incident_id = ? ORDER BY id DESC`, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: share links of incident %d: %w", incidentID, err)
	}
	defer rows.Close()
	var out []ShareLink
	for rows.Next() {
		var l ShareLink
		var created, expires int64
		var revoked sql.NullInt64
		if err := rows.Scan(&l.ID, &l.IncidentID, &l.CreatedBy, &created, &expires, &revoked); err != nil {
			return nil, fmt.Errorf("store: share links of incident %d: %w", incidentID, err)
		}
		l.CreatedAt, l.ExpiresAt, l.RevokedAt = fromNanos(created), fromNanos(expires), fromNullNanos(revoked)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: share links of incident %d: %w", incidentID, err)
	}
	return out, nil
}
