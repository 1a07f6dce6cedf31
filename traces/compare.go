package traces

import (
	"fmt"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Normalization says how Compare made two traces of different lengths
// comparable.
type Normalization string

// The normalizations Compare uses.
const (
	// PerStep divides times by the number of ProfilerStep#N annotations;
	// used when both traces have them.
	PerStep Normalization = "per_step"
	// PerSpan divides times by the GPU span, giving busy fractions of wall
	// time; used otherwise.
	PerSpan Normalization = "per_span"
)

// Comparison puts two summaries side by side.
type Comparison struct {
	Normalization Normalization `json:"normalization"`
	// Categories has one entry per category in display order.
	Categories []CategoryDelta `json:"categories"`
	// Total compares all GPU time the same way.
	Total CategoryDelta `json:"total"`
	// BaseIdleShare and TargetIdleShare are IdleStats.Share of each trace.
	BaseIdleShare   float64 `json:"base_idle_share"`
	TargetIdleShare float64 `json:"target_idle_share"`
}

// CategoryDelta compares one category. Base and Target are normalized
// (per step: nanoseconds per step; per span: nanoseconds of GPU time per
// second of span), Delta = Target - Base, and Relative = Delta / Base,
// which is nil when Base is zero. Shares are of each trace's GPU time.
type CategoryDelta struct {
	Category    Category      `json:"category"`
	Base        time.Duration `json:"base_ns"`
	Target      time.Duration `json:"target_ns"`
	Delta       time.Duration `json:"delta_ns"`
	Relative    *float64      `json:"relative,omitempty"`
	BaseShare   float64       `json:"base_share"`
	TargetShare float64       `json:"target_share"`
}

// Compare compares target against base, category by category.
func Compare(base, target Summary) Comparison {
	c := Comparison{Normalization: PerSpan, BaseIdleShare: base.Idle.Share, TargetIdleShare: target.Idle.Share}
	if base.Steps > 0 && target.Steps > 0 {
		c.Normalization = PerStep
	}
	norm := func(s Summary, d time.Duration) time.Duration {
		if c.Normalization == PerStep {
			return d / time.Duration(s.Steps)
		}
		if s.Span <= 0 {
			return 0
		}
		return time.Duration(float64(d) / float64(s.Span) * float64(time.Second))
	}
	delta := func(cat Category, bt, tt time.Duration, bs, ts float64) CategoryDelta {
		d := CategoryDelta{Category: cat, Base: norm(base, bt), Target: norm(target, tt), BaseShare: bs, TargetShare: ts}
		d.Delta = d.Target - d.Base
		if d.Base > 0 {
			r := float64(d.Delta) / float64(d.Base)
			d.Relative = &r
		}
		return d
	}
	for i, cat := range categories {
		var bt, tt CategoryTime
		if i < len(base.Categories) {
			bt = base.Categories[i]
		}
		if i < len(target.Categories) {
			tt = target.Categories[i]
		}
		c.Categories = append(c.Categories, delta(cat, bt.Time, tt.Time, bt.Share, tt.Share))
	}
	c.Total = delta("total", base.GPUTime, target.GPUTime, 1, 1)
	return c
}

// Evidence is one finding from a trace for the diagnosis: which root cause
// it supports, a metric-like key ("trace.<what>"), the value (and the
// baseline trace's value when one was given), and a sentence.
type Evidence struct {
	Cause    string  `json:"cause"`
	Key      string  `json:"key"`
	Value    float64 `json:"value"`
	Baseline float64 `json:"baseline,omitempty"`
	Text     string  `json:"text"`
}

// Evidence thresholds. Shares are fractions of GPU time (idle: of the GPU
// span); ratios compare normalized times with the baseline trace.
const (
	IdleShareHigh          = 0.25 // idle gaps: launch / CPU overhead
	IdleShareRise          = 0.10 // idle share up by 10 points vs baseline
	AttentionShareHigh     = 0.45 // attention dominates decode
	CommunicationShareHigh = 0.20 // collectives take a fifth of GPU time
	MemcpyShareHigh        = 0.10 // copies take a tenth of GPU time
	RiseRatio              = 1.5  // a category is up by half vs baseline
	SlowdownRatio          = 1.3  // GEMM time up by 30% at a similar count
)

// Evidences turns a summary, and optionally a baseline summary of a
// healthy period, into evidence for the diagnosis engine. Without a
// baseline it judges absolute shares; with one it also reports changes.
// The result is ordered by the checks below and may be empty.
//
// Communication findings point at a tensor-parallel or interconnect
// problem, which has no taxonomy entry; they carry metrics.CauseUnknown.
func Evidences(s Summary, baseline *Summary) []Evidence {
	var out []Evidence
	add := func(cause, key string, v, b float64, format string, args ...any) {
		out = append(out, Evidence{Cause: cause, Key: key, Value: v, Baseline: b, Text: fmt.Sprintf(format, args...)})
	}
	share := func(sum Summary, c Category) float64 {
		i := c.index()
		if i < len(sum.Categories) {
			return sum.Categories[i].Share
		}
		return 0
	}
	var cmp Comparison
	if baseline != nil {
		cmp = Compare(*baseline, s)
	}
	rel := func(c Category) (float64, bool) {
		if baseline == nil {
			return 0, false
		}
		d := cmp.Categories[c.index()]
		if d.Relative == nil {
			return 0, false
		}
		return 1 + *d.Relative, true
	}

	// Host overhead: the GPU waits between kernels.
	idle := s.Idle.Share
	switch {
	case baseline != nil && idle-baseline.Idle.Share >= IdleShareRise:
		add(metrics.CauseHostOverhead, "trace.idle_share", idle, baseline.Idle.Share,
			"GPU idle share rose from %.0f%% to %.0f%% of the trace span (mean gap %s): the GPU waits for the host to launch work.",
			100*baseline.Idle.Share, 100*idle, fmtDur(s.Idle.MeanGap))
	case idle >= IdleShareHigh:
		add(metrics.CauseHostOverhead, "trace.idle_share", idle, 0,
			"The GPU is idle %.0f%% of the trace span in %d gaps (mean %s, %s of it in launch-sized gaps under %s): kernel-launch or CPU-side overhead, not GPU work, bounds the step.",
			100*idle, s.Idle.Gaps, fmtDur(s.Idle.MeanGap), fmtDur(s.Idle.SmallGapTime), fmtDur(SmallGap))
	}

	// Attention: KV reads grow with context length and are bandwidth bound.
	att := share(s, CategoryAttention)
	if r, ok := rel(CategoryAttention); ok && r >= RiseRatio {
		add(metrics.CauseMemoryBandwidthBound, "trace.attention_ratio", r, 1,
			"Attention time is %.1fx the baseline (%s, share %.0f%% -> %.0f%%): longer contexts or lower HBM bandwidth make every decode step slower.",
			r, cmp.Normalization, 100*share(*baseline, CategoryAttention), 100*att)
	} else if att >= AttentionShareHigh {
		add(metrics.CauseMemoryBandwidthBound, "trace.attention_share", att, 0,
			"Attention and KV writes take %.0f%% of GPU time: decode is bound by reading the KV cache (long contexts or memory bandwidth).",
			100*att)
	}

	// Communication: tensor-parallel all-reduce.
	comm := share(s, CategoryCommunication)
	if r, ok := rel(CategoryCommunication); ok && r >= RiseRatio {
		add(metrics.CauseUnknown, "trace.communication_ratio", r, 1,
			"Collective communication time is %.1fx the baseline (share %.0f%%): a tensor-parallel or interconnect (NVLink/PCIe) problem.",
			r, 100*comm)
	} else if comm >= CommunicationShareHigh {
		add(metrics.CauseUnknown, "trace.communication_share", comm, 0,
			"Collective communication takes %.0f%% of GPU time: tensor-parallel all-reduce or the interconnect limits the step.",
			100*comm)
	}

	// Copies: host<->device transfers inside the step are a host-side stall.
	if mc := share(s, CategoryMemory); mc >= MemcpyShareHigh {
		add(metrics.CauseHostOverhead, "trace.memcpy_share", mc, 0,
			"Memcpy and memset take %.0f%% of GPU time: host-device transfers or synchronisation sit inside the step.",
			100*mc)
	}

	// Uniformly slower GEMMs at the same count: clocks or a degraded GPU.
	if baseline != nil && cmp.Normalization == PerStep {
		bc := float64(count(*baseline, CategoryGEMM)) / float64(baseline.Steps)
		tc := float64(count(s, CategoryGEMM)) / float64(s.Steps)
		if r, ok := rel(CategoryGEMM); ok && r >= SlowdownRatio && bc > 0 && tc/bc > 0.9 && tc/bc < 1.1 {
			add(metrics.CauseGPUThrottling, "trace.gemm_ratio", r, 1,
				"GEMM kernels take %.1fx their baseline time at the same count per step: the GPU runs slower (clocks throttled or a degraded device).",
				r)
		}
	}
	return out
}

func count(s Summary, c Category) int {
	if i := c.index(); i < len(s.Categories) {
		return s.Categories[i].Count
	}
	return 0
}
