package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	cmd := exec.Command(goTool(), append(args, dir)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go %v: %v\n%s", cmd.Args[1:], err, b)
	}
	return out
}

// goTool is the go command of the toolchain that built the test, so the
// binary is built as the test was; "go" from PATH otherwise.
func goTool() string {
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
