package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Scope names what a snapshot or view is about: a model, optionally one
// instance (engine replica) of it.
type Scope struct {
	Model    string `json:"model"`
	Instance string `json:"instance,omitempty"`
}

// String renders the scope as "model" or "model/instance".
func (s Scope) String() string {
	if s.Instance == "" {
		return s.Model
	}
	return s.Model + "/" + s.Instance
}

// Values maps catalog ids to values. A missing id means the value is unknown.
type Values map[string]float64

// Get returns the value of id and whether it is present and finite.
func (v Values) Get(id string) (float64, bool) {
	x, ok := v[id]
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false
	}
	return x, true
}

// Point is one instant of history.
type Point struct {
	At     time.Time `json:"at"`
	Values Values    `json:"values"`
}

// Snapshot is the state of one scope at one instant plus recent history for
// a baseline. Its JSON shape is the contract in DESIGN.md.
type Snapshot struct {
	At      time.Time `json:"at"`
	Scope   Scope     `json:"scope"`
	Current Values    `json:"current"`
	History []Point   `json:"history,omitempty"`
	// Engine is the engine the scope runs ("vllm", "sglang", ...), when
	// known; an addition to the contract that readers may ignore.
	Engine Engine `json:"engine,omitempty"`
	// Absent maps catalog ids the source cannot provide for this scope to
	// why (its engine exports no equivalent); rules that need them stand
	// down with that reason.
	Absent map[string]string `json:"absent,omitempty"`
}

// Case is a labelled snapshot: one line of a corpus.
type Case struct {
	Snapshot
	Label     string   `json:"label"`
	Secondary []string `json:"secondary,omitempty"`
}

// Limits on decoded snapshots; a body beyond them is rejected, not truncated.
const (
	MaxSnapshotBytes = 4 << 20
	MaxHistoryPoints = 10080 // a week at one point a minute
	MaxNameLength    = 256
)

// ErrInvalid marks a snapshot that decoded but breaks the contract.
var ErrInvalid = errors.New("invalid snapshot")

// DecodeSnapshot parses and validates one snapshot. Unknown metric ids and
// unknown fields are dropped; values out of a metric's range are errors.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	var s Snapshot
	if err := decodeStrict(data, &s); err != nil {
		return Snapshot{}, err
	}
	if err := s.Normalize(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// DecodeCase parses and validates one labelled case.
func DecodeCase(data []byte) (Case, error) {
	var c Case
	if err := decodeStrict(data, &c); err != nil {
		return Case{}, err
	}
	if err := c.Normalize(); err != nil {
		return Case{}, err
	}
	if c.Label == "" {
		return Case{}, fmt.Errorf("%w: label is missing", ErrInvalid)
	}
	if len(c.Label) > MaxNameLength {
		return Case{}, fmt.Errorf("%w: label is longer than %d bytes", ErrInvalid, MaxNameLength)
	}
	return c, nil
}

func decodeStrict(data []byte, v any) error {
	if len(data) > MaxSnapshotBytes {
		return fmt.Errorf("%w: %d bytes is over the %d-byte limit", ErrInvalid, len(data), MaxSnapshotBytes)
	}
	if err := CheckJSONDepth(data, 8); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, jsonErrorText(err))
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the JSON object", ErrInvalid)
	}
	return nil
}

// CheckJSONDepth rejects JSON nested deeper than max levels before it
// reaches a decoder (encoding/json would recurse ten thousand levels deep).
func CheckJSONDepth(data []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return fmt.Errorf("%w: JSON nested deeper than %d levels", ErrInvalid, max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

func jsonErrorText(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "malformed JSON: the input ends before the object is complete"
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q should be %s, not %s", typ.Field, typ.Type, typ.Value)
	default:
		return err.Error()
	}
}

// Normalize drops unknown ids, sorts history by time and checks every value
// against the catalog. It reports every problem it finds, not just the first.
func (s *Snapshot) Normalize() error {
	var problems []string
	if s.At.IsZero() {
		problems = append(problems, `"at" is missing`)
	}
	if s.Scope.Model == "" {
		problems = append(problems, `"scope.model" is missing`)
	}
	if len(s.Scope.Model) > MaxNameLength || len(s.Scope.Instance) > MaxNameLength {
		problems = append(problems, fmt.Sprintf("scope names are limited to %d bytes", MaxNameLength))
	}
	if s.Engine != "" {
		if _, ok := LookupEngine(s.Engine); !ok {
			problems = append(problems, fmt.Sprintf("engine %q is not one the catalog knows", s.Engine))
		}
	}
	if len(s.Absent) > len(Catalog) {
		problems = append(problems, fmt.Sprintf("absent names %d metrics, the catalog has %d", len(s.Absent), len(Catalog)))
	}
	for id, why := range s.Absent {
		if _, ok := Lookup(id); !ok {
			delete(s.Absent, id)
		} else if len(why) > 1024 {
			problems = append(problems, "absent."+id+" is longer than 1024 bytes")
		}
	}
	if len(s.History) > MaxHistoryPoints {
		problems = append(problems, fmt.Sprintf("history has %d points, the limit is %d", len(s.History), MaxHistoryPoints))
	}
	problems = append(problems, s.Current.normalize("current")...)
	for i := range s.History {
		problems = append(problems, s.History[i].Values.normalize(fmt.Sprintf("history[%d]", i))...)
	}
	sort.SliceStable(s.History, func(i, j int) bool { return s.History[i].At.Before(s.History[j].At) })
	if len(problems) > 0 {
		if len(problems) > 5 {
			problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
		}
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}

func (v Values) normalize(where string) []string {
	var problems []string
	for id, x := range v {
		m, ok := Lookup(id)
		if !ok {
			delete(v, id) // unknown fields are ignored by contract
			continue
		}
		if msg := m.Check(x); msg != "" {
			problems = append(problems, where+"."+id+" "+msg)
		}
	}
	sort.Strings(problems)
	return problems
}

// Check returns "" when x is a valid value of m, or what is wrong with it.
func (m Metric) Check(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "is not a finite number"
	case x < m.Min:
		return fmt.Sprintf("is %g, below its minimum %g", x, m.Min)
	case m.Max > 0 && x > m.Max:
		return fmt.Sprintf("is %g, above its maximum %g (%s)", x, m.Max, m.Unit)
	}
	return ""
}

// Series returns the history of one metric (present values only), oldest first.
func (s Snapshot) Series(id string) []float64 {
	out := make([]float64, 0, len(s.History))
	for _, p := range s.History {
		if x, ok := p.Values.Get(id); ok {
			out = append(out, x)
		}
	}
	return out
}
