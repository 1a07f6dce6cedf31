package traces_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
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

// FuzzParseSpacing builds a one-kernel trace around a fuzzed kernel name,
// with a fuzzed run of whitespace between every pair of tokens and a
// fuzzed depth of nested arrays in the event's args, and checks the
// guard's whitespace collapsing and nesting count against what the input
// says: a run over MaxSpace or nesting over MaxDepth is ErrLimit, anything
// else parses to the one kernel with its name intact.
func FuzzParseSpacing(f *testing.F) {
	f.Add("void gemm<float>(int)", uint16(0), uint8(0), uint8(0))
	f.Add("k", uint16(255), uint8(11), uint8(1))
	f.Add("a \" b\\n", uint16(256), uint8(12), uint8(2))
	f.Add("\x00\xff", uint16(3), uint8(40), uint8(3))
	const maxSpace, maxDepth = 256, 16
	opts := traces.Options{MaxSpace: maxSpace, MaxDepth: maxDepth, MaxStringLen: 4096}
	f.Fuzz(func(t *testing.T, name string, pad uint16, nest uint8, mix uint8) {
		pad %= 2 * maxSpace
		depth := int(nest % 24)
		var ws strings.Builder
		for i := 0; i < int(pad); i++ {
			ws.WriteByte(" \n\t\r"[(i+int(mix))%4])
		}
		sp := ws.String()
		quoted, err := json.Marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(quoted, &want); err != nil {
			t.Fatal(err)
		}
		tokens := []string{`{`, `"traceEvents"`, `:`, `[`, `{`, `"ph"`, `:`, `"X"`, `,`, `"cat"`, `:`, `"kernel"`, `,`,
			`"name"`, `:`, string(quoted), `,`, `"ts"`, `:`, `1.5`, `,`, `"dur"`, `:`, `2`, `,`, `"args"`, `:`, `{`, `"x"`, `:`}
		for i := 0; i < depth; i++ {
			tokens = append(tokens, `[`)
		}
		tokens = append(tokens, `true`)
		for i := 0; i < depth; i++ {
			tokens = append(tokens, `]`)
		}
		tokens = append(tokens, `}`, `}`, `]`, `}`)
		doc := sp + strings.Join(tokens, sp) + sp

		tr, err := traces.Parse(context.Background(), strings.NewReader(doc), opts)
		tooDeep := 4+depth > maxDepth
		tooSpaced := int(pad) > maxSpace
		switch {
		case tooDeep || tooSpaced:
			if !errors.Is(err, traces.ErrLimit) {
				t.Fatalf("pad %d depth %d: error %v, want ErrLimit", pad, depth, err)
			}
		case len(want) == 0 && err == nil:
			if tr.Names[0] != "kernel" {
				t.Fatalf("unnamed kernel is %q", tr.Names[0])
			}
		case err != nil:
			if errors.Is(err, traces.ErrLimit) && len(quoted) > 4096 {
				return
			}
			t.Fatalf("pad %d depth %d: %v", pad, depth, err)
		default:
			if len(tr.Activities) != 1 || tr.Names[0] != want {
				t.Fatalf("got %d activities named %q, want one named %q", len(tr.Activities), tr.Names, want)
			}
			if a := tr.Activities[0]; a.Start != 1500 || a.End != 3500 {
				t.Fatalf("activity %+v, want 1500..3500 ns", a)
			}
		}
	})
}

// FuzzDecodeSummary: a stored summary either decodes, and then encodes
// and decodes to the same summary, or is refused with an error that says
// what failed.
func FuzzDecodeSummary(f *testing.F) {
	if tr, err := traces.Parse(context.Background(), strings.NewReader(smallTrace), traces.Options{}); err == nil {
		if b, err := traces.Summarize(tr).Encode(); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"span_ns":"x"}`, `{"top":[{"name":1}]}`, `{"lanes":[{"bins":[1e400]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := traces.DecodeSummary(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "traces: decode summary: ") {
				t.Fatalf("error %q lacks its prefix", err)
			}
			return
		}
		b, err := s.Encode()
		if err != nil {
			return // a decoded NaN cannot be encoded; JSON has none
		}
		again, err := traces.DecodeSummary(b)
		if err != nil {
			t.Fatalf("a re-encoded summary does not decode: %v\n%s", err, b)
		}
		b2, _ := again.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding changed the summary:\n%s\n%s", b, b2)
		}
	})
}
