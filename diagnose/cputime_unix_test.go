//go:build unix

package diagnose

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used, user and system.
// Benchmarks report it beside wall time, because on a shared machine wall
// time also counts the time other processes held the core.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
