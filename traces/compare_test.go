package traces_test

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/traces"
	"github.com/casebook/casebook/traces/internal/tracegen"
)

func generated(t *testing.T, o tracegen.Options) traces.Summary {
	t.Helper()
	var buf bytes.Buffer
	if _, err := tracegen.WriteChrome(&buf, o); err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Parse(context.Background(), &buf, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return traces.Summarize(tr)
}

func TestCompare(t *testing.T) {
	base := generated(t, tracegen.Options{Seed: 1, PrefillSteps: -1, DecodeSteps: 6})
	tests := []struct {
		name     string
		target   tracegen.Options
		category traces.Category
		wantRel  float64 // expected relative change of the category, ±0.1
	}{
		{"same workload", tracegen.Options{Seed: 2, PrefillSteps: -1, DecodeSteps: 6}, traces.CategoryAttention, 0},
		{"attention doubled", tracegen.Options{Seed: 2, PrefillSteps: -1, DecodeSteps: 6, AttentionScale: 2}, traces.CategoryAttention, 1},
		{"more steps, same per step", tracegen.Options{Seed: 3, PrefillSteps: -1, DecodeSteps: 12}, traces.CategoryGEMM, 0},
		{"gemm unchanged when attention triples", tracegen.Options{Seed: 2, PrefillSteps: -1, DecodeSteps: 6, AttentionScale: 3}, traces.CategoryGEMM, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := traces.Compare(base, generated(t, tc.target))
			if c.Normalization != traces.PerStep {
				t.Errorf("normalization %s, want per_step", c.Normalization)
			}
			if len(c.Categories) != len(traces.Categories()) {
				t.Fatalf("%d categories", len(c.Categories))
			}
			d := c.Categories[indexOf(tc.category)]
			if d.Category != tc.category || d.Relative == nil {
				t.Fatalf("delta %+v", d)
			}
			if math.Abs(*d.Relative-tc.wantRel) > 0.1 {
				t.Errorf("%s relative change %.3f, want %.1f", tc.category, *d.Relative, tc.wantRel)
			}
			if d.Delta != d.Target-d.Base {
				t.Errorf("delta %v != %v - %v", d.Delta, d.Target, d.Base)
			}
		})
	}
}

func TestCompareEdges(t *testing.T) {
	us := time.Microsecond
	cats := func(times map[traces.Category]time.Duration) []traces.CategoryTime {
		var out []traces.CategoryTime
		for _, c := range traces.Categories() {
			out = append(out, traces.CategoryTime{Category: c, Time: times[c]})
		}
		return out
	}
	base := traces.Summary{Span: 100 * us, GPUTime: 50 * us, Categories: cats(map[traces.Category]time.Duration{traces.CategoryGEMM: 50 * us})}
	target := traces.Summary{Span: 200 * us, GPUTime: 120 * us, Categories: cats(map[traces.Category]time.Duration{traces.CategoryGEMM: 100 * us, traces.CategoryCommunication: 20 * us})}
	c := traces.Compare(base, target)
	if c.Normalization != traces.PerSpan {
		t.Fatalf("normalization %s, want per_span without steps", c.Normalization)
	}
	gemm := c.Categories[indexOf(traces.CategoryGEMM)]
	if gemm.Base != 500*time.Millisecond || gemm.Target != 500*time.Millisecond || gemm.Relative == nil || *gemm.Relative != 0 {
		t.Errorf("gemm %+v: busy half of the span in both", gemm)
	}
	comm := c.Categories[indexOf(traces.CategoryCommunication)]
	if comm.Relative != nil || comm.Delta != 100*time.Millisecond {
		t.Errorf("communication %+v: new category must have no relative change", comm)
	}
	// Empty summaries (e.g. decoded from JSON without categories) must not panic.
	_ = traces.Compare(traces.Summary{}, traces.Summary{})
	_ = traces.Evidences(traces.Summary{}, &traces.Summary{})
}

func TestEvidences(t *testing.T) {
	mk := func(idle float64, steps int, shares map[traces.Category]float64, counts map[traces.Category]int) traces.Summary {
		s := traces.Summary{Span: time.Second, GPUTime: time.Second, Steps: steps, Idle: traces.IdleStats{Share: idle, Gaps: 10, MeanGap: 20 * time.Microsecond}}
		for _, c := range traces.Categories() {
			s.Categories = append(s.Categories, traces.CategoryTime{
				Category: c, Share: shares[c], Count: counts[c],
				Time: time.Duration(shares[c] * float64(time.Second)),
			})
		}
		return s
	}
	healthy := mk(0.08, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.6, traces.CategoryAttention: 0.2, traces.CategoryCommunication: 0.1, traces.CategoryOther: 0.1}, map[traces.Category]int{traces.CategoryGEMM: 400})
	type want struct{ cause, key string }
	tests := []struct {
		name     string
		summary  traces.Summary
		baseline *traces.Summary
		want     []want
	}{
		{"healthy alone", healthy, nil, nil},
		{"healthy against itself", healthy, &healthy, nil},
		{"idle gaps", mk(0.4, 10, map[traces.Category]float64{traces.CategoryGEMM: 1}, nil), nil,
			[]want{{metrics.CauseHostOverhead, "trace.idle_share"}}},
		{"idle rise vs baseline", mk(0.2, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.6, traces.CategoryAttention: 0.2, traces.CategoryCommunication: 0.1, traces.CategoryOther: 0.1}, map[traces.Category]int{traces.CategoryGEMM: 400}), &healthy,
			[]want{{metrics.CauseHostOverhead, "trace.idle_share"}}},
		{"attention dominates", mk(0.05, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.4, traces.CategoryAttention: 0.6}, nil), nil,
			[]want{{metrics.CauseMemoryBandwidthBound, "trace.attention_share"}}},
		{"attention doubled vs baseline", mk(0.08, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.6, traces.CategoryAttention: 0.4, traces.CategoryCommunication: 0.1}, map[traces.Category]int{traces.CategoryGEMM: 400}), &healthy,
			[]want{{metrics.CauseMemoryBandwidthBound, "trace.attention_ratio"}}},
		{"communication heavy", mk(0.05, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.7, traces.CategoryCommunication: 0.3}, nil), nil,
			[]want{{metrics.CauseUnknown, "trace.communication_share"}}},
		{"communication doubled vs baseline", mk(0.08, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.6, traces.CategoryAttention: 0.2, traces.CategoryCommunication: 0.2}, map[traces.Category]int{traces.CategoryGEMM: 400}), &healthy,
			[]want{{metrics.CauseUnknown, "trace.communication_ratio"}}},
		{"memcpy in the step", mk(0.05, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.8, traces.CategoryMemory: 0.2}, nil), nil,
			[]want{{metrics.CauseHostOverhead, "trace.memcpy_share"}}},
		{"gemm slower at same count", mk(0.08, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.9, traces.CategoryAttention: 0.2, traces.CategoryCommunication: 0.1}, map[traces.Category]int{traces.CategoryGEMM: 410}), &healthy,
			[]want{{metrics.CauseGPUThrottling, "trace.gemm_ratio"}}},
		{"gemm slower because there are more", mk(0.08, 10, map[traces.Category]float64{traces.CategoryGEMM: 0.9, traces.CategoryAttention: 0.2, traces.CategoryCommunication: 0.1}, map[traces.Category]int{traces.CategoryGEMM: 800}), &healthy, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := traces.Evidences(tc.summary, tc.baseline)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Cause != w.cause || got[i].Key != w.key {
					t.Errorf("evidence %d: %s %s, want %s %s", i, got[i].Cause, got[i].Key, w.cause, w.key)
				}
				if got[i].Text == "" || got[i].Value == 0 {
					t.Errorf("evidence %d lacks text or value: %+v", i, got[i])
				}
				if _, ok := metrics.LookupCause(got[i].Cause); !ok {
					t.Errorf("evidence %d: cause %q is not a taxonomy id", i, got[i].Cause)
				}
			}
		})
	}
}

// TestEvidencesGenerated runs the whole path on generated traces: a
// healthy baseline, a long-context trace and a host-bound trace.
func TestEvidencesGenerated(t *testing.T) {
	base := generated(t, tracegen.Options{Seed: 1, PrefillSteps: -1, DecodeSteps: 6})
	long := generated(t, tracegen.Options{Seed: 2, PrefillSteps: -1, DecodeSteps: 6, AttentionScale: 2.5})
	host := generated(t, tracegen.Options{Seed: 3, PrefillSteps: -1, DecodeSteps: 6, HostGap: 3000})
	has := func(ev []traces.Evidence, cause string) bool {
		for _, e := range ev {
			if e.Cause == cause {
				return true
			}
		}
		return false
	}
	if ev := traces.Evidences(base, nil); has(ev, metrics.CauseHostOverhead) || has(ev, metrics.CauseMemoryBandwidthBound) {
		t.Errorf("healthy trace gave %+v", ev)
	}
	if ev := traces.Evidences(long, &base); !has(ev, metrics.CauseMemoryBandwidthBound) || has(ev, metrics.CauseHostOverhead) {
		t.Errorf("long-context trace gave %+v", ev)
	}
	if ev := traces.Evidences(host, &base); !has(ev, metrics.CauseHostOverhead) || has(ev, metrics.CauseMemoryBandwidthBound) {
		t.Errorf("host-bound trace gave %+v", ev)
	}
}
