package store

import "errors"

// ErrNotFound is returned when the requested row does not exist (or, for a
// share link, is expired or revoked).
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a write would break a uniqueness or
// consistency rule, such as a second cause with the same id.
var ErrConflict = errors.New("conflict")

// ErrInvalid is returned for input the store refuses to save, such as an
// empty note or an unknown verdict. The wrapped message says what is wrong.
var ErrInvalid = errors.New("invalid input")
