package traces

import (
	"bytes"
	"fmt"
	"io"
)

// jsonGuard watches the raw JSON bytes on their way into encoding/json and
// fails the read as soon as a string is longer than maxString or nesting is
// deeper than maxDepth. encoding/json buffers a whole token (and a whole
// value for Decode) before it can be inspected, so these limits have to be
// enforced on the byte stream to keep memory bounded on hostile input.
type jsonGuard struct {
	r         io.Reader
	maxString int
	maxDepth  int

	inString bool
	escape   bool
	strLen   int
	depth    int
	offset   int64
	err      error
}

func (g *jsonGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	buf := p[:n]
	for i := 0; i < len(buf); i++ {
		if g.inString {
			if g.escape {
				g.escape = false
				g.strLen++
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
				g.err = fmt.Errorf("%w: string longer than %d bytes at offset %d", ErrLimit, g.maxString, g.offset+int64(j))
				return i, g.err
			}
			if j == len(buf) {
				break
			}
			i = j
			if buf[j] == '\\' {
				g.escape = true
				g.strLen++
			} else {
				g.inString = false
			}
			continue
		}
		switch buf[i] {
		case '"':
			g.inString = true
			g.strLen = 0
		case '{', '[':
			g.depth++
			if g.depth > g.maxDepth {
				g.err = fmt.Errorf("%w: nesting deeper than %d at offset %d", ErrLimit, g.maxDepth, g.offset+int64(i))
				return i, g.err
			}
		case '}', ']':
			g.depth--
		}
	}
	g.offset += int64(n)
	return n, err
}
