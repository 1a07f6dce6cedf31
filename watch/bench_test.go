package watch

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// demoScopes are the demo cluster's scopes: two models of two instances.
var demoScopes = []metrics.Scope{
	{Model: "llama-8b"}, {Model: "llama-8b", Instance: "llama-8b-0"}, {Model: "llama-8b", Instance: "llama-8b-1"},
	{Model: "qwen-32b"}, {Model: "qwen-32b", Instance: "qwen-32b-0"}, {Model: "qwen-32b", Instance: "qwen-32b-1"},
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRound is one steady-state evaluation of the demo cluster (6
// scopes x every catalog metric), one round per simulated minute, so the
// hourly refits are included at their average rate (run at least 60
// rounds: -benchtime=120x). It reports the CPU time of a round and the
// share of one core that takes at the 1-minute interval. The warm-up
// reads two days instead of serve's seven to keep the setup short; a
// round's cost does not depend on it beyond the refit size.
func BenchmarkRound(b *testing.B) {
	src := &fakeSource{scopes: demoScopes, step: 1, stepped: map[string]bool{}}
	op := &fakeOpener{}
	clk := &clock{t: start.Add(2 * 24 * time.Hour)}
	w, err := New(Options{Source: src, Opener: op, History: 2 * 24 * time.Hour, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	w.Round(context.Background())
	warm := cpuTime() - cpu0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 = cpuTime()
	points := 0
	for i := 0; i < b.N; i++ {
		clk.advance(time.Minute)
		points += w.Round(context.Background()).Points
	}
	cpu := (cpuTime() - cpu0) / time.Duration(b.N)
	b.StopTimer()
	if want := len(demoScopes) * len(metrics.IDs()); points != want*b.N {
		b.Fatalf("observed %d points in %d rounds, want %d per round", points, b.N, want)
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/round")
	b.ReportMetric(100*cpu.Seconds()/time.Minute.Seconds(), "%core@1m")
	b.ReportMetric(warm.Seconds(), "warmup-2d-cpu-s")
	if len(op.list()) > 0 {
		b.Logf("the normal cycle opened %d incidents", len(op.list()))
	}
}
