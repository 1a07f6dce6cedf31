package incident

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestCapturesShareOneCapturePerScopeAndSecond(t *testing.T) {
	var c captures
	var calls atomic.Int32
	release := make(chan struct{})
	capture := func(ctx context.Context) evidence {
		calls.Add(1)
		<-release
		return evidence{snap: metrics.Snapshot{Current: metrics.Values{metrics.TTFT: 42}}}
	}
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	at := now.Add(-10 * time.Second)
	llama, qwen := metrics.Scope{Model: "llama"}, metrics.Scope{Model: "qwen"}

	var wg sync.WaitGroup
	results := make([]evidence, 50)
	for i := range results {
		scope := llama
		if i%10 == 9 {
			scope = qwen
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = c.get(context.Background(), scope, at, now, capture)
		}()
	}
	time.Sleep(50 * time.Millisecond) // let every caller reach the flight
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d captures for 50 incidents on 2 scopes in one second, want 2", n)
	}
	for i, ev := range results {
		if v, _ := ev.snap.Current.Get(metrics.TTFT); v != 42 {
			t.Fatalf("incident %d got %v", i, ev.snap.Current)
		}
	}

	// Another second, or the same one after the reuse period, captures anew.
	c.get(context.Background(), llama, at.Add(time.Second), now, capture)
	c.get(context.Background(), llama, at, now.Add(captureReuse+time.Second), capture)
	if n := calls.Load(); n != 4 {
		t.Fatalf("%d captures, want 4", n)
	}
}

func TestCapturesOutliveTheFirstRequest(t *testing.T) {
	var c captures
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var seen error
	capture := func(cctx context.Context) evidence {
		close(started)
		time.Sleep(20 * time.Millisecond)
		seen = cctx.Err()
		return evidence{}
	}
	now := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.get(ctx, metrics.Scope{Model: "m"}, now, now, capture)
	}()
	<-started
	cancel() // the first webhook's client goes away
	<-done
	if seen != nil {
		t.Fatalf("the shared capture saw %v: one client's cancellation would fail every incident waiting on it", seen)
	}
}
