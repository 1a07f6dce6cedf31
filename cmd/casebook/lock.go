package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is the file a serving console holds locked in its data
// directory, so that restore can tell it is running.
const lockFile = "casebook.lock"

// errLocked is returned when another process holds the data directory.
var errLocked = errors.New("another casebook process is serving this data directory")

// lockData takes the data directory's lock without waiting; release
// drops it. The lock goes with the process, even on SIGKILL.
func lockData(dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, errLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
