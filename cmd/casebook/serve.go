package main

import (
	"context"
	"errors"
	"io"
)

// serveCmd is wired in a later change.
func serveCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("serve: not available in this build yet")
}
