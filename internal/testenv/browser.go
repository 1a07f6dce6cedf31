package testenv

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// Browser is a headless Chromium started for one test with its own
// user-data directory, so two Browsers share no cookies, storage or cache.
type Browser struct {
	// Ctx is a chromedp context on the browser's first tab; derive
	// timeouts from it.
	Ctx context.Context
	// Dir is the browser's private user-data directory.
	Dir   string
	log   *tailBuffer
	shown bool // the last lines are in the failure already

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors of the pages
}

// Chromium starts Debian's chromium with ChromiumFlags, a fresh user-data
// directory and the extra allocator options, and stops it when the test
// ends. When the test fails, its last stderr lines are logged.
func Chromium(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	b := &Browser{Dir: t.TempDir(), log: &tailBuffer{max: 64 << 10}}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath(t)),
		chromedp.UserDataDir(b.Dir),
		chromedp.CombinedOutput(b.log),
	}
	for _, f := range ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	b.Ctx = ctx
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		if t.Failed() && !b.shown {
			t.Logf("testenv: last log lines of chromium (%s):\n%s", b.Dir, b.LastLines(30))
		}
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("testenv: start chromium: %v\nlast log lines of chromium:\n%s", err, b.LastLines(30))
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			// Chromium asks every page without an icon link for
			// /favicon.ico; that miss is not the page's failure.
			if (m.IsException() || m.Type == chromedp.ConsoleError) && !strings.HasSuffix(m.URL, "/favicon.ico") {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// PageErrors returns the uncaught exceptions, console errors and failed
// loads (other than /favicon.ico) the pages of the first tab reported so
// far, each with where it came from.
func (b *Browser) PageErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

// LastLines returns the last n lines Chromium wrote to stdout and stderr,
// leaving out its complaints about the missing D-Bus, which every run in a
// container has and which say nothing about the failure.
func (b *Browser) LastLines(n int) string {
	var keep []string
	for _, l := range strings.Split(b.log.String(), "\n") {
		if !strings.Contains(l, ":ERROR:dbus/") {
			keep = append(keep, l)
		}
	}
	return lastLines(strings.Join(keep, "\n"), n)
}

// Fatalf fails the test naming Chromium and showing its last log lines.
func (b *Browser) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	b.shown = true
	t.Fatalf("chromium: %s\nlast log lines of chromium:\n%s", fmt.Sprintf(format, args...), b.LastLines(20))
}

// ImageStats describes a screenshot well enough to tell a blank page
// from a rendered one.
type ImageStats struct {
	Width, Height int
	// Colours is the number of distinct colours on a 7-pixel grid.
	Colours int
	// Background is the most common colour's share of the grid; Ink is
	// the rest (text, lines, fills).
	Ink float64
}

// PNGStats decodes a PNG and measures it.
func PNGStats(b []byte) (ImageStats, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return ImageStats{}, fmt.Errorf("testenv: decode PNG: %w", err)
	}
	return imageStats(img), nil
}

func imageStats(img image.Image) ImageStats {
	r := img.Bounds()
	seen := map[[4]uint32]int{}
	total := 0
	for y := r.Min.Y; y < r.Max.Y; y += 7 {
		for x := r.Min.X; x < r.Max.X; x += 7 {
			cr, cg, cb, ca := img.At(x, y).RGBA()
			seen[[4]uint32{cr >> 8, cg >> 8, cb >> 8, ca >> 8}]++
			total++
		}
	}
	most := 0
	for _, n := range seen {
		most = max(most, n)
	}
	s := ImageStats{Width: r.Dx(), Height: r.Dy(), Colours: len(seen)}
	if total > 0 {
		s.Ink = 1 - float64(most)/float64(total)
	}
	return s
}

// SavePNG writes a screenshot to dir/name.png and fails the test when it
// does not decode or looks blank: fewer than minColours colours or less
// than 1% of the page drawn on.
func SavePNG(t testing.TB, dir, name string, shot []byte, minColours int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testenv: screenshot folder: %v", err)
	}
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatalf("testenv: save screenshot: %v", err)
	}
	st, err := PNGStats(shot)
	switch {
	case err != nil:
		t.Errorf("screenshot %s: %v", file, err)
	case st.Colours < minColours || st.Ink < 0.01:
		t.Errorf("screenshot %s looks blank: %d colours, %.2f%% ink (%dx%d)", file, st.Colours, 100*st.Ink, st.Width, st.Height)
	}
	return file
}
