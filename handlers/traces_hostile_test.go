package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

// newTraceFixtureDeps is newTraceFixture with the incident dependencies
// adjusted by the test.
func newTraceFixtureDeps(t testing.TB, adjust func(*handlers.IncidentDeps)) *archiveFixture {
	t.Helper()
	return newTraceFixtureOpts(t, adjust, func(*web.Options) {})
}

// newTraceFixtureOpts is the archive fixture on a real SQLite file with
// the incident dependencies and the console's options adjusted.
func newTraceFixtureOpts(t testing.TB, adjust func(*handlers.IncidentDeps), adjustWeb func(*web.Options)) *archiveFixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tel := sharedTel()
	var srvLayout func(string, string) views.LayoutView
	f := newFixture(t, tel, func(o *web.Options) {
		d := handlers.IncidentDeps{
			Layout: func(title, nav string) views.LayoutView { return srvLayout(title, nav) },
			Now:    o.Now,
		}
		adjust(&d)
		inc, svc := archiveHandlers(d, st, tel, o.Diagnoser)
		o.Incidents, o.IncidentOpener = inc, svc
		o.Auth.WebhookToken = alertToken
		adjustWeb(o)
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	return &archiveFixture{fixture: f, st: st}
}

// TestTraceUploadWhitespaceBomb uploads a small gzip that inflates to
// {"traceEvents":[, 16 MiB of spaces, ]}: refused, naming the whitespace,
// instead of parsed in time quadratic in the run's length.
func TestTraceUploadWhitespaceBomb(t *testing.T) {
	spool := t.TempDir()
	f := newTraceFixtureDeps(t, func(d *handlers.IncidentDeps) { d.TraceSpoolDir = spool })
	id := f.openViaAlert(t, "00000000000000h1", "TPOT up")
	bomb := gzipData(t, []byte(`{"traceEvents":[`+strings.Repeat(" ", 16<<20)+`]}`))
	r := f.do(t, http.MethodPost, fmt.Sprintf("/api/v1/incidents/%d/traces", id), bytes.NewReader(bomb), nil)
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "whitespace") {
		t.Fatalf("status %d %.300s, want 400 naming the whitespace", r.status, r.body)
	}
	assertEmptyDir(t, spool)
}

// TestTraceUploadSpoolsUnderDataDir sends an Nsight upload that inflates
// past the limit (an SQLite header and zeros) with the system temp folder
// unusable: the spool goes to TraceSpoolDir, the answer is 413 and nothing
// is left behind; a real gzip export still parses.
func TestTraceUploadSpoolsUnderDataDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	spool := filepath.Join(t.TempDir(), "spool")
	const limit = 64 << 10
	f := newTraceFixtureDeps(t, func(d *handlers.IncidentDeps) { d.TraceSpoolDir, d.TraceMaxBytes = spool, limit })
	id := f.openViaAlert(t, "00000000000000h2", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)

	bomb := gzipData(t, append([]byte("SQLite format 3\x00"), make([]byte, 16<<20)...))
	r := f.do(t, http.MethodPost, api, bytes.NewReader(bomb), nil)
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(r.body, "256 KiB decompressed") {
		t.Fatalf("nsight bomb: status %d %.300s, want 413 at the 256 KiB decompressed limit", r.status, r.body)
	}
	assertEmptyDir(t, spool)

	nsys := gzipData(t, readFixture(t, "llama8b_tp2.nsys.sqlite"))
	if r := f.do(t, http.MethodPost, api+"?name=x.nsys.sqlite.gz", bytes.NewReader(nsys), nil); r.status != http.StatusCreated {
		t.Fatalf("gzip nsight export: status %d %.300s, want 201", r.status, r.body)
	}
	assertEmptyDir(t, spool)
}

// TestTraceUploadsBounded holds one upload open with TraceUploads 1: a
// second is answered 503 with Retry-After, and the first still succeeds.
func TestTraceUploadsBounded(t *testing.T) {
	spool := t.TempDir()
	f := newTraceFixtureDeps(t, func(d *handlers.IncidentDeps) { d.TraceSpoolDir, d.TraceUploads = spool, 1 })
	id := f.openViaAlert(t, "00000000000000h3", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)
	trace := readFixture(t, "llama8b_tp2.pt.trace.json")

	pr, pw := io.Pipe()
	first := make(chan response, 1)
	go func() { first <- f.do(t, http.MethodPost, api, pr, nil) }()
	pw.Write(trace[:1000])
	waitFor(t, func() bool { left, _ := os.ReadDir(spool); return len(left) == 1 })

	r := f.do(t, http.MethodPost, api, bytes.NewReader(trace), nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("second upload: status %d (Retry-After %q), want 503 with Retry-After", r.status, r.header.Get("Retry-After"))
	}
	pw.Write(trace[1000:])
	pw.Close()
	if r := <-first; r.status != http.StatusCreated {
		t.Fatalf("first upload: status %d %.300s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPost, api, bytes.NewReader(trace), nil); r.status != http.StatusCreated {
		t.Fatalf("upload after the first finished: status %d %.300s", r.status, r.body)
	}
}

// TestTraceParseDeadline gives the parse no time at all: the answer names
// the deadline instead of parsing on.
func TestTraceParseDeadline(t *testing.T) {
	spool := t.TempDir()
	f := newTraceFixtureDeps(t, func(d *handlers.IncidentDeps) { d.TraceSpoolDir, d.TraceParseTimeout = spool, time.Nanosecond })
	id := f.openViaAlert(t, "00000000000000h4", "TPOT up")
	r := f.do(t, http.MethodPost, fmt.Sprintf("/api/v1/incidents/%d/traces", id), bytes.NewReader(readFixture(t, "llama8b_tp2.pt.trace.json")), nil)
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(r.body, "took longer than the 1ns limit") {
		t.Fatalf("status %d %.300s, want 413 naming the parse deadline", r.status, r.body)
	}
	assertEmptyDir(t, spool)
}

// TestTraceSpoolCleanedAtStart leaves spool files as a killed process
// would: building the handlers removes them, and nothing else.
func TestTraceSpoolCleanedAtStart(t *testing.T) {
	spool := t.TempDir()
	for _, name := range []string{"casebook-trace-123", "casebook-nsys-9.sqlite", "keep.txt"} {
		if err := os.WriteFile(filepath.Join(spool, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	handlers.NewIncidents(handlers.IncidentDeps{TraceSpoolDir: spool})
	left, _ := os.ReadDir(spool)
	if len(left) != 1 || left[0].Name() != "keep.txt" {
		t.Fatalf("left %v, want only keep.txt", left)
	}
}

func gzipData(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func assertEmptyDir(t testing.TB, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("spool files left in %s: %v", dir, left)
	}
}

// waitFor polls cond for up to 10 s; it fails the test when cond never holds.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}
