package store_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

const crashEnv = "CASEBOOK_STORE_CRASH_DB"

// TestCrashDurability re-runs this test binary as a child that opens
// incidents in a loop and prints each fingerprint after its commit returns,
// kills it with SIGKILL mid-stream, and checks that every acknowledged
// incident is in the reopened archive.
func TestCrashDurability(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDurability$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	deadline := time.Now().Add(20 * time.Second)
	killed := false
	for sc.Scan() {
		if fp, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked = append(acked, fp)
		}
		if !killed && (len(acked) >= 150 || time.Now().After(deadline)) {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true // keep reading: lines already in the pipe were acknowledged too
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended by itself after %d acks: %v", len(acked), err)
	}
	if len(acked) == 0 {
		t.Fatal("child acknowledged nothing before it was killed")
	}
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	for _, fp := range acked {
		if _, err := s.IncidentByAlert(context.Background(), fp, t0); err != nil {
			t.Errorf("acknowledged incident %s lost: %v", fp, err)
		}
	}
	t.Logf("%d acknowledged incidents all present after SIGKILL", len(acked))
}

func crashChild(path string) {
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		fp := fmt.Sprintf("%016x", i)
		in := newIncident("crash "+fp, time.Duration(i)*time.Second, &store.Alert{Fingerprint: fp, StartsAt: t0, State: store.AlertFiring})
		if _, _, err := s.OpenIncident(ctx, in, newDiagnosis(metrics.CauseQueueBacklog, "v1")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "ack %s\n", fp) // os.Stdout is unbuffered
	}
}
