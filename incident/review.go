package incident

import (
	"context"
	"strings"
	"unicode"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// FieldError is input the service refuses, naming the field at fault.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Review stores an engineer's verdict on an incident's diagnosis and
// teaches the diagnoser the case at once. A correct verdict names no
// cause; a wrong one names either an existing cause (TrueCause) or a new
// one (NewCause), not both. A new cause whose name is that of an existing
// cause, in any spelling of case, spaces and punctuation, is that cause.
func (s *Service) Review(ctx context.Context, l store.NewLabel) (store.Label, error) {
	l.TrueCause, l.NewCause = strings.TrimSpace(l.TrueCause), strings.TrimSpace(l.NewCause)
	if l.Verdict == store.VerdictCorrect {
		if l.NewCause != "" {
			return store.Label{}, &FieldError{"new_cause", "a correct verdict names no new cause"}
		}
	}
	if l.TrueCause != "" && l.NewCause != "" {
		return store.Label{}, &FieldError{"new_cause", "give either true_cause (an existing cause) or new_cause, not both"}
	}
	if l.NewCause != "" {
		if id, ok := s.existingCause(ctx, l.NewCause); ok {
			l.TrueCause, l.NewCause = id, ""
		}
	}
	if l.At.IsZero() {
		l.At = s.o.Now()
	}
	label, err := s.o.Archive.AddLabel(ctx, l)
	if err != nil {
		return store.Label{}, err
	}
	s.learnIncident(ctx, l.IncidentID)
	return label, nil
}

// existingCause finds the cause a new cause's name already names: by id,
// or by title with case, spaces and punctuation ignored.
func (s *Service) existingCause(ctx context.Context, name string) (string, bool) {
	causes, err := s.o.Archive.Causes(ctx)
	if err != nil {
		return "", false // the store then creates or reuses by id
	}
	key := causeKey(name)
	for _, c := range causes {
		if causeKey(c.ID) == key || causeKey(c.Title) == key {
			return c.ID, true
		}
	}
	return "", false
}

// causeKey folds a cause name to lower-case letters and digits.
func causeKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// AddNote appends a note to an incident.
func (s *Service) AddNote(ctx context.Context, n store.NewNote) (store.Note, error) {
	if n.At.IsZero() {
		n.At = s.o.Now()
	}
	return s.o.Archive.AddNote(ctx, n)
}

// CauseTitles returns a title lookup that knows engineer-created causes
// as well as the taxonomy.
func (s *Service) CauseTitles(ctx context.Context) func(string) string {
	titles := map[string]string{}
	if cs, err := s.o.Archive.Causes(ctx); err == nil {
		for _, c := range cs {
			titles[c.ID] = c.Title
		}
	}
	return func(id string) string {
		if t, ok := titles[id]; ok {
			return t
		}
		return metrics.CauseTitle(id)
	}
}
