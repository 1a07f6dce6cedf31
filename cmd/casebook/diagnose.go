package main

import (
	"context"
	"errors"
	"io"
)

// diagnoseCmd is wired in a later change.
func diagnoseCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("diagnose: not available in this build yet")
}
