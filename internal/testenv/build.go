package testenv

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// GoBuild builds the Go package in dir (a path or import path, as for go
// build) with the build tags into a fresh temporary folder and returns the
// binary's path. CGO and the module cache are inherited from the test.
func GoBuild(t testing.TB, dir, name, tags string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, dir)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go %v: %v\n%s", cmd.Args[1:], err, b)
	}
	return out
}
