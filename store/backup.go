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
	return vacuumInto(ctx, s.dsn, path)
}

// BackupFile writes a consistent copy of the archive at src to dst without
// opening src as a Store: nothing is migrated, so a newer casebook can back
// up the archive an older one is serving without changing its schema, and
// a mistyped path is an error rather than a new, empty archive.
func BackupFile(ctx context.Context, src, dst string) error {
	if err := CheckArchive(ctx, src); err != nil {
		return fmt.Errorf("store: backup %s: %w", src, err)
	}
	return vacuumInto(ctx, readOnlyDSN(src), dst)
}

// CheckArchive makes sure path is an intact Casebook archive: SQLite's
// integrity check passes and it has a schema version. It opens the file
// read-only, so it is safe on an archive that is being served.
func CheckArchive(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", readOnlyDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	var ok string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil {
		return invalidf("not a SQLite database: %v", err)
	}
	if ok != "ok" {
		return invalidf("integrity check failed: %s", ok)
	}
	var v int
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return invalidf("not a Casebook archive: %v", err)
	}
	return nil
}

func readOnlyDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_busy_timeout=5000"
}

// vacuumInto copies the database at dsn to the new file path on a
// connection of its own.
func vacuumInto(ctx context.Context, dsn, path string) error {
	if path == "" {
		return fmt.Errorf("store: backup: %w", invalidf("empty path"))
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("store: backup to %s: %w: the file exists", path, ErrConflict)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	return nil
}
