package traces_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/casebook/casebook/traces"
	"github.com/casebook/casebook/traces/internal/tracegen"
)

// BenchmarkParse200MB parses and summarises a generated 200 MB Chrome
// trace (decode steps of an 8-layer TP=2 model). Besides ns/op and MB/s it
// reports peak-heap-MB, the highest runtime HeapInuse sampled every 5 ms
// during the operation, total-alloc-MB per operation and cpu-s/op, the
// process CPU time per operation (all goroutines, GC included). Run with
//
//	go test -tags sqlite_fts5 ./traces -run '^$' -bench Parse200MB -benchtime 3x
func BenchmarkParse200MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.pt.trace.json")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	size, err := tracegen.WriteChrome(f, tracegen.Options{Seed: 7, TargetBytes: 200 << 20})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peakHeap := samplePeakHeap()

	cpu0 := cpuTime()
	b.ResetTimer()
	var acts int
	for i := 0; i < b.N; i++ {
		tr, err := traces.ParseFile(context.Background(), path, traces.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s := traces.Summarize(tr)
		acts = s.Activities
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	peak := peakHeap()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "total-alloc-MB/op")
	b.ReportMetric(float64(acts), "activities")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.Logf("file %.1f MB, %d GPU activities, peak HeapInuse %.1f MB, process CPU %.2f s/op",
		float64(size)/(1<<20), acts, float64(peak)/(1<<20), cpu.Seconds()/float64(b.N))
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// shows the work done independently of how long the benchmark waited for
// a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseFixture parses and summarises the small committed fixture
// (370 KB, 444 activities): the cost of a typical single-step upload.
func BenchmarkParseFixture(b *testing.B) {
	data, err := os.ReadFile(fixtureJSON)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tr, err := traces.Parse(context.Background(), bytes.NewReader(data), traces.Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = traces.Summarize(tr)
	}
}

// samplePeakHeap samples HeapInuse every 5 ms until the returned function
// is called, which stops the sampling and returns the highest value seen.
func samplePeakHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	return func() uint64 {
		close(stop)
		wg.Wait()
		return peak.Load()
	}
}
