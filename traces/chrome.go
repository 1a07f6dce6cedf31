package traces

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// chromeEvent holds the fields of a trace event that Casebook reads; every
// other field (and every other arg) is skipped by the decoder.
//
// The string and number fields decode into reused byte buffers instead of
// new strings: a trace has millions of events, and allocating their ph,
// cat, name, ts and dur dominated the garbage. Names are copied out only
// when a GPU activity with a new name is kept.
type chromeEvent struct {
	Ph   jsonText   `json:"ph"`
	Cat  jsonText   `json:"cat"`
	Name jsonText   `json:"name"`
	Pid  flexID     `json:"pid"`
	Tid  flexID     `json:"tid"`
	Ts   jsonNumber `json:"ts"`
	Dur  jsonNumber `json:"dur"`
	Args chromeArgs `json:"args"`
}

// reset clears the event for the next Decode, keeping buffer capacity
// (encoding/json leaves fields absent from the input untouched).
func (e *chromeEvent) reset() {
	e.Ph.b, e.Cat.b, e.Name.b = e.Ph.b[:0], e.Cat.b[:0], e.Name.b[:0]
	e.Ts.b, e.Dur.b = e.Ts.b[:0], e.Dur.b[:0]
	e.Pid, e.Tid, e.Args = flexID{}, flexID{}, chromeArgs{}
}

// jsonText is a JSON string (or null) decoded into a reused buffer.
type jsonText struct{ b []byte }

func (t *jsonText) UnmarshalJSON(raw []byte) error {
	t.b = t.b[:0]
	if string(raw) == "null" {
		return nil
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return fmt.Errorf("%.40s is not a string", raw)
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		t.b = append(t.b, inner...)
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	t.b = append(t.b, s...)
	return nil
}

// jsonNumber keeps the literal of a JSON number (or of a string holding
// one) in a reused buffer; micros parses it when the event needs it.
type jsonNumber struct{ b []byte }

func (n *jsonNumber) UnmarshalJSON(raw []byte) error {
	n.b = n.b[:0]
	if string(raw) == "null" {
		return nil
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	if len(raw) == 0 || len(raw) > 40 {
		return fmt.Errorf("%.40q is not a number", raw)
	}
	n.b = append(n.b, raw...)
	return nil
}

// chromeArgs holds the two args Casebook reads. Its UnmarshalJSON scans
// the (already validated) object for its top-level "device" and "stream"
// keys and skips everything else without reflection: kernel args carry a
// dozen fields, and decoding them dominated the parse time.
type chromeArgs struct {
	Device flexID
	Stream flexID
}

func (a *chromeArgs) UnmarshalJSON(b []byte) error {
	*a = chromeArgs{}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		if string(b[i:]) == "null" {
			return nil
		}
		return fmt.Errorf("args is not an object")
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return nil
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '"' {
			return fmt.Errorf("args: malformed object")
		}
		kEnd := skipString(b, i)
		key := b[i:kEnd]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return fmt.Errorf("args: malformed object")
		}
		i = skipSpace(b, i+1)
		vEnd := skipJSONValue(b, i)
		switch string(key) {
		case `"device"`:
			if err := a.Device.UnmarshalJSON(b[i:vEnd]); err != nil {
				return fmt.Errorf("args.device: %w", err)
			}
		case `"stream"`:
			if err := a.Stream.UnmarshalJSON(b[i:vEnd]); err != nil {
				return fmt.Errorf("args.stream: %w", err)
			}
		}
		i = vEnd
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipJSONValue returns the index after the value starting at b[i]. The
// input has been validated by encoding/json, so only the structure matters.
func skipJSONValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i
	}
}

type chromeDevice struct {
	ID     flexID `json:"id"`
	Name   string `json:"name"`
	NumSMs int    `json:"numSms"`
}

// flexID is a pid, tid, device or stream: a JSON number, or a string such
// as "stream 7" (older kineto) whose trailing digits are the id. Strings
// without digits ("Spans") and null leave it unset.
type flexID struct {
	v   int64
	set bool
}

func (f *flexID) UnmarshalJSON(b []byte) error {
	*f = flexID{}
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return fmt.Errorf("id %.40s: %w", b, err)
		}
		end := len(s)
		start := end
		for start > 0 && s[start-1] >= '0' && s[start-1] <= '9' {
			start--
		}
		if start == end || end-start > 18 {
			return nil
		}
		v, err := strconv.ParseInt(s[start:end], 10, 64)
		if err != nil {
			return nil
		}
		*f = flexID{v: v, set: true}
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		fv, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || fv != fv || fv > 1e15 || fv < -1e15 {
			return fmt.Errorf("id %.40s is not a number or string", b)
		}
		v = int64(fv)
	}
	*f = flexID{v: v, set: true}
	return nil
}

// ParseChrome reads a PyTorch profiler Chrome-trace JSON document (the
// object form with traceEvents, or a bare array of events) from r, which
// must already be decompressed. It streams: the traceEvents array is read
// one event at a time with json.Decoder, unknown top-level values are
// skipped token by token, and only GPU activities are kept.
func ParseChrome(ctx context.Context, r io.Reader, opts Options) (*Trace, error) {
	opts = opts.withDefaults()
	g := &jsonGuard{r: &limitReader{ctx: ctx, r: r, left: opts.MaxBytes}, maxString: opts.MaxStringLen, maxDepth: opts.MaxDepth,
		maxSpace: opts.MaxSpace, maxEvent: opts.MaxEventBytes}
	pr := newPrefetchReader(g)
	defer pr.Close()
	dec := json.NewDecoder(pr)
	p := &chromeParser{ctx: ctx, dec: dec, opts: opts, b: newBuilder(FormatChrome)}
	if err := p.parse(); err != nil {
		return nil, fmt.Errorf("traces: chrome trace: %w", classifyErr(err))
	}
	return p.b.finish()
}

// classifyErr makes every decoder failure an ErrFormat unless it already
// carries one of the package's sentinels.
func classifyErr(err error) error {
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrLimit), errors.Is(err, ErrFormat),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: truncated JSON", ErrFormat)
	default:
		var se *json.SyntaxError
		if errors.As(err, &se) && (strings.Contains(se.Error(), "'i'") || strings.Contains(se.Error(), "'N'") || strings.Contains(se.Error(), "'a' in literal null")) {
			return fmt.Errorf("%w: %w (bare inf/nan values, which kineto wrote before 2021, are not JSON)", ErrFormat, err)
		}
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
}

type chromeParser struct {
	ctx  context.Context
	dec  *json.Decoder
	opts Options
	b    *builder
}

func (p *chromeParser) parse() error {
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty input", ErrFormat)
		}
		return err
	}
	switch tok {
	case json.Delim('['):
		return p.events()
	case json.Delim('{'):
	default:
		return fmt.Errorf("%w: expected a JSON object with traceEvents, got %v", ErrFormat, tok)
	}
	sawEvents := false
	for p.dec.More() {
		tok, err := p.dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: unexpected %v", ErrFormat, tok)
		}
		switch key {
		case "traceEvents":
			t, err := p.dec.Token()
			if err != nil {
				return err
			}
			if t != json.Delim('[') {
				return fmt.Errorf("%w: traceEvents is not an array", ErrFormat)
			}
			if err := p.events(); err != nil {
				return err
			}
			sawEvents = true
		case "deviceProperties":
			if err := p.devices(); err != nil {
				return fmt.Errorf("deviceProperties: %w", err)
			}
		case "baseTimeNanoseconds":
			var n json.Number
			if err := p.dec.Decode(&n); err != nil {
				return fmt.Errorf("%w: baseTimeNanoseconds: %w", ErrFormat, err)
			}
			if v, err := n.Int64(); err == nil && v > 0 && v < maxNanos {
				p.b.t.Base = time.Unix(0, v).UTC()
			}
		default:
			if err := skipValue(p.dec); err != nil {
				return fmt.Errorf("%s: %w", truncate(key, 40), err)
			}
		}
	}
	if _, err := p.dec.Token(); err != nil { // closing brace
		return err
	}
	if !sawEvents {
		return fmt.Errorf("%w: no traceEvents array (is this a PyTorch profiler trace?)", ErrFormat)
	}
	return nil
}

// events reads trace events up to the closing bracket of the array.
func (p *chromeParser) events() error {
	var ev chromeEvent
	for p.dec.More() {
		if p.b.t.Events >= p.opts.MaxEvents {
			return fmt.Errorf("%w: more than %d events", ErrLimit, p.opts.MaxEvents)
		}
		if p.b.t.Events&4095 == 0 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		ev.reset()
		if err := p.dec.Decode(&ev); err != nil {
			return fmt.Errorf("event %d: %w", p.b.t.Events, err)
		}
		if err := p.event(&ev); err != nil {
			return fmt.Errorf("%w: event %d (%s): %w", ErrFormat, p.b.t.Events, truncate(string(ev.Name.b), 60), err)
		}
		p.b.t.Events++
	}
	_, err := p.dec.Token() // closing bracket
	return err
}

func (p *chromeParser) event(ev *chromeEvent) error {
	switch string(ev.Ph.b) {
	case "X":
	case "s":
		if string(ev.Cat.b) == "ac2g" {
			p.b.t.Flows++
		}
		return nil
	default:
		return nil
	}
	var kind Kind
	name := ev.Name.b
	cat := ev.Cat.b
	switch {
	case bytes.EqualFold(cat, []byte("kernel")):
		kind = KindKernel
	case bytes.EqualFold(cat, []byte("gpu_memcpy")), bytes.EqualFold(cat, []byte("memcpy")):
		kind = KindMemcpy
	case bytes.EqualFold(cat, []byte("gpu_memset")), bytes.EqualFold(cat, []byte("memset")):
		kind = KindMemset
	case string(cat) == "user_annotation":
		if bytes.HasPrefix(name, []byte("ProfilerStep#")) {
			d, err := micros(ev.Dur)
			if err != nil {
				return fmt.Errorf("dur: %w", err)
			}
			p.b.t.Steps++
			p.b.t.StepTime += time.Duration(d)
		}
		return nil
	case string(cat) == "cuda_runtime", string(cat) == "cuda_driver":
		d, err := micros(ev.Dur)
		if err != nil {
			return fmt.Errorf("dur: %w", err)
		}
		switch {
		case bytes.HasPrefix(name, []byte("cudaGraphLaunch")), bytes.HasPrefix(name, []byte("cuGraphLaunch")):
			p.b.t.GraphLaunches++
			p.b.t.LaunchTime += time.Duration(d)
		case bytes.HasPrefix(name, []byte("cudaLaunchKernel")), bytes.HasPrefix(name, []byte("cuLaunchKernel")):
			p.b.t.KernelLaunches++
			p.b.t.LaunchTime += time.Duration(d)
		}
		return nil
	default:
		return nil
	}
	ts, err := micros(ev.Ts)
	if err != nil {
		return fmt.Errorf("ts: %w", err)
	}
	dur, err := micros(ev.Dur)
	if err != nil {
		return fmt.Errorf("dur: %w", err)
	}
	if dur < 0 {
		return fmt.Errorf("negative dur")
	}
	if ts > maxNanos-dur {
		return fmt.Errorf("ts out of range")
	}
	device, stream := ev.Pid, ev.Tid
	if ev.Args.Device.set {
		device = ev.Args.Device
	}
	if ev.Args.Stream.set {
		stream = ev.Args.Stream
	}
	if len(name) == 0 {
		name = []byte(kind.String())
	}
	p.b.add(kind, name, ts, ts+dur, device.v, stream.v)
	return nil
}

func (p *chromeParser) devices() error {
	tok, err := p.dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return fmt.Errorf("%w: not an array", ErrFormat)
	}
	for p.dec.More() {
		var d chromeDevice
		if err := p.dec.Decode(&d); err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
		if len(p.b.t.Devices) < 1024 {
			p.b.t.Devices = append(p.b.t.Devices, Device{ID: int(d.ID.v), Name: d.Name, NumSMs: d.NumSMs})
		}
	}
	_, err = p.dec.Token()
	return err
}

// skipValue consumes one JSON value token by token, so that a large
// unknown value is never buffered whole.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// maxNanos bounds timestamps so that start+dur never overflows.
const maxNanos = int64(1) << 62

// micros converts a JSON number of microseconds (kineto writes three
// decimals) to integer nanoseconds without going through float64, which
// would lose nanoseconds on absolute epoch timestamps. An absent value is 0.
func micros(n jsonNumber) (int64, error) {
	s := n.b
	if len(s) == 0 {
		return 0, nil
	}
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	intPart, frac, _ := bytes.Cut(s, []byte("."))
	if len(intPart) == 0 || len(intPart) > 16 || bytes.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(string(n.b), 64)
		if err != nil || f != f || f > float64(maxNanos)/1000 || f < -float64(maxNanos)/1000 {
			return 0, fmt.Errorf("%.40q is not a time in microseconds", n.b)
		}
		return int64(f * 1000), nil
	}
	var v int64
	for i := 0; i < len(intPart); i++ {
		c := intPart[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%.40q is not a number", n.b)
		}
		v = v*10 + int64(c-'0')
	}
	if v > maxNanos/1000 {
		return 0, fmt.Errorf("%.40q microseconds is out of range", n.b)
	}
	v *= 1000
	scale := int64(100)
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%.40q is not a number", n.b)
		}
		if scale > 0 {
			v += int64(c-'0') * scale
			scale /= 10
		}
	}
	if neg {
		v = -v
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
