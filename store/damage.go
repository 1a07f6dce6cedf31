package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/mattn/go-sqlite3"
)

// ErrDamaged is returned by every write while the archive file is damaged
// (PRAGMA quick_check failed, or SQLite reported SQLITE_CORRUPT). Writing
// into a damaged file can spread the damage; the console keeps serving
// what it can read until the archive is restored.
var ErrDamaged = errors.New("the archive is damaged; writes are refused")

// damage records why the archive is damaged; nil while it is healthy.
type damage struct {
	path   string
	reason atomic.Pointer[string]
}

// Damaged returns nil while the archive is healthy, and otherwise an error
// wrapping ErrDamaged that says what is wrong and how to recover: casebook
// restore, from a backup or one of the .bak files beside the archive.
func (s *Store) Damaged() error {
	if s.damage.reason.Load() == nil {
		return nil
	}
	s.recheck()
	r := s.damage.reason.Load()
	hint := "Stop casebook and run `casebook restore FILE --data " + filepath.Dir(s.path) + "` with your latest backup"
	if baks, _ := filepath.Glob(s.path + "*.bak"); len(baks) > 0 {
		names := make([]string, 0, 3)
		for i := len(baks) - 1; i >= 0 && len(names) < 3; i-- {
			names = append(names, filepath.Base(baks[i]))
		}
		hint += " or a .bak file beside it (" + strings.Join(names, ", ") + ")"
	}
	return fmt.Errorf("%w: %s is damaged (%s). %s.", ErrDamaged, s.path, *r, hint)
}

// WriteError returns Damaged(): the archive cannot be written while its
// file is damaged.
func (s *Store) WriteError() error { return s.Damaged() }

// markDamaged records the first reason the archive is damaged.
func (s *Store) markDamaged(reason string) {
	if len(reason) > 300 {
		reason = reason[:300] + "…"
	}
	s.damage.reason.CompareAndSwap(nil, &reason)
}

// quickCheck runs PRAGMA quick_check and marks the archive damaged when it
// reports anything but "ok".
func (s *Store) quickCheck(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		if isCorrupt(err) {
			s.markDamaged("quick_check: " + err.Error())
			return nil
		}
		return fmt.Errorf("store: quick_check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("store: quick_check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if isCorrupt(err) {
			problems = append(problems, err.Error())
		} else {
			return fmt.Errorf("store: quick_check: %w", err)
		}
	}
	if len(problems) > 0 {
		s.markDamaged("quick_check: " + strings.Join(problems, "; "))
	}
	return nil
}

func isCorrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB)
}

// openWatched opens a pool on dsn whose connections report SQLITE_CORRUPT
// to the store (which then runs quick_check and refuses writes) and turn
// query_only on once the store is damaged.
func (s *Store) openWatched(dsn string) *sql.DB {
	return sql.OpenDB(&watchConnector{dsn: dsn, s: s})
}

type watchConnector struct {
	dsn string
	s   *Store
}

func (w *watchConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := (&sqlite3.SQLiteDriver{}).Open(w.dsn)
	if err != nil {
		return nil, err
	}
	return &watchConn{SQLiteConn: c.(*sqlite3.SQLiteConn), s: w.s}, nil
}

func (w *watchConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// watchConn is a SQLite connection that watches its errors.
type watchConn struct {
	*sqlite3.SQLiteConn
	s        *Store
	readOnly bool
}

// guard makes the connection read-only once the store is damaged.
func (c *watchConn) guard() {
	if !c.readOnly && c.s.damage.reason.Load() != nil {
		if _, err := c.SQLiteConn.Exec(`PRAGMA query_only = ON`, nil); err == nil {
			c.readOnly = true
		}
	}
}

// check notes a corruption and words a refused write.
func (c *watchConn) check(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if isCorrupt(err) {
		c.s.markDamaged("SQLite: " + err.Error())
		c.guard()
	}
	var se sqlite3.Error
	if c.readOnly && errors.As(err, &se) && se.Code == sqlite3.ErrReadonly {
		return fmt.Errorf("%w (%v)", ErrDamaged, err)
	}
	return err
}

func (c *watchConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.guard()
	r, err := c.SQLiteConn.ExecContext(ctx, query, args)
	return r, c.check(err)
}

func (c *watchConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.guard()
	r, err := c.SQLiteConn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.check(err)
	}
	return &watchRows{SQLiteRows: r.(*sqlite3.SQLiteRows), c: c}, nil
}

func (c *watchConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.guard()
	st, err := c.SQLiteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.check(err)
	}
	return &watchStmt{SQLiteStmt: st.(*sqlite3.SQLiteStmt), c: c}, nil
}

func (c *watchConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.guard()
	tx, err := c.SQLiteConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, c.check(err)
	}
	return &watchTx{Tx: tx, c: c}, nil
}

type watchRows struct {
	*sqlite3.SQLiteRows
	c *watchConn
}

func (r *watchRows) Next(dest []driver.Value) error { return r.c.check(r.SQLiteRows.Next(dest)) }

type watchStmt struct {
	*sqlite3.SQLiteStmt
	c *watchConn
}

func (s *watchStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.SQLiteStmt.ExecContext(ctx, args)
	return r, s.c.check(err)
}

func (s *watchStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.SQLiteStmt.QueryContext(ctx, args)
	if err != nil {
		return nil, s.c.check(err)
	}
	return &watchRows{SQLiteRows: r.(*sqlite3.SQLiteRows), c: s.c}, nil
}

type watchTx struct {
	driver.Tx
	c *watchConn
}

func (t *watchTx) Commit() error { return t.c.check(t.Tx.Commit()) }

// recheck runs quick_check once after the archive was found damaged, on
// the read pool, so that the report says what the check found.
func (s *Store) recheck() {
	if s.r == nil || !s.rechecked.CompareAndSwap(false, true) {
		return
	}
	var line string
	if err := s.r.QueryRow(`PRAGMA quick_check(1)`).Scan(&line); err == nil && line != "ok" {
		cur := s.damage.reason.Load()
		detail := *cur + "; quick_check: " + line
		s.damage.reason.Store(&detail)
	}
}
