package traces_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/casebook/casebook/traces"
	"github.com/casebook/casebook/traces/internal/tracegen"
)

func parseFile(t *testing.T, path string) *traces.Trace {
	t.Helper()
	tr, err := traces.ParseFile(context.Background(), path, traces.Options{})
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return tr
}

// TestParseFixtures checks the three fixture files (the same generated
// steps in three encodings) parse to the same activities, and that the
// Chrome trace's host-side counters match what the generator wrote.
func TestParseFixtures(t *testing.T) {
	js := parseFile(t, fixtureJSON)
	gz := parseFile(t, fixtureGzip)
	ns := parseFile(t, fixtureNsight)
	raw, err := os.ReadFile(fixtureNsight)
	if err != nil {
		t.Fatal(err)
	}
	nsGz, err := traces.Parse(context.Background(), bytes.NewReader(gzipBytes(t, raw)), traces.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("gzip-compressed Nsight export: %v", err)
	}

	// 1 prefill + 3 decode steps of 8 layers: per step 3 head ops, 12 ops
	// per layer (13 in decode: the split-KV combine), 6 tail ops.
	const wantActs = (3 + 8*12 + 6) + 3*(3+8*13+6)
	for _, tc := range []struct {
		name   string
		tr     *traces.Trace
		format traces.Format
	}{{"json", js, traces.FormatChrome}, {"gzip", gz, traces.FormatChrome}, {"nsight", ns, traces.FormatNsight}, {"nsight gzip stream", nsGz, traces.FormatNsight}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tr.Format != tc.format {
				t.Errorf("format %s, want %s", tc.tr.Format, tc.format)
			}
			if len(tc.tr.Activities) != wantActs {
				t.Errorf("%d activities, want %d", len(tc.tr.Activities), wantActs)
			}
			if len(tc.tr.Devices) != 1 || tc.tr.Devices[0].Name != "NVIDIA H100 80GB HBM3" {
				t.Errorf("devices %+v", tc.tr.Devices)
			}
			for i, a := range tc.tr.Activities {
				if a.End < a.Start {
					t.Fatalf("activity %d ends before it starts", i)
				}
				if i > 0 && a.Start < tc.tr.Activities[i-1].Start {
					t.Fatalf("activities not sorted at %d", i)
				}
			}
		})
	}
	// Same intervals and names in all encodings.
	for i := range js.Activities {
		a, n := js.Activities[i], ns.Activities[i]
		sameName := js.Names[a.Name] == ns.Names[n.Name] || a.Kind != traces.KindKernel
		if a.Start != n.Start || a.End != n.End || a.Kind != n.Kind || !sameName || a.Stream != n.Stream {
			t.Fatalf("activity %d: chrome %+v %q, nsight %+v %q", i, a, js.Names[a.Name], n, ns.Names[n.Name])
		}
	}
	if js.Steps != 4 || js.GraphLaunches != 3 || js.KernelLaunches != (1+8*12+5)+3*5 {
		t.Errorf("steps %d, graph launches %d, kernel launches %d", js.Steps, js.GraphLaunches, js.KernelLaunches)
	}
	if want := time.Unix(0, tracegen.BaseTimeNanoseconds).UTC(); !js.Base.Equal(want) {
		t.Errorf("base %v, want %v", js.Base, want)
	}
	if js.Flows == 0 {
		t.Error("no ac2g flows counted")
	}
}

// TestParseVariants covers kineto variations seen in the wild.
func TestParseVariants(t *testing.T) {
	tests := []struct {
		name       string
		doc        string
		wantStream int32
		wantDevice int32
		wantStart  int64
		wantEnd    int64
		wantKind   traces.Kind
	}{
		{
			name:       "args device and stream win over pid and tid",
			doc:        `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":9,"tid":9,"ts":1.5,"dur":2,"args":{"device":1,"stream":13}}]}`,
			wantStream: 13, wantDevice: 1, wantStart: 1500, wantEnd: 3500,
		},
		{
			name:       "older kineto: capitalised cat, string tid",
			doc:        `{"traceEvents":[{"ph":"X","cat":"Kernel","name":"k","pid":0,"tid":"stream 7","ts":10,"dur":1.25}]}`,
			wantStream: 7, wantDevice: 0, wantStart: 10000, wantEnd: 11250,
		},
		{
			name:       "bare array form",
			doc:        `[{"ph":"X","cat":"gpu_memset","name":"Memset (Device)","pid":2,"tid":3,"ts":0.001,"dur":0.002}]`,
			wantStream: 3, wantDevice: 2, wantStart: 1, wantEnd: 3, wantKind: traces.KindMemset,
		},
		{
			name:       "absolute epoch microseconds keep nanoseconds",
			doc:        `{"traceEvents":[{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":7,"ts":1764000000123456.789,"dur":3.001}]}`,
			wantStream: 7, wantStart: 1764000000123456789, wantEnd: 1764000000123459790, wantKind: traces.KindMemcpy,
		},
		{
			name:       "unknown keys and nested values are skipped",
			doc:        `{"x":{"y":[1,{"z":"w"}]},"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"grid":[1,2,3],"occupancy":{"a":1}}}],"traceName":"t"}`,
			wantStream: 7, wantStart: 1000, wantEnd: 2000,
		},
		{
			name:       "device and stream inside nested args values are ignored",
			doc:        `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"occupancy":{"device":99,"stream":98},"note":"\"device\": 97","device":1,"stream":"stream 13"}}]}`,
			wantStream: 13, wantDevice: 1, wantStart: 1000, wantEnd: 2000,
		},
		{
			name:       "brackets and escapes inside strings do not count as nesting",
			doc:        `{"traceEvents":[{"ph":"X","cat":"kernel","name":"a\\\"[[[[{{{{\\","pid":0,"tid":7,"ts":1,"dur":1,"args":null}]}`,
			wantStream: 7, wantStart: 1000, wantEnd: 2000,
		},
		{
			name:       "exponent notation",
			doc:        `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1e3,"dur":2.5e0}]}`,
			wantStream: 7, wantStart: 1000000, wantEnd: 1002500,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := traces.Parse(context.Background(), strings.NewReader(tc.doc), traces.Options{MaxDepth: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Activities) != 1 {
				t.Fatalf("%d activities, want 1", len(tr.Activities))
			}
			a := tr.Activities[0]
			if a.Stream != tc.wantStream || a.Device != tc.wantDevice || a.Start != tc.wantStart || a.End != tc.wantEnd || a.Kind != tc.wantKind {
				t.Errorf("got %+v, want device %d stream %d [%d, %d] kind %v", a, tc.wantDevice, tc.wantStream, tc.wantStart, tc.wantEnd, tc.wantKind)
			}
		})
	}
}

// TestParseReadBoundaries parses the fixture through readers that return
// one byte or half a buffer at a time: the byte-level limits must track
// strings and nesting across reads.
func TestParseReadBoundaries(t *testing.T) {
	b, err := os.ReadFile(fixtureJSON)
	if err != nil {
		t.Fatal(err)
	}
	want, err := traces.Parse(context.Background(), bytes.NewReader(b), traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"one byte", iotest.OneByteReader(bytes.NewReader(b))},
		{"half", iotest.HalfReader(bytes.NewReader(b))},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(b))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := traces.Parse(context.Background(), tc.r, traces.Options{MaxDepth: 5, MaxStringLen: 400})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Activities) != len(want.Activities) || got.Steps != want.Steps {
				t.Fatalf("%d activities, %d steps; want %d, %d", len(got.Activities), got.Steps, len(want.Activities), want.Steps)
			}
		})
	}
}

func TestStringLimitBoundary(t *testing.T) {
	doc := func(n int) string {
		return `{"traceEvents":[{"ph":"X","cat":"kernel","name":"` + strings.Repeat("\\n", n/2) + `","pid":0,"tid":7,"ts":1,"dur":1}]}`
	}
	opts := traces.Options{MaxStringLen: 64}
	if _, err := traces.Parse(context.Background(), iotest.OneByteReader(strings.NewReader(doc(64))), opts); err != nil {
		t.Errorf("string of exactly the limit: %v", err)
	}
	if _, err := traces.Parse(context.Background(), strings.NewReader(doc(66)), opts); !errors.Is(err, traces.ErrLimit) {
		t.Errorf("string over the limit: %v, want ErrLimit", err)
	}
}

func gzipBytes(t testing.TB, b []byte) []byte {
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

// TestParseHostile feeds malformed, truncated and hostile inputs: each must
// give the documented error, never a panic or a partial trace.
func TestParseHostile(t *testing.T) {
	fixture, err := os.ReadFile(fixtureJSON)
	if err != nil {
		t.Fatal(err)
	}
	fixtureGz, err := os.ReadFile(fixtureGzip)
	if err != nil {
		t.Fatal(err)
	}
	kernel := `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1}`
	tests := []struct {
		name  string
		input []byte
		opts  traces.Options
		want  error
		text  string // a substring the message must contain
	}{
		{"empty", nil, traces.Options{}, traces.ErrFormat, "empty"},
		{"whitespace", []byte("  \n "), traces.Options{}, traces.ErrFormat, "empty"},
		{"not json", []byte("hello world"), traces.Options{}, traces.ErrFormat, ""},
		{"json string", []byte(`"trace"`), traces.Options{}, traces.ErrFormat, "expected a JSON object"},
		{"object without traceEvents", []byte(`{"schemaVersion":1,"foo":[1,2]}`), traces.Options{}, traces.ErrFormat, "no traceEvents"},
		{"traceEvents not an array", []byte(`{"traceEvents":{"a":1}}`), traces.Options{}, traces.ErrFormat, "not an array"},
		{"events of the wrong type", []byte(`{"traceEvents":[1,2,3]}`), traces.Options{}, traces.ErrFormat, "event 0"},
		{"ts of the wrong type", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":"soon","dur":1}]}`), traces.Options{}, traces.ErrFormat, "event 0"},
		{"ts object", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":{},"dur":1}]}`), traces.Options{}, traces.ErrFormat, "event 0"},
		{"name of the wrong type", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":7,"ts":1,"dur":1}]}`), traces.Options{}, traces.ErrFormat, "event 0"},
		{"pid of the wrong type", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":[1],"ts":1,"dur":1}]}`), traces.Options{}, traces.ErrFormat, "event 0"},
		{"negative dur", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":-1}]}`), traces.Options{}, traces.ErrFormat, "negative dur"},
		{"bare inf from old kineto", []byte(`{"traceEvents":[{"ph":"X","cat":"Memcpy","name":"Memcpy HtoD","ts":1,"dur":0,"args":{"memory bandwidth (GB/s)": inf}}]}`), traces.Options{}, traces.ErrFormat, "bare inf/nan"},
		{"bare nan", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"x": nan}}]}`), traces.Options{}, traces.ErrFormat, "bare inf/nan"},
		{"huge ts", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1e300,"dur":1}]}`), traces.Options{}, traces.ErrFormat, "ts"},
		{"no gpu events", []byte(`{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":1}]}`), traces.Options{}, traces.ErrNoGPUActivity, "CUDA"},
		{"truncated fixture", fixture[:len(fixture)/2], traces.Options{}, traces.ErrFormat, "truncated"},
		{"truncated gzip", fixtureGz[:len(fixtureGz)/2], traces.Options{}, traces.ErrFormat, ""},
		{"gzip header only", []byte{0x1f, 0x8b}, traces.Options{}, traces.ErrFormat, "gzip"},
		{"gzip inside gzip", gzipBytes(t, gzipBytes(t, []byte(`{}`))), traces.Options{}, traces.ErrFormat, "gzip inside gzip"},
		{"deep nesting", []byte(`{"traceEvents":[{"args":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100) + `}]}`), traces.Options{}, traces.ErrLimit, "nesting"},
		{"deep arrays at top level", []byte(strings.Repeat("[", 100000)), traces.Options{}, traces.ErrLimit, "nesting"},
		{"huge string", []byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"` + strings.Repeat("a", 1<<20) + `","ts":1,"dur":1}]}`), traces.Options{MaxStringLen: 1 << 16}, traces.ErrLimit, "string longer"},
		{"huge key", []byte(`{"` + strings.Repeat("k", 1<<17) + `":1}`), traces.Options{}, traces.ErrLimit, "string longer"},
		{"too large", fixture, traces.Options{MaxBytes: 1000}, traces.ErrTooLarge, ""},
		{"gzip bomb", gzipBytes(t, []byte(`{"traceEvents":[`+strings.Repeat(`{},`, 3<<20)+`{}]}`)), traces.Options{MaxBytes: 1 << 20}, traces.ErrTooLarge, ""},
		{"event count bomb", []byte(`{"traceEvents":[` + strings.Repeat(`{},`, 1000) + kernel + `]}`), traces.Options{MaxEvents: 500}, traces.ErrLimit, "more than 500 events"},
		{"sqlite header only", []byte("SQLite format 3\x00garbage"), traces.Options{TempDir: t.TempDir()}, traces.ErrFormat, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := traces.Parse(context.Background(), bytes.NewReader(tc.input), tc.opts)
			if err == nil {
				t.Fatalf("no error; got %d activities", len(tr.Activities))
			}
			if tr != nil {
				t.Errorf("a trace came back with the error %v", err)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
			if !strings.HasPrefix(err.Error(), "traces: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestParseCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := os.Open(fixtureJSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := traces.Parse(ctx, f, traces.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// TestParseNsightHostile covers SQLite files that are not usable exports.
func TestParseNsightHostile(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   error
		text   string
	}{
		{"no kernel table", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER)`, traces.ErrFormat, "no CUPTI_ACTIVITY_KIND_KERNEL table"},
		{"unrelated database", `CREATE TABLE incidents (id INTEGER PRIMARY KEY, title TEXT)`, traces.ErrFormat, "no CUPTI_ACTIVITY_KIND_KERNEL table"},
		{"no StringIds", `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, demangledName INTEGER, shortName INTEGER)`, traces.ErrFormat, "no StringIds"},
		{"kernel table without columns", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (x INTEGER)`, traces.ErrFormat, "kernels"},
		{"empty kernel table", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, demangledName INTEGER, shortName INTEGER)`, traces.ErrNoGPUActivity, ""},
		{"end before start", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, demangledName INTEGER, shortName INTEGER); INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 5, 0, 7, 1, 1)`, traces.ErrFormat, "not an interval"},
		{"text in time column", `CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, demangledName, shortName); INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('soon', 5, 0, 7, 1, 1)`, traces.ErrFormat, "row 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.sqlite")
			db, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(tc.schema); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, err = traces.ParseFile(context.Background(), path, traces.Options{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %v, want %v mentioning %q", err, tc.want, tc.text)
			}
			// The same file through the streaming entry point.
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = traces.Parse(context.Background(), bytes.NewReader(b), traces.Options{TempDir: t.TempDir()})
			if !errors.Is(err, tc.want) {
				t.Fatalf("stream: error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseNsightStreamLimit(t *testing.T) {
	b, err := os.ReadFile(fixtureNsight)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = traces.Parse(context.Background(), bytes.NewReader(b), traces.Options{MaxBytes: 4096, TempDir: dir})
	if !errors.Is(err, traces.ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Errorf("spool files left behind: %v", left)
	}
	if _, err := traces.ParseFile(context.Background(), fixtureNsight, traces.Options{MaxBytes: 4096}); !errors.Is(err, traces.ErrTooLarge) {
		t.Fatalf("ParseFile: error %v, want ErrTooLarge", err)
	}
}

// TestParseMultiMemberGzip reads a gzip file made of several members (as
// `cat a.gz b.gz` or parallel compressors write) to the end.
func TestParseMultiMemberGzip(t *testing.T) {
	b, err := os.ReadFile(fixtureJSON)
	if err != nil {
		t.Fatal(err)
	}
	half := len(b) / 2
	multi := append(gzipBytes(t, b[:half]), gzipBytes(t, b[half:])...)
	tr, err := traces.Parse(context.Background(), bytes.NewReader(multi), traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Activities) != 444 {
		t.Errorf("%d activities, want 444", len(tr.Activities))
	}
}
