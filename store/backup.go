package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
