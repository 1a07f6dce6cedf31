package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminHelpAndMissingData: -h prints a command's usage instead of
// opening an archive, a missing data directory or archive is named with
// the flag that sets it, and a list creates nothing.
func TestAdminHelpAndMissingData(t *testing.T) {
	for _, cmd := range []string{"user", "token"} {
		for _, h := range []string{"-h", "--help", "help"} {
			t.Run(cmd+" "+h, func(t *testing.T) {
				t.Chdir(t.TempDir()) // no ./data here
				out, err := runCmd(t, "", cmd, h)
				if err != nil {
					t.Fatalf("error %v, want the usage", err)
				}
				if !strings.Contains(out, "usage: casebook "+cmd) || !strings.Contains(out, "-data") {
					t.Errorf("usage %q lacks the synopsis or the --data flag", out)
				}
				if _, err := os.Stat("data"); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("./data exists after %s %s", cmd, h)
				}
			})
		}
		t.Run(cmd+" list, no data directory", func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "data")
			_, err := runCmd(t, "", cmd, "list", "--data", missing)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--data") {
				t.Fatalf("error %v, want a usage error naming %s and --data", err, missing)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was created", missing)
			}
		})
		t.Run(cmd+" list, empty data directory", func(t *testing.T) {
			empty := t.TempDir()
			_, err := runCmd(t, "", cmd, "list", "--data", empty)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "casebook.db") || !strings.Contains(err.Error(), "--data") {
				t.Fatalf("error %v, want a usage error naming casebook.db and --data", err)
			}
			if left, _ := os.ReadDir(empty); len(left) != 0 {
				t.Errorf("a list created %v", left)
			}
		})
	}
}
