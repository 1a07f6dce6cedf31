package traces

import (
	"bytes"
	"fmt"
	"io"
)

// jsonGuard watches the raw JSON bytes on their way into encoding/json and
// fails the read as soon as a string is longer than maxString, nesting is
// deeper than maxDepth, a run of whitespace or a bare literal between two
// tokens is longer than maxSpace, or one event (a value nested at the
// depth of traceEvents' elements) is longer than maxEvent. encoding/json
// buffers a whole token (and a whole value for Decode) before it can be
// inspected, so these limits have to be enforced on the byte stream to
// keep memory bounded on hostile input.
//
// It also collapses every run of whitespace outside strings to its first
// byte, which JSON allows: json.Decoder rescans the whitespace it holds
// each time it reads more while looking for the next token, so a long run
// costs time quadratic in its length; collapsed, it costs one scan here.
type jsonGuard struct {
	r         io.Reader
	maxString int
	maxDepth  int
	maxSpace  int
	maxEvent  int64

	inString   bool
	escape     bool
	space      bool // the last byte kept outside a string was whitespace
	strLen     int
	depth      int
	run        int   // bytes in the current run of whitespace
	lit        int   // bytes in the current bare literal
	eventDepth int   // depth of an event: 2 in a bare array, 3 under traceEvents
	eventStart int64 // offset where the value at eventDepth began
	offset     int64
	err        error
}

func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	buf := p[:n]
	w := 0 // bytes kept, compacted at the front of buf
	for i := 0; i < len(buf); i++ {
		if g.inString {
			if g.escape {
				g.escape = false
				g.strLen++
				buf[w] = buf[i]
				w++
				continue
			}
			// Fast path: jump to the next quote or backslash.
			end := len(buf)
			if k := bytes.IndexByte(buf[i:], '"'); k >= 0 {
				end = i + k
			}
			j := end
			if k := bytes.IndexByte(buf[i:end], '\\'); k >= 0 {
				j = i + k
			}
			g.strLen += j - i
			if g.strLen > g.maxString {
				return g.fail(w, fmt.Errorf("%w: string longer than %d bytes at offset %d", ErrLimit, g.maxString, g.offset+int64(j)))
			}
			if w != i {
				copy(buf[w:], buf[i:j])
			}
			w += j - i
			if j == len(buf) {
				break
			}
			i = j
			buf[w] = buf[j]
			w++
			if buf[j] == '\\' {
				g.escape = true
				g.strLen++
			} else {
				g.inString = false
			}
			continue
		}
		c := buf[i]
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			g.lit = 0
			if g.run++; g.run > g.maxSpace {
				return g.fail(w, fmt.Errorf("%w: more than %d bytes of whitespace between two tokens at offset %d", ErrLimit, g.maxSpace, g.offset+int64(i)))
			}
			if g.space {
				continue
			}
			g.space = true
			buf[w] = c
			w++
			continue
		}
		g.space, g.run = false, 0
		buf[w] = c
		w++
		switch c {
		case '"':
			g.inString = true
			g.strLen = 0
			g.lit = 0
		case '{', '[':
			g.lit = 0
			g.depth++
			if g.depth > g.maxDepth {
				return g.fail(w, fmt.Errorf("%w: nesting deeper than %d at offset %d", ErrLimit, g.maxDepth, g.offset+int64(i)))
			}
			if g.eventDepth == 0 {
				g.eventDepth = 3
				if c == '[' {
					g.eventDepth = 2
				}
			}
			if g.depth == g.eventDepth {
				g.eventStart = g.offset + int64(i)
			}
		case '}', ']':
			g.lit = 0
			g.depth--
		case ',', ':':
			g.lit = 0
			// Checked between tokens only: a run and a string are capped,
			// so the event overshoots its limit by at most their caps.
			if g.eventDepth > 0 && g.depth >= g.eventDepth && g.offset+int64(i)-g.eventStart > g.maxEvent {
				return g.fail(w, fmt.Errorf("%w: an event longer than %d bytes at offset %d", ErrLimit, g.maxEvent, g.eventStart))
			}
		default:
			// A number, true, false or null (or a syntax error the
			// decoder reports).
			if g.lit++; g.lit > g.maxSpace {
				return g.fail(w, fmt.Errorf("%w: a literal longer than %d bytes at offset %d", ErrLimit, g.maxSpace, g.offset+int64(i)))
			}
		}
	}
	g.offset += int64(n)
	return w, err
}

// fail records err and hands the decoder the bytes kept before the
// offending one.
func (g *jsonGuard) fail(w int, err error) (int, error) {
	g.err = err
	return w, err
}
