package diagnose

import (
	"testing"

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
