package telemetry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const tierCrashEnv = "CASEBOOK_TIER_CRASH_DIR"

// tierCrashTotal is the seconds of raw data the crash test writes: more
// than the raw tier's block range, so the head is compacted into a block
// while the child may be killed.
const tierCrashTotal = 3*3600 + 20*60

// TestTierCrashMidWrite re-runs this test binary as a child that writes
// raw data in ten-minute chunks, runs the downsampler and compacts every
// tier after each chunk, printing what it has committed. The parent kills
// it with SIGKILL at random moments (some right as a compaction starts),
// restarts it until it finishes, and then checks that every acknowledged
// raw sample is there and that the 1m and 1h tiers equal those of one
// uninterrupted run: nothing lost, nothing counted twice.
func TestTierCrashMidWrite(t *testing.T) {
	if dir := os.Getenv(tierCrashEnv); dir != "" {
		tierCrashChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	acked, kills, finished := -1, 0, false
	for run := 0; run < 40 && !finished; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTierCrashMidWrite$")
		cmd.Env = append(os.Environ(), tierCrashEnv+"="+dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child dies a few milliseconds after its k-th acknowledgement
		// (mid-write or mid-downsampling) or after its k-th "compacting"
		// (mid-compaction), alternately.
		var timer *time.Timer
		kill := func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
		trigger := "ack "
		if run%2 == 1 {
			trigger = "compacting"
		}
		k := 1 + rng.IntN(4)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, trigger) {
				if k--; k == 0 && timer == nil {
					timer = time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, kill)
				}
			}
			switch {
			case strings.HasPrefix(line, "ack "):
				n, err := strconv.Atoi(strings.TrimPrefix(line, "ack "))
				if err != nil {
					t.Fatalf("child wrote %q", line)
				}
				acked = max(acked, n)
			case strings.HasPrefix(line, "resume "):
				// The reopened raw tier holds every acknowledged second.
				n, err := strconv.Atoi(strings.TrimPrefix(line, "resume "))
				if err != nil {
					t.Fatalf("child wrote %q", line)
				}
				if n <= acked {
					t.Errorf("run %d resumes at second %d, but %d was acknowledged: acknowledged data lost", run, n, acked)
				}
			case line == "done":
				finished = true
			}
		}
		err = cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		var exit *exec.ExitError
		switch {
		case err == nil:
			finished = true
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			kills++
		default:
			t.Fatalf("child run %d failed: %v", run, err)
		}
	}
	if !finished {
		t.Fatalf("the child did not finish in 40 runs (%d kills)", kills)
	}
	if kills < 3 {
		t.Fatalf("only %d kills: the test did not exercise crashes", kills)
	}
	t.Logf("%d runs killed with SIGKILL; last acknowledged second %d", kills, acked)

	end := tierBase.Add(tierCrashTotal * time.Second)
	now := end
	got := openTestTiers(t, dir, TierOptions{}, &now)
	defer got.close()
	// Every acknowledged second of the counter is in the raw tier.
	raw := readSeries(t, got.raw(), counterLabels, tierBase.Add(-time.Second), end)
	if len(raw) != tierCrashTotal {
		t.Errorf("raw tier holds %d counter samples, want %d (acknowledged up to %d)", len(raw), tierCrashTotal, acked)
	}
	refNow := end
	ref := openTestTiers(t, t.TempDir(), TierOptions{}, &refNow)
	defer ref.close()
	var src rawSource
	src.appendRange(t, ref.raw(), 0, tierCrashTotal)
	if err := ref.ds.catchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	compareTiers(t, got, ref)
}

// tierCrashChild resumes after the last second the raw tier holds and
// writes the rest, reporting progress on stdout.
func tierCrashChild(t *testing.T, dir string) {
	now := tierBase
	ts := openTestTiers(t, dir, TierOptions{}, &now)
	defer ts.close()
	have := readSeries(t, ts.raw(), counterLabels, tierBase.Add(-time.Second), tierBase.Add(tierCrashTotal*time.Second))
	from := 0
	if len(have) > 0 {
		from = int((have[len(have)-1].t-tierBase.UnixMilli())/1000) + 1
	}
	fmt.Printf("resume %d\n", from)
	var src rawSource
	for i := 0; i < from; i++ {
		src.advance(i)
	}
	ctx := context.Background()
	// A restarted process catches up at once, before new data arrives: a
	// kill during the last chunk's downsampling leaves aggregates to redo
	// even when no raw data is left to write.
	now = tierBase.Add(time.Duration(from) * time.Second)
	if err := ts.ds.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	for i := from; i < tierCrashTotal; {
		next := min(tierCrashTotal, (i/600+1)*600)
		src.appendRange(t, ts.raw(), i, next)
		fmt.Printf("ack %d\n", next-1)
		now = tierBase.Add(time.Duration(next) * time.Second)
		if err := ts.ds.catchUp(ctx); err != nil {
			t.Fatal(err)
		}
		fmt.Println("compacting")
		for _, tier := range ts.tiers {
			if err := tier.db.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
		i = next
	}
	fmt.Println("done")
}
