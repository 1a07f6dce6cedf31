package main

import (
	"context"
	"errors"
	"io"
)

// simulateCmd is wired in a later change.
func simulateCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("simulate: not available in this build yet")
}
