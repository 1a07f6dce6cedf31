package main

import (
	"context"
	"errors"
	"io"
)

// evalCmd is wired in a later change.
func evalCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("eval: not available in this build yet")
}
