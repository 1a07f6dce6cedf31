package traces

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Errors returned by the parsers. They are wrapped with context; test with
// errors.Is.
var (
	// ErrTooLarge means the input (after decompression) exceeds Options.MaxBytes.
	ErrTooLarge = errors.New("trace exceeds the size limit")
	// ErrLimit means a string, the nesting depth or the event count exceeds
	// its limit in Options.
	ErrLimit = errors.New("trace exceeds a parser limit")
	// ErrFormat means the input is not a trace Casebook can read: not JSON,
	// gzip or SQLite, malformed, truncated, or missing the required parts.
	ErrFormat = errors.New("not a readable trace")
	// ErrNoGPUActivity means the trace parsed but holds no kernel, memcpy or
	// memset events, so there is nothing to summarise.
	ErrNoGPUActivity = errors.New("trace has no GPU kernel, memcpy or memset events")
)

// Format names the file format a trace was read from.
type Format string

// The supported formats.
const (
	FormatChrome Format = "chrome" // PyTorch profiler (kineto) Chrome-trace JSON, optionally gzip-compressed
	FormatNsight Format = "nsight" // Nsight Systems SQLite export (nsys export --type sqlite)
)

// Options bounds what a parser accepts. Zero values mean the defaults.
type Options struct {
	// MaxBytes is the largest input accepted, counted after decompression.
	// Default 1 GiB.
	MaxBytes int64
	// MaxStringLen is the longest JSON string (kernel names with template
	// arguments run to a few KiB) or SQLite name accepted. Default 64 KiB.
	MaxStringLen int
	// MaxDepth is the deepest JSON nesting accepted. Default 64.
	MaxDepth int
	// MaxEvents is the most trace events (Chrome) or activity rows (Nsight)
	// read. Default 20 million.
	MaxEvents int
	// MaxSpace is the longest run of whitespace (or a bare number or
	// literal) between two JSON tokens. Pretty-printed traces indent by a
	// few bytes per level; without a cap, encoding/json spends time
	// quadratic in the run's length. Default 64 KiB.
	MaxSpace int
	// MaxEventBytes is the longest single trace event, which the decoder
	// holds in memory whole. Default 4 MiB.
	MaxEventBytes int64
	// TempDir is where an Nsight export read from a stream is spooled,
	// because SQLite needs a file. Default os.TempDir().
	TempDir string
}

// Defaults of Options.
const (
	DefaultMaxBytes     = 1 << 30
	DefaultMaxStringLen = 64 << 10
	DefaultMaxDepth     = 64
	DefaultMaxEvents    = 20_000_000
	DefaultMaxSpace     = 64 << 10
	DefaultMaxEvent     = 4 << 20
)

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxStringLen <= 0 {
		o.MaxStringLen = DefaultMaxStringLen
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxSpace <= 0 {
		o.MaxSpace = DefaultMaxSpace
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = DefaultMaxEvent
	}
	return o
}

// Kind is the kind of a GPU activity.
type Kind uint8

// The GPU activity kinds.
const (
	KindKernel Kind = iota
	KindMemcpy
	KindMemset
)

// String returns "kernel", "memcpy" or "memset".
func (k Kind) String() string {
	switch k {
	case KindMemcpy:
		return "memcpy"
	case KindMemset:
		return "memset"
	default:
		return "kernel"
	}
}

// Activity is one GPU kernel, memcpy or memset. Times are nanoseconds on the
// trace's own clock (Chrome: ts*1000; Nsight: the export's start/end), so
// only differences between them are meaningful.
type Activity struct {
	Start  int64
	End    int64
	Name   int32 // index into Trace.Names
	Device int32
	Stream int32
	Kind   Kind
}

// Device describes one GPU of the trace, when the file says.
type Device struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	NumSMs int    `json:"num_sms,omitempty"`
}

// Trace is a parsed trace reduced to what the summary needs: GPU
// activities with interned names, plus host-side counters. It holds no
// CPU events, so its size is proportional to the number of GPU activities,
// not to the file.
type Trace struct {
	Format  Format
	Base    time.Time // epoch base of the trace clock when known (baseTimeNanoseconds), else zero
	Devices []Device
	// Names holds each distinct activity name once; NameCategory[i] is the
	// category of Names[i].
	Names        []string
	NameCategory []Category
	// Activities are sorted by device, then start, then stream.
	Activities []Activity
	// Steps counts ProfilerStep#N annotations; StepTime is their total
	// (CPU-side) duration.
	Steps    int
	StepTime time.Duration
	// KernelLaunches and GraphLaunches count cudaLaunchKernel (and
	// cuLaunchKernel) and cudaGraphLaunch runtime calls; LaunchTime is the
	// total host time spent inside them.
	KernelLaunches int
	GraphLaunches  int
	LaunchTime     time.Duration
	// Flows counts ac2g flow starts (CPU launch -> GPU kernel links).
	Flows int
	// Events is the number of trace events or rows read.
	Events int
}

// Parse reads a trace of any supported format from r, detecting it by its
// first bytes: gzip (1f 8b), the SQLite header, or JSON. At most
// opts.MaxBytes are read, counted after decompression. The context is
// checked on every read, so a cancelled or expired context stops reading,
// decompression and spooling within one buffer.
func Parse(ctx context.Context, r io.Reader, opts Options) (*Trace, error) {
	opts = opts.withDefaults()
	br := bufio.NewReaderSize(&limitReader{ctx: ctx, r: r, left: opts.MaxBytes}, 64<<10)
	head, _ := br.Peek(16)
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("traces: gzip: %w: %w", ErrFormat, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(&limitReader{ctx: ctx, r: zr, left: opts.MaxBytes}, 64<<10)
		head, _ = br.Peek(16)
		if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
			return nil, fmt.Errorf("traces: %w: gzip inside gzip", ErrFormat)
		}
	}
	if bytes.HasPrefix(head, sqliteMagic) {
		return parseNsightStream(ctx, br, opts)
	}
	return ParseChrome(ctx, br, opts)
}

// ParseFile opens path and parses it with Parse. An uncompressed Nsight
// export is opened in place (read-only) instead of being copied.
func ParseFile(ctx context.Context, path string, opts Options) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("traces: open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, _ := io.ReadFull(f, head)
	if n == len(sqliteMagic) && bytes.Equal(head, sqliteMagic) {
		opts = opts.withDefaults()
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("traces: stat %s: %w", path, err)
		}
		if st.Size() > opts.MaxBytes {
			return nil, fmt.Errorf("traces: %s is %d bytes, limit %d: %w", path, st.Size(), opts.MaxBytes, ErrTooLarge)
		}
		return ParseNsight(ctx, path, opts)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("traces: seek %s: %w", path, err)
	}
	return Parse(ctx, f, opts)
}

// limitReader fails with ErrTooLarge once more than left bytes were read,
// instead of silently truncating as io.LimitReader does, and with the
// context's error once it is done (a client gone, a deadline passed).
type limitReader struct {
	ctx  context.Context
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, ErrTooLarge
	}
	if l.ctx != nil {
		if err := l.ctx.Err(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, ErrTooLarge
	}
	return n, err
}

// builder accumulates a Trace while a parser reads events.
type builder struct {
	t     Trace
	names map[string]int32
}

func newBuilder(f Format) *builder {
	return &builder{t: Trace{Format: f}, names: make(map[string]int32)}
}

// name interns a name; the lookup does not allocate, so only the first
// occurrence of each name is copied.
func (b *builder) name(raw []byte) int32 {
	if id, ok := b.names[string(raw)]; ok {
		return id
	}
	s := string(raw)
	id := int32(len(b.t.Names))
	b.names[s] = id
	b.t.Names = append(b.t.Names, s)
	return id
}

func (b *builder) add(kind Kind, name []byte, start, end int64, device, stream int64) {
	b.t.Activities = append(b.t.Activities, Activity{
		Start: start, End: end, Name: b.name(name),
		Device: clamp32(device), Stream: clamp32(stream), Kind: kind,
	})
}

func clamp32(v int64) int32 {
	if v > 1<<31-1 {
		return 1<<31 - 1
	}
	if v < -1<<31 {
		return -1 << 31
	}
	return int32(v)
}

// finish classifies names, sorts activities and checks there is GPU work.
func (b *builder) finish() (*Trace, error) {
	t := &b.t
	if len(t.Activities) == 0 {
		return nil, fmt.Errorf("traces: %s: %w (was the profiler run with CUDA activities enabled?)", t.Format, ErrNoGPUActivity)
	}
	// The kind of the first activity with a name decides its category;
	// memcpy/memset names never collide with kernel names in practice.
	t.NameCategory = make([]Category, len(t.Names))
	for i, n := range t.Names {
		t.NameCategory[i] = Classify(n)
	}
	for _, a := range t.Activities {
		if a.Kind != KindKernel {
			t.NameCategory[a.Name] = CategoryMemory
		}
	}
	sortActivities(t.Activities)
	return t, nil
}
