package diagnose

import (
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// BenchmarkDiagnose measures one diagnosis of a snapshot with 60 history
// points (the snapshot convention). The bar is 200 µs per op.
func BenchmarkDiagnose(b *testing.B) {
	e := New(Options{})
	snaps := []m.Snapshot{
		synth(1, faults[m.CauseKVCacheEviction]),
		synth(2, faults[m.CauseQueueBacklog]),
		synth(3, nil),
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Diagnose(snaps[i%len(snaps)])
	}
}

// BenchmarkDeviations measures the baseline alone.
func BenchmarkDeviations(b *testing.B) {
	s := synth(1, faults[m.CauseKVCacheEviction])
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Deviations(s)
	}
}

// benchSigs makes n signatures: clustered (twelve causes, each a centre
// with noise, as labelled incidents are) or uniform (no structure, the
// worst case for the scan's early abandonment).
func benchSigs(n int, clustered bool, rng *rand.Rand) []Signature {
	var centres [12]Signature
	for c := range centres {
		for j := range centres[c] {
			centres[c][j] = float32(rng.Float64()*1.2 - 0.6)
		}
	}
	out := make([]Signature, n)
	for i := range out {
		c := &centres[rng.Intn(len(centres))]
		for j := 0; j < SigDim; j++ {
			x := rng.Float64()*2 - 1
			if clustered {
				x = float64(c[j]) + rng.NormFloat64()*0.15
			}
			out[i][j] = clip1(x)
		}
	}
	return out
}

// BenchmarkNearest1M measures one top-10 query over a million stored
// cases on one core. The scan reads SigDim bytes a case (32 MB a query);
// SetBytes makes the benchmark print that rate as MB/s, to compare with
// the memory bandwidth of one core (~10-20 GB/s).
func BenchmarkNearest1M(b *testing.B) {
	const n = 1_000_000
	for _, clustered := range []bool{true, false} {
		name := "uniform"
		if clustered {
			name = "clustered"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			kb := NewKnowledgeBase()
			kb.vecs = make([]uint64, 0, n*sigWords)
			for _, s := range benchSigs(n, clustered, rng) {
				c := s.encode()
				kb.vecs = append(kb.vecs, c[:]...)
			}
			kb.meta = make([]caseMeta, n)
			kb.causes = []string{"c"}
			queries := benchSigs(64, clustered, rng)
			b.SetBytes(int64(len(kb.vecs) * 8))
			b.ReportAllocs()
			runtime.GC()
			cpu0, cpuOK := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got := kb.Match(queries[i%len(queries)], 10, time.Time{}); len(got.Neighbours) != 10 {
					b.Fatalf("%d neighbours", len(got.Neighbours))
				}
			}
			b.StopTimer()
			if cpu1, ok := processCPU(); ok && cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			}
			b.ReportMetric(float64(len(kb.vecs)*8)/float64(n), "bytes-scanned/case")
		})
	}
}

// BenchmarkSignature measures computing a signature from a snapshot with
// 60 history points (what Add pays per case).
func BenchmarkSignature(b *testing.B) {
	s := synth(1, faults[m.CauseKVCacheEviction])
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		NewSignature(s)
	}
}

// BenchmarkDiagnoseWithCases measures a diagnosis that also matches
// against a knowledge base of 10,000 and of 100,000 cases. The first
// diagnosis after the cases change fits the learned classifier; it is
// reported apart, as ms-first, and the rest as ns/op.
//
//	go test -tags sqlite_fts5 -run '^$' -bench DiagnoseWithCases -benchtime 2000x ./diagnose/
func BenchmarkDiagnoseWithCases(b *testing.B) {
	causes := make([]string, 0, len(faults))
	for c := range faults {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("cases=%d", n), func(b *testing.B) {
			kb := NewKnowledgeBase()
			for i := 0; i < n; i++ {
				c := causes[i%len(causes)]
				if err := kb.Add(LabelledCase{ID: fmt.Sprint(i), Snapshot: synth(int64(i), faults[c]), Cause: c, Review: Confirmed}); err != nil {
					b.Fatal(err)
				}
			}
			e := New(Options{Cases: kb})
			snaps := []m.Snapshot{synth(1, faults[m.CauseKVCacheEviction]), synth(2, faults[m.CauseQueueBacklog]), synth(3, nil)}
			first := time.Now()
			if d := e.Diagnose(snaps[0]); d.RootCause == "" {
				b.Fatal("no root cause")
			}
			firstTook := time.Since(first)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.Diagnose(snaps[i%len(snaps)])
			}
			b.ReportMetric(float64(firstTook.Microseconds())/1000, "ms-first")
		})
	}
}
