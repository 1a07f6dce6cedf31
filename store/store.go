package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/casebook/casebook/metrics"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is the incident archive. It is safe for concurrent use.
//
// It holds two connection pools on the same file: one writer connection
// whose transactions start with BEGIN IMMEDIATE (so concurrent writers queue
// in Go instead of failing with SQLITE_BUSY on a lock upgrade), and a
// read-only pool for queries, which WAL lets run beside the writer.
type Store struct {
	w     *sql.DB
	r     *sql.DB
	opens *opener // group commit of OpenIncident
	dsn   string  // base DSN, for short-lived extra connections
	path  string  // the database file

	damage    damage      // why the file is damaged; see Damaged
	rechecked atomic.Bool // quick_check ran after a corruption error
}

// Open opens (creating if needed) the archive at path, applies every pending
// migration in order and makes sure the built-in root causes exist.
//
// The database runs in WAL mode with synchronous=FULL: in WAL mode NORMAL
// only syncs at checkpoints, so a power loss could drop transactions that
// were already acknowledged to a webhook sender; FULL syncs the WAL on every
// commit, which costs one fsync per write and keeps every acknowledged
// incident.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("store: open: %w", invalidf("empty path"))
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_foreign_keys=on&_journal_mode=WAL&_busy_timeout=5000&_synchronous=FULL"
	s := &Store{dsn: base, path: path}
	s.w = s.openWatched(base + "&_txlock=immediate")
	s.w.SetMaxOpenConns(1)
	s.w.SetConnMaxIdleTime(0)
	// A damaged file is opened read-only: the console serves what it can
	// read and says how to restore, instead of writing into the damage.
	if _, err := os.Stat(path); err == nil {
		if err := s.quickCheck(ctx); err != nil {
			s.w.Close()
			return nil, err
		}
	}
	damaged := s.Damaged() != nil
	if !damaged {
		if err := s.migrate(ctx); err != nil {
			s.w.Close()
			return nil, err
		}
	}
	r := s.openWatched(base + "&_query_only=on")
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	r.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	s.r = r
	s.opens = newOpener(s)
	if !damaged {
		if err := s.seedCauses(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// OpenReadOnly opens an existing archive at path for reading only: it
// creates nothing, applies no migration and refuses every write. Commands
// that only list use it. A missing file is an error wrapping
// fs.ErrNotExist.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_query_only=on&_busy_timeout=5000&_foreign_keys=on"
	r, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{w: r, r: r, dsn: dsn, path: path}
	if err := s.Ping(ctx); err != nil {
		r.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// Close finishes the incidents being opened, then closes both connection
// pools.
func (s *Store) Close() error {
	if s.opens != nil {
		s.opens.close()
	}
	var errs []error
	if s.r != nil && s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Migration is one numbered schema file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 || rest == "" {
			return nil, fmt.Errorf("store: migration %q is not named NNNN_description.sql", name)
		}
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	// Versions increase without repeats. A gap is allowed: branches
	// reserve their numbers, and a database that ran a later migration
	// still gets an earlier one that arrives with a merge.
	for i, m := range out {
		if m.Version < 1 || (i > 0 && m.Version == out[i-1].Version) {
			return nil, fmt.Errorf("store: migration version %04d is repeated or not positive", m.Version)
		}
	}
	return out, nil
}

// SchemaVersion returns the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.w.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

func (s *Store) migrate(ctx context.Context) error {
	migs, err := Migrations()
	if err != nil {
		return err
	}
	_, err = s.w.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		)`)
	if err != nil {
		return fmt.Errorf("store: migrate: create schema_migrations: %w", err)
	}
	current, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	latest := 0
	if len(migs) > 0 {
		latest = migs[len(migs)-1].Version
	}
	if current > latest {
		return fmt.Errorf("store: migrate: database schema version %d is newer than this build knows (%d)", current, latest)
	}
	var applied []int
	rows, err := s.w.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
		}
		applied = append(applied, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: migrate: read schema_migrations: %w", err)
	}
	pending := slices.DeleteFunc(slices.Clone(migs), func(m Migration) bool { return slices.Contains(applied, m.Version) })
	if current > 0 && len(pending) > 0 {
		// Migrations only go forward: keep the database as it was before
		// this build changes its schema, so a downgrade is a restore.
		bak := fmt.Sprintf("%s.v%d-%s.bak", s.path, current, time.Now().UTC().Format("20060102T150405Z"))
		if err := s.Backup(ctx, bak); err != nil {
			return fmt.Errorf("store: migrate: backup before migrating from version %d: %w", current, err)
		}
	}
	for _, m := range pending {
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m Migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %04d: begin: %w", m.Version, err)
	}
	defer tx.Rollback()
	// Another process may have applied it while this one waited for the lock.
	var done int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&done)
	if err != nil {
		return fmt.Errorf("store: migration %04d: %w", m.Version, err)
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("store: migration %04d_%s: %w", m.Version, m.Name, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UTC().UnixNano())
	if err != nil {
		return fmt.Errorf("store: migration %04d: record version: %w", m.Version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %04d: commit: %w", m.Version, err)
	}
	return nil
}

// seedCauses upserts the built-in taxonomy so labels can reference it.
func (s *Store) seedCauses(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: seed causes: %w", err)
	}
	defer tx.Rollback()
	now := time.Now().UTC().UnixNano()
	for _, c := range metrics.Causes {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO causes (id, title, description, builtin, created_at) VALUES (?, ?, ?, 1, ?)
			ON CONFLICT (id) DO UPDATE SET title = excluded.title, description = excluded.description, builtin = 1`,
			c.ID, c.Title, c.What, now)
		if err != nil {
			return fmt.Errorf("store: seed cause %s: %w", c.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: seed causes: commit: %w", err)
	}
	return nil
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// isForeignKey reports whether err is a FOREIGN KEY violation.
func isForeignKey(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintForeignKey
}

func nanos(t time.Time) int64 { return t.UTC().UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func nullNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: nanos(t), Valid: true}
}

func fromNullNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}
