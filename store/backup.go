package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// Backup writes a consistent copy of the archive to path with VACUUM INTO,
// on a connection of its own so that reads and writes go on meanwhile. The
// file must not exist yet.
func (s *Store) Backup(ctx context.Context, path string) error {
	if path == "" {
		return fmt.Errorf("store: backup: %w: empty path", ErrInvalid)
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("store: backup to %s: %w: the file exists", path, ErrConflict)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	db, err := sql.Open("sqlite3", s.dsn)
	if err != nil {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	return nil
}

// BackupFile writes a consistent copy of the archive at src to dst without
// opening src as a Store: nothing is migrated, so a newer casebook can back
// up the archive an older one is serving without changing its schema, and
// a mistyped path is an error rather than a new, empty archive.
func BackupFile(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("store: backup %s: %w", src, err)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("store: backup to %s: %w: the file exists", dst, ErrConflict)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: backup to %s: %w", dst, err)
	}
	db, err := sql.Open("sqlite3", "file:"+(&url.URL{Path: src}).EscapedPath()+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return fmt.Errorf("store: backup %s: %w", src, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&n); err != nil {
		return fmt.Errorf("store: backup %s: %w", src, err)
	}
	if n == 0 {
		return fmt.Errorf("store: backup %s: %w: not a Casebook archive (no schema_migrations table)", src, ErrInvalid)
	}
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("store: backup %s to %s: %w", src, dst, err)
	}
	return nil
}
