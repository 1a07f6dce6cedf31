package traces_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/traces"
)

// TestParseHostileSpacing covers inputs that are valid JSON, or close to
// it, but are built to make the decoder slow or hungry: long runs of
// whitespace between tokens (json.Decoder rescans them on every refill, so
// their cost grows with the square of their length), a number literal of
// megabytes, and one event of many megabytes that Decode would buffer
// whole. Each must fail with ErrLimit, with the default options, without
// reading far past the offending run.
func TestParseHostileSpacing(t *testing.T) {
	kernel := `{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}`
	tests := []struct {
		name string
		doc  string
		text string
	}{
		{"whitespace in the event array", `{"traceEvents":[` + strings.Repeat(" ", 4<<20) + `]}`, "whitespace"},
		{"whitespace before the first token", strings.Repeat("\n", 4<<20) + `[` + kernel + `]`, "whitespace"},
		{"whitespace between events", `[` + kernel + `,` + strings.Repeat("\t", 4<<20) + kernel + `]`, "whitespace"},
		{"whitespace inside an event", `[{"ph":` + strings.Repeat(" ", 4<<20) + `"X"}]`, "whitespace"},
		{"whitespace in a skipped value", `{"other":[1,` + strings.Repeat("\r\n", 2<<20) + `2],"traceEvents":[` + kernel + `]}`, "whitespace"},
		{"long number", `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1` + strings.Repeat("0", 4<<20) + `,"dur":1}]}`, "literal"},
		{"huge event", `{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","args":{"dims":[` + strings.Repeat(`[1,2],`, 2<<20) + `[]]}}]}`, "event longer"},
		{"huge event in a bare array", `[{"args":{"dims":[` + strings.Repeat(`"ab",`, 2<<20) + `""]}}]`, "event longer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, enc := range []string{"json", "gzip"} {
				in := []byte(tc.doc)
				if enc == "gzip" {
					in = gzipBytes(t, in)
				}
				_, err := traces.Parse(context.Background(), bytes.NewReader(in), traces.Options{})
				if !errors.Is(err, traces.ErrLimit) || !strings.Contains(err.Error(), tc.text) {
					t.Fatalf("%s: error %v, want ErrLimit mentioning %q", enc, err, tc.text)
				}
			}
		})
	}
}

// TestParseIndentedWithinLimits checks the caps leave room for pretty-
// printed traces: deep indentation and long lines between tokens parse.
func TestParseIndentedWithinLimits(t *testing.T) {
	pad := strings.Repeat(" ", traces.DefaultMaxSpace-1)
	doc := "{" + pad + `"traceEvents"` + pad + ":" + pad + "[" + pad +
		`{"ph":"X",` + pad + `"cat":"kernel","name":"k","ts":1,"dur":1}` + pad + "]" + pad + "}" + pad
	tr, err := traces.Parse(context.Background(), strings.NewReader(doc), traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Activities) != 1 {
		t.Fatalf("%d activities, want 1", len(tr.Activities))
	}
}

// TestParseCancelledWhileSkipping cancels the context in the middle of a
// long read of a value the parser skips (where no event is counted) and
// expects it to stop with the context's error rather than read on.
func TestParseCancelledWhileSkipping(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var read atomic.Int64
	src := &endless{unit: []byte(`[1,"x"],`), head: []byte(`{"metadata":[`)}
	r := &countingReader{r: src, n: &read, after: 256 << 10, hook: cancel}
	done := make(chan error, 1)
	go func() {
		_, err := traces.Parse(ctx, r, traces.Options{MaxBytes: 1 << 40})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the parser kept reading after the context was cancelled")
	}
	if n := read.Load(); n > 4<<20 {
		t.Errorf("read %d bytes; the cancel came at 256 KiB", n)
	}
}

// endless is a JSON document that never ends: head, then unit forever.
type endless struct {
	head, unit []byte
	off        int
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(e.head) > 0 {
			c := copy(p[n:], e.head)
			e.head = e.head[c:]
			n += c
			continue
		}
		c := copy(p[n:], e.unit[e.off:])
		e.off = (e.off + c) % len(e.unit)
		n += c
	}
	return n, nil
}

// countingReader counts bytes and calls hook once after the given number.
type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	after int64
	hook  func()
	once  sync.Once
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n.Add(int64(n)) > c.after {
		c.once.Do(c.hook)
	}
	return n, err
}

// BenchmarkParseWhitespaceBomb parses gzip uploads that inflate to 1 GiB
// of whitespace: "one-run" is `{"traceEvents":[`, spaces, `]}` (refused at
// the cap); "under-cap" repeats runs one byte shorter than the cap between
// empty events, ending with a kernel, so the whole GiB is parsed. Each
// reports the upload size, the time to the answer, total-alloc-MB/op and
// peak-heap-MB, the highest runtime HeapInuse sampled every 5 ms. Run with
//
//	go test -tags sqlite_fts5 ./traces -run '^$' -bench WhitespaceBomb -benchtime 1x
func BenchmarkParseWhitespaceBomb(b *testing.B) {
	kernel := []byte(`{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}]}`)
	b.Run("one-run", func(b *testing.B) {
		benchBomb(b, func(w io.Writer) {
			w.Write([]byte(`{"traceEvents":[`))
			spaces := bytes.Repeat([]byte(" "), 1<<20)
			for i := 0; i < 1024; i++ {
				w.Write(spaces)
			}
			w.Write([]byte(`]}`))
		})
	})
	b.Run("under-cap", func(b *testing.B) {
		benchBomb(b, func(w io.Writer) {
			w.Write([]byte(`{"traceEvents":[`))
			unit := append(bytes.Repeat([]byte(" "), traces.DefaultMaxSpace-1), `{},`...)
			for n := 0; n < 1<<30; n += len(unit) {
				w.Write(unit)
			}
			w.Write(kernel)
		})
	})
}

func benchBomb(b *testing.B, write func(io.Writer)) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	write(zw)
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	upload := buf.Bytes()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	peakHeap := samplePeakHeap()
	b.ResetTimer()
	var err error
	for i := 0; i < b.N; i++ {
		_, err = traces.Parse(context.Background(), bytes.NewReader(upload), traces.Options{MaxBytes: 2 << 30})
	}
	b.StopTimer()
	peak := peakHeap()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(len(upload))/(1<<10), "upload-KiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "total-alloc-MB/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.Logf("upload %d KiB inflating to 1 GiB: err=%v", len(upload)>>10, err)
}
