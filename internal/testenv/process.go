package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is a real server started for one test.
type Process struct {
	Name string // the component, e.g. "prometheus"
	URL  string // http://127.0.0.1:PORT
	Dir  string // its private working directory
	cmd  *exec.Cmd
	log  *tailBuffer
	done chan struct{}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// LookBinary finds a component's binary or fails the test naming the
// Debian package that provides it.
func LookBinary(t testing.TB, bin, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("testenv: %s not found: install the Debian package %q (make test does this when run as root)", bin, pkg)
	}
	return p
}

// Start runs bin with args in a fresh directory, waits until readyPath
// answers 200 on the process's URL, and stops it when the test ends.
func Start(t testing.TB, name, bin string, port int, readyPath string, args ...string) *Process {
	t.Helper()
	return StartReady(t, name, bin, port, readyPath, 60*time.Second, args...)
}

// StartReady is Start with the time the process has to become ready, for
// servers that prepare data before they answer (Casebook's demo back-fills
// a week of history).
func StartReady(t testing.TB, name, bin string, port int, readyPath string, limit time.Duration, args ...string) *Process {
	t.Helper()
	dir := t.TempDir()
	p := &Process{
		Name: name,
		URL:  fmt.Sprintf("http://127.0.0.1:%d", port),
		Dir:  dir,
		log:  &tailBuffer{max: 64 << 10},
		done: make(chan struct{}),
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout = p.log
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("testenv: start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("testenv: last log lines of %s:\n%s", name, p.LastLines(30))
		}
	})
	if err := p.waitReady(readyPath, limit); err != nil {
		t.Fatalf("testenv: %s did not become ready: %v\nlast log lines of %s:\n%s", name, err, name, p.LastLines(30))
	}
	return p
}

func (p *Process) waitReady(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", p.Name, p.cmd.ProcessState)
		default:
		}
		resp, err := client.Get(p.URL + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("after %v: %v", limit, lastErr)
}

// Alive reports whether the process is still running.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after five seconds.
func (p *Process) Stop() {
	if !p.Alive() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill ends the process at once with SIGKILL, as a crash or an OOM kill
// would, and waits until it is gone.
func (p *Process) Kill() {
	if !p.Alive() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// LastLines returns the last n lines the process logged.
func (p *Process) LastLines(n int) string {
	return lastLines(p.log.String(), n)
}

// Fatalf fails the test naming the component and showing its last log
// lines, and whether it is still running.
func (p *Process) Fatalf(t testing.TB, format string, args ...any) {
	t.Helper()
	state := "running"
	if !p.Alive() {
		state = fmt.Sprintf("exited: %v", p.cmd.ProcessState)
	}
	t.Fatalf("%s (%s): %s\nlast log lines of %s:\n%s", p.Name, state, fmt.Sprintf(format, args...), p.Name, p.LastLines(20))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WriteFile writes a file into the process directory before start; it is
// also handy for configs that name their own paths.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("testenv: write %s: %v", path, err)
	}
	return path
}

// WaitFor polls cond until it returns true or the timeout passes, failing
// the test with what it was waiting for.
func WaitFor(t testing.TB, ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			t.Fatalf("testenv: waiting for %s: %v", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Fatalf("testenv: timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
