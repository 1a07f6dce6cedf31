package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// User is a console account. PasswordHash is empty for an account that
// signs in only through the authenticating proxy (where the account only
// sets the role).
type User struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	PasswordHash []byte    `json:"-"`
	CreatedAt    time.Time `json:"created_at"`
	// Language is the account's language preference ("zh-CN"); empty
	// when it has none.
	Language string `json:"language,omitempty"`
}

// userAudit is what the audit log keeps of an account: never the hash.
func (u User) userAudit() map[string]any {
	return map[string]any{"name": u.Name, "role": u.Role, "password": len(u.PasswordHash) > 0}
}

func validRole(r string) bool { return r == "viewer" || r == "reviewer" || r == "admin" }

// AddUser creates an account; a second account with the same name is
// ErrConflict.
func (s *Store) AddUser(ctx context.Context, name, role string, passwordHash []byte, now time.Time) (User, error) {
	if name == "" || len(name) > MaxNameBytes {
		return User{}, fmt.Errorf("store: add user: %w", invalidf("name is empty or longer than %d bytes", MaxNameBytes))
	}
	if !validRole(role) {
		return User{}, fmt.Errorf("store: add user %q: %w", name, invalidf("role %q is not viewer, reviewer or admin", role))
	}
	u := User{Name: name, Role: role, PasswordHash: passwordHash, CreatedAt: now.UTC()}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return User{}, fmt.Errorf("store: add user %q: %w", name, err)
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, `
		INSERT INTO users (name, role, password_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		name, role, nullBytes(passwordHash), nanos(now)).Scan(&u.ID)
	if isUnique(err) {
		return User{}, fmt.Errorf("store: add user %q: %w: the name is taken", name, ErrConflict)
	}
	if err != nil {
		return User{}, fmt.Errorf("store: add user %q: %w", name, err)
	}
	if err := audit(ctx, tx, now, "user.create", "user "+name, nil, u.userAudit()); err != nil {
		return User{}, fmt.Errorf("store: add user %q: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return User{}, fmt.Errorf("store: add user %q: commit: %w", name, err)
	}
	return u, nil
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// UserByName returns the account called name.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	return s.user(ctx, `WHERE name = ?`, name)
}

// UserByID returns account id.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	return s.user(ctx, `WHERE id = ?`, id)
}

func (s *Store) user(ctx context.Context, where string, arg any) (User, error) {
	var u User
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT id, name, role, password_hash, created_at, coalesce(language, '') FROM users `+where, arg).
		Scan(&u.ID, &u.Name, &u.Role, &u.PasswordHash, &created, &u.Language)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("store: user %v: %w", arg, ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("store: user %v: %w", arg, err)
	}
	u.CreatedAt = fromNanos(created)
	return u, nil
}

// Users returns every account by name.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, name, role, password_hash, created_at, coalesce(language, '') FROM users ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		var u User
		var created int64
		if err := rows.Scan(&u.ID, &u.Name, &u.Role, &u.PasswordHash, &created, &u.Language); err != nil {
			return nil, fmt.Errorf("store: users: %w", err)
		}
		u.CreatedAt = fromNanos(created)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: users: %w", err)
	}
	return out, nil
}

// UpdateUser changes an account's role and, when passwordHash is not nil,
// its password. Both end the account's sessions.
func (s *Store) UpdateUser(ctx context.Context, id int64, role string, passwordHash []byte, now time.Time) (User, error) {
	if !validRole(role) {
		return User{}, fmt.Errorf("store: update user %d: %w", id, invalidf("role %q is not viewer, reviewer or admin", role))
	}
	return s.changeUser(ctx, id, now, "user.update", func(tx *sql.Tx, u *User) error {
		u.Role = role
		if passwordHash != nil {
			u.PasswordHash = passwordHash
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET role = ?, password_hash = ? WHERE id = ?`, u.Role, nullBytes(u.PasswordHash), id)
		return err
	})
}

// MaxLanguageBytes bounds a stored language code (BCP 47 tags the
// console speaks are a few bytes).
const MaxLanguageBytes = 35

// SetUserLanguage keeps the language preference of the account called
// name; "" clears it. It is the account's own setting, like the switch's
// cookie: no audit entry, and its sessions stay.
func (s *Store) SetUserLanguage(ctx context.Context, name, lang string) error {
	if len(lang) > MaxLanguageBytes {
		return fmt.Errorf("store: set language of %q: %w", name, invalidf("language code is longer than %d bytes", MaxLanguageBytes))
	}
	var v any
	if lang != "" {
		v = lang
	}
	res, err := s.w.ExecContext(ctx, `UPDATE users SET language = ? WHERE name = ?`, v, name)
	if err != nil {
		return fmt.Errorf("store: set language of %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("store: set language of %q: %w", name, ErrNotFound)
	}
	return nil
}

// DeleteUser removes an account and its sessions.
func (s *Store) DeleteUser(ctx context.Context, id int64, now time.Time) error {
	_, err := s.changeUser(ctx, id, now, "user.delete", func(tx *sql.Tx, u *User) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM users WHERE id = ?`, id)
		return err
	})
	return err
}

// changeUser applies change to account id in a transaction, ends its
// sessions and audits the before and after state.
func (s *Store) changeUser(ctx context.Context, id int64, now time.Time, action string, change func(*sql.Tx, *User) error) (User, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return User{}, fmt.Errorf("store: %s %d: %w", action, id, err)
	}
	defer tx.Rollback()
	var u User
	var created int64
	err = tx.QueryRowContext(ctx, `SELECT id, name, role, password_hash, created_at FROM users WHERE id = ?`, id).
		Scan(&u.ID, &u.Name, &u.Role, &u.PasswordHash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("store: %s %d: %w", action, id, ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("store: %s %d: %w", action, id, err)
	}
	u.CreatedAt = fromNanos(created)
	before := u.userAudit()
	wasAdmin := u.Role == "admin"
	if err := change(tx, &u); err != nil {
		return User{}, fmt.Errorf("store: %s %d: %w", action, id, err)
	}
	if wasAdmin {
		// Accounts are administered through the console by admins: the
		// last one leaving would lock everyone out of it.
		var admins int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE role = 'admin'`).Scan(&admins); err != nil {
			return User{}, fmt.Errorf("store: %s %d: %w", action, id, err)
		}
		if admins == 0 {
			return User{}, fmt.Errorf("store: %s %d: %w: %s is the last admin; make another account admin first", action, id, ErrConflict, u.Name)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, id); err != nil {
		return User{}, fmt.Errorf("store: %s %d: end sessions: %w", action, id, err)
	}
	var after any = u.userAudit()
	if action == "user.delete" {
		after = nil
	}
	if err := audit(ctx, tx, now, action, "user "+u.Name, before, after); err != nil {
		return User{}, fmt.Errorf("store: %s %d: %w", action, id, err)
	}
	if err := tx.Commit(); err != nil {
		return User{}, fmt.Errorf("store: %s %d: commit: %w", action, id, err)
	}
	return u, nil
}
