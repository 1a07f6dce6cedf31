package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/prometheus/storage"
)

// ErrDiskFull is returned by writes to the embedded store while its file
// system has less free space than the reserve.
var ErrDiskFull = errors.New("telemetry: disk full")

// DefaultDiskReserve is the free space the embedded store leaves on its
// file system: enough for a WAL segment and a compaction's new block.
const DefaultDiskReserve = 256 << 20

// A TSDB whose write-ahead log hits ENOSPC can lose samples committed
// after the failure once it is reopened (TestTierFullDisk shows it without
// the guard). So writes stop before the disk is full:
// every commit checks the free space first, and a refused commit is a
// clear error (the scrape is a gap, the downsampler retries) rather than a
// torn log. The check is one statfs call, microseconds per commit.
type diskGuard struct {
	path    string
	reserve uint64
	// failed holds the last commit error, cleared by the next commit that
	// succeeds: while it is set the store cannot write, and the console
	// is not ready.
	failed atomic.Pointer[error]
}

// writeError returns the last commit error, or nil after a success.
func (g *diskGuard) writeError() error {
	if g == nil {
		return nil
	}
	if e := g.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// note records the outcome of a commit.
func (g *diskGuard) note(err error) {
	if g == nil {
		return
	}
	if err == nil {
		if g.failed.Load() != nil {
			g.failed.Store(nil)
		}
		return
	}
	g.failed.Store(&err)
}

// check reports ErrDiskFull, with the numbers, when the file system
// holding path has less than the reserve free.
func (g *diskGuard) check() error {
	if g == nil || g.reserve == 0 {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(g.path, &st); err != nil {
		return nil // cannot tell: let the write itself report the problem
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < g.reserve {
		return fmt.Errorf("%w: %s has %d MiB free, less than the %d MiB kept in reserve; writes resume when space is freed",
			ErrDiskFull, g.path, free>>20, g.reserve>>20)
	}
	return nil
}

// guardedAppendable refuses commits while the guard says the disk is full.
type guardedAppendable struct {
	storage.Appendable
	guard *diskGuard
}

// Appender implements storage.Appendable.
func (a guardedAppendable) Appender(ctx context.Context) storage.Appender {
	return guardedAppender{Appender: a.Appendable.Appender(ctx), guard: a.guard}
}

type guardedAppender struct {
	storage.Appender
	guard *diskGuard
}

// Commit implements storage.Appender: it rolls back instead of writing
// when the disk is full.
func (a guardedAppender) Commit() error {
	if err := a.guard.check(); err != nil {
		_ = a.Appender.Rollback()
		a.guard.note(err)
		return err
	}
	err := a.Appender.Commit()
	a.guard.note(err)
	return err
}
