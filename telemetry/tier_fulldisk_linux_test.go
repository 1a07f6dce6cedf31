package telemetry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTierFullDisk runs the tiers on a small tmpfs and fills it. A full
// disk must be a clear error (ErrDiskFull from the commit, and from the
// downsampler if it has anything to write), and the scrapes that fail are
// a gap, not a corruption: once space is freed, new data goes in, and the
// reopened tiers equal those of a run that simply had the same gap.
// (Without the reserve, the raw tier's log hits ENOSPC and the reopened
// tier lacks the last 72 seconds written after space was freed.)
func TestTierFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): this test needs CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })

	// Seconds: written before the disk fills, lost while it is full,
	// written after space is freed.
	const first, gapEnd, total = 3600 + 20*60, 2*3600 + 40*60, 3*3600 + 30*60
	run := func(ts *tierSet, now *time.Time, full func() (undo func())) {
		t.Helper()
		var src rawSource
		*now = tierBase.Add(first * time.Second)
		src.appendRange(t, ts.appendable(0), 0, first)
		if err := ts.ds.catchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		*now = tierBase.Add(gapEnd * time.Second)
		if full != nil {
			undo := full()
			err := src.tryAppendRange(ts.appendable(0), first, gapEnd)
			if !errors.Is(err, ErrDiskFull) {
				t.Fatalf("append on a full disk: %v, want ErrDiskFull", err)
			}
			t.Logf("append on a full disk: %v", err)
			if err := ts.ds.catchUp(context.Background()); err != nil {
				if !errors.Is(err, ErrDiskFull) && !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("downsampler on a full disk: %v, want ErrDiskFull or ENOSPC", err)
				}
				t.Logf("downsampler on a full disk: %v", err)
			}
			undo()
		}
		if err := ts.ds.catchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		// New scrapes after the gap.
		src = rawSource{}
		for i := 0; i < gapEnd; i++ {
			src.advance(i)
		}
		*now = tierBase.Add(total * time.Second)
		src.appendRange(t, ts.appendable(0), gapEnd, total)
		if err := ts.ds.catchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	var now time.Time
	reserve := TierOptions{DiskReserve: 4 << 20}
	ts := openTestTiers(t, dir, reserve, &now)
	run(ts, &now, func() func() {
		filler := filepath.Join(dir, "filler")
		fill(t, filler)
		return func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}
	got := openTestTiers(t, dir, reserve, &now)
	defer got.close()

	var refNow time.Time
	ref := openTestTiers(t, t.TempDir(), TierOptions{}, &refNow)
	defer ref.close()
	run(ref, &refNow, nil)

	if g, w := dumpTier(t, got.raw()), dumpTier(t, ref.raw()); len(g) != len(w) || len(g[counterLabels.String()]) != len(w[counterLabels.String()]) {
		t.Errorf("raw tier after the full disk: %d series, %d counter samples; want %d, %d",
			len(g), len(g[counterLabels.String()]), len(w), len(w[counterLabels.String()]))
	}
	compareTiers(t, got, ref)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestTierFullDiskClose fills the disk under tiers holding two hours of
// raw samples (head chunks waiting to be written to disk): the store
// reports it cannot write, and closing does not panic in the TSDB's chunk
// writer (it did: Head.Close writes the chunks and panics on ENOSPC) but
// returns an error saying the tiers were left unflushed. Once space is
// freed the tiers close, and reopen with the samples written before.
func TestTierFullDiskClose(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): this test needs CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })

	const end = 2 * 3600
	now := tierBase.Add(end * time.Second)
	reserve := TierOptions{DiskReserve: 4 << 20}
	ts := openTestTiers(t, dir, reserve, &now)
	var src rawSource
	src.appendRange(t, ts.appendable(0), 0, end)
	if err := ts.guard.writeError(); err != nil {
		t.Fatalf("write error before the disk filled: %v", err)
	}
	filler := filepath.Join(dir, "filler")
	fill(t, filler)
	if err := src.tryAppendRange(ts.appendable(0), end, end+60); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append on a full disk: %v, want ErrDiskFull", err)
	}
	if err := ts.guard.writeError(); !errors.Is(err, ErrDiskFull) {
		t.Errorf("write error on a full disk: %v, want ErrDiskFull", err)
	}
	err := ts.close()
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "unflushed") {
		t.Errorf("close on a full disk: %v, want ErrDiskFull saying the tiers were left unflushed", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := ts.close(); err != nil {
		t.Fatalf("close once space is freed: %v", err)
	}
	got := openTestTiers(t, dir, reserve, &now)
	defer got.close()
	if n := len(dumpTier(t, got.raw())[counterLabels.String()]); n == 0 {
		t.Error("no counter samples after reopening")
	}
}
