package store

import (
	"errors"
	"fmt"
)

// ErrNotFound is returned when the requested row does not exist (or, for a
// share link, is expired or revoked).
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write would break a uniqueness or
// consistency rule, such as a second cause with the same id.
var ErrConflict = errors.New("conflict")

// ErrInvalid is returned for input the store refuses to save, such as an
// empty note or an unknown verdict. The error is an *InvalidError, whose
// Reason says what is wrong.
var ErrInvalid = errors.New("invalid input")

// InvalidError is input the store refuses. Reason is written for the
// person who sent it; errors.Is(err, ErrInvalid) holds.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Reason }

// Is makes an *InvalidError match ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, a...)}
}
