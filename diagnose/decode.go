package diagnose

import (
	"strconv"
	"time"

	"github.com/casebook/casebook/metrics"
)

// ParseSnapshot decodes and validates one snapshot exactly as
// metrics.DecodeSnapshot does, faster on the common shape.
//
// Snapshots are mostly history: sixty points of thirty numbers. A small
// scanner reads that shape directly (about three times faster than
// encoding/json into maps) and then applies the same validation
// (metrics.Snapshot.Normalize, the size limit). Anything it does not
// recognise, from an unknown field or an escaped string to malformed JSON,
// is handed to metrics.DecodeSnapshot, which stays the one authority on
// what is accepted and on every error message.
func ParseSnapshot(data []byte) (metrics.Snapshot, error) {
	if len(data) <= metrics.MaxSnapshotBytes {
		if s, ok := scanSnapshot(data); ok {
			if err := s.Normalize(); err == nil {
				return s, nil
			}
		}
	}
	return metrics.DecodeSnapshot(data)
}

// scanner reads the snapshot shape from JSON. Every method returns false
// on anything outside the fast path; the caller then falls back.
type scanner struct {
	b []byte
	p int
}

func scanSnapshot(data []byte) (metrics.Snapshot, bool) {
	var s metrics.Snapshot
	sc := scanner{b: data}
	var seenAt, seenScope, seenCurrent, seenHistory bool
	ok := sc.object(func(key string) bool {
		switch key {
		case "at":
			if seenAt {
				return false
			}
			seenAt = true
			return sc.time(&s.At)
		case "scope":
			if seenScope {
				return false
			}
			seenScope = true
			return sc.scope(&s.Scope)
		case "current":
			if seenCurrent {
				return false
			}
			seenCurrent = true
			return sc.values(&s.Current)
		case "history":
			if seenHistory {
				return false
			}
			seenHistory = true
			return sc.history(&s.History)
		}
		return false
	})
	if !ok {
		return metrics.Snapshot{}, false
	}
	sc.ws()
	return s, sc.p == len(sc.b)
}

func (sc *scanner) ws() {
	for sc.p < len(sc.b) {
		switch sc.b[sc.p] {
		case ' ', '\t', '\n', '\r':
			sc.p++
		default:
			return
		}
	}
}

func (sc *scanner) consume(c byte) bool {
	sc.ws()
	if sc.p < len(sc.b) && sc.b[sc.p] == c {
		sc.p++
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling field for each key with the
// scanner positioned at the value.
func (sc *scanner) object(field func(key string) bool) bool {
	if !sc.consume('{') {
		return false
	}
	if sc.consume('}') {
		return true
	}
	for {
		key, ok := sc.key()
		if !ok || !sc.consume(':') || !field(key) {
			return false
		}
		if sc.consume(',') {
			continue
		}
		return sc.consume('}')
	}
}

// str reads a string without escapes, control characters or non-ASCII
// bytes (those take the slow path, which handles them exactly).
func (sc *scanner) str() (string, bool) {
	raw, ok := sc.rawStr()
	if !ok {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// rawStr returns the string token including its quotes.
func (sc *scanner) rawStr() ([]byte, bool) {
	sc.ws()
	if sc.p >= len(sc.b) || sc.b[sc.p] != '"' {
		return nil, false
	}
	start := sc.p
	for i := sc.p + 1; i < len(sc.b); i++ {
		c := sc.b[i]
		switch {
		case c == '"':
			sc.p = i + 1
			return sc.b[start:sc.p], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

func (sc *scanner) time(t *time.Time) bool {
	raw, ok := sc.rawStr()
	if !ok {
		return false
	}
	// The same parser encoding/json calls for a time.Time field.
	return t.UnmarshalJSON(raw) == nil
}

func (sc *scanner) scope(s *metrics.Scope) bool {
	seen := map[string]bool{}
	return sc.object(func(key string) bool {
		if seen[key] {
			return false
		}
		seen[key] = true
		v, ok := sc.str()
		switch key {
		case "model":
			s.Model = v
		case "instance":
			s.Instance = v
		default:
			return false
		}
		return ok
	})
}

// catalogIDs interns catalog ids: history repeats the same thirty keys
// sixty times, and a lookup keyed by string(bytes) does not allocate.
var catalogIDs = func() map[string]string {
	out := make(map[string]string, len(metrics.Catalog))
	for _, mt := range metrics.Catalog {
		out[mt.ID] = mt.ID
	}
	return out
}()

// key reads an object key, interning catalog ids.
func (sc *scanner) key() (string, bool) {
	raw, ok := sc.rawStr()
	if !ok {
		return "", false
	}
	if id, ok := catalogIDs[string(raw[1:len(raw)-1])]; ok {
		return id, true
	}
	return string(raw[1 : len(raw)-1]), true
}

func (sc *scanner) values(v *metrics.Values) bool {
	out := make(metrics.Values, 32)
	ok := sc.object(func(key string) bool {
		if _, dup := out[key]; dup {
			return false
		}
		x, ok := sc.number()
		out[key] = x
		return ok
	})
	*v = out
	return ok
}

func (sc *scanner) history(h *[]metrics.Point) bool {
	if !sc.consume('[') {
		return false
	}
	out := make([]metrics.Point, 0, 64)
	if sc.consume(']') {
		*h = out
		return true
	}
	for {
		var pt metrics.Point
		var seenAt, seenValues bool
		ok := sc.object(func(key string) bool {
			switch {
			case key == "at" && !seenAt:
				seenAt = true
				return sc.time(&pt.At)
			case key == "values" && !seenValues:
				seenValues = true
				return sc.values(&pt.Values)
			}
			return false
		})
		if !ok {
			return false
		}
		out = append(out, pt)
		if len(out) > metrics.MaxHistoryPoints {
			return false
		}
		if sc.consume(',') {
			continue
		}
		*h = out
		return sc.consume(']')
	}
}

// number reads a JSON number (strict grammar) as a float64.
func (sc *scanner) number() (float64, bool) {
	sc.ws()
	b, start := sc.b, sc.p
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	x, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, false
	}
	sc.p = i
	return x, true
}
