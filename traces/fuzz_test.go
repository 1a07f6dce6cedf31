package traces_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/casebook/casebook/traces"
)

// FuzzParseChrome feeds arbitrary bytes to the Chrome-trace parser (and
// through Parse to the gzip detection). It must return either an error
// wrapping one of the package's sentinels or a consistent trace, and a
// trace must summarise and render without panicking.
func FuzzParseChrome(f *testing.F) {
	if b, err := os.ReadFile(fixtureJSON); err == nil {
		f.Add(b[:min(len(b), 8192)])
	}
	if b, err := os.ReadFile(fixtureGzip); err == nil {
		f.Add(b)
	}
	f.Add([]byte(smallTrace))
	f.Add([]byte(`[{"ph":"X","cat":"Kernel","name":"k","pid":"0","tid":"stream 7","ts":1.5,"dur":2}]`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1e3,"dur":-1}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"gpu_memcpy","ts":9999999999999999.999,"dur":0}]}`))
	f.Add([]byte(`{"a":[[[[{}]]]],"traceEvents":[]}`))
	opts := traces.Options{MaxBytes: 1 << 20, MaxDepth: 16, MaxStringLen: 1024, MaxEvents: 10000}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := traces.Parse(context.Background(), bytes.NewReader(data), opts)
		if err != nil {
			if tr != nil {
				t.Fatal("trace returned with an error")
			}
			if !errors.Is(err, traces.ErrFormat) && !errors.Is(err, traces.ErrLimit) &&
				!errors.Is(err, traces.ErrTooLarge) && !errors.Is(err, traces.ErrNoGPUActivity) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		if len(tr.Activities) == 0 || len(tr.NameCategory) != len(tr.Names) {
			t.Fatalf("inconsistent trace: %d activities, %d names, %d categories", len(tr.Activities), len(tr.Names), len(tr.NameCategory))
		}
		for _, a := range tr.Activities {
			if a.End < a.Start || int(a.Name) >= len(tr.Names) {
				t.Fatalf("bad activity %+v", a)
			}
		}
		s := traces.Summarize(tr)
		if s.Idle.Share < 0 || s.Idle.Share > 1 {
			t.Fatalf("idle share %v", s.Idle.Share)
		}
		_ = s.TimelineSVG()
		_ = traces.Evidences(s, &s)
	})
}
