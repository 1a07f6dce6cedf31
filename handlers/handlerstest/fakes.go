package handlerstest

import (
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/metrics"
)

// Diagnoser returns a fixed diagnosis and remembers the snapshots it saw.
type Diagnoser struct {
	mu        sync.Mutex
	Result    diagnose.Diagnosis
	Snapshots []metrics.Snapshot
}

// Diagnose implements handlers.Diagnoser.
func (d *Diagnoser) Diagnose(s metrics.Snapshot) diagnose.Diagnosis {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Snapshots = append(d.Snapshots, s)
	return d.Result
}

// Calls returns how many snapshots were diagnosed.
func (d *Diagnoser) Calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.Snapshots)
}

// EvictionDiagnosis is a realistic diagnosis of a KV-cache eviction storm.
func EvictionDiagnosis() diagnose.Diagnosis {
	return diagnose.Diagnosis{
		RootCause:  metrics.CauseKVCacheEviction,
		Title:      metrics.CauseTitle(metrics.CauseKVCacheEviction),
		Confidence: 0.86,
		Severity:   diagnose.SeverityCritical,
		Candidates: []diagnose.Candidate{
			{RootCause: metrics.CauseKVCacheEviction, Score: 0.86, Source: diagnose.SourceRule},
			{RootCause: metrics.CauseQueueBacklog, Score: 0.41, Source: diagnose.SourceBaseline},
			{RootCause: metrics.CausePrefixCacheMiss, Score: 0.22, Source: diagnose.SourceMatch},
		},
		Evidence: []diagnose.Evidence{
			{Metric: metrics.KVCacheHitRate, Value: 0.35, BaselineMean: 0.82, Z: -31.2, Text: "Prefix hit rate fell from 82% to 35%."},
			{Metric: metrics.KVCacheUsage, Value: 0.985, BaselineMean: 0.62, Z: 9.1, Text: "KV cache is full."},
			{Metric: metrics.PreemptionRate, Value: 3.45, BaselineMean: 0.05, Z: 22.7, Text: "Sequences are preempted and recomputed."},
			{Metric: metrics.TTFT, Value: 1390, BaselineMean: 185, Z: 18.4, Text: "TTFT is 100x TPOT (rule: > 3x)."},
		},
		CausalChain: []string{metrics.KVCacheUsage, metrics.PreemptionRate, metrics.KVCacheHitRate, metrics.TTFT, metrics.E2E},
		Actions: []diagnose.Action{
			{ID: "raise_gpu_memory_utilization", Title: "Give the KV cache more memory", Knob: "gpu_memory_utilization", Proposed: "0.95",
				Why:     "More KV blocks hold more contexts before eviction.",
				Effects: []diagnose.Effect{{Metric: metrics.PreemptionRate, Direction: "down", Size: "-60..-90%"}, {Metric: metrics.TTFT, Direction: "down", Size: "-30..-60%"}},
				Risk:    "Less headroom for activations: OOM on long prompts.", Rollback: "Restart with the previous value."},
			{ID: "lower_max_num_seqs", Title: "Admit fewer sequences per batch", Knob: "max_num_seqs", Proposed: "128",
				Why:     "Fewer concurrent sequences compete for KV blocks.",
				Effects: []diagnose.Effect{{Metric: metrics.PreemptionRate, Direction: "down", Size: "-40..-70%"}, {Metric: metrics.ThroughputRPS, Direction: "down", Size: "-5..-15%"}},
				Risk:    "Lower peak throughput.", Rollback: "Set max_num_seqs back to 256."},
			{ID: "add_replica", Title: "Add a replica", Knob: "replicas", Proposed: "+1",
				Why:     "Spreads contexts over more KV cache.",
				Effects: []diagnose.Effect{{Metric: metrics.KVCacheUsage, Direction: "down", Size: "-30..-45%"}},
				Risk:    "Cost; needs a free GPU pair.", Rollback: "Scale back down."},
		},
		SimilarCases:  []diagnose.SimilarCase{{ID: "inc-118", RootCause: metrics.CauseKVCacheEviction, Similarity: 0.91}},
		EngineVersion: "casebook-rules/test",
	}
}

// Faults is an in-memory handlers.FaultInjector.
type Faults struct {
	mu     sync.Mutex
	active []handlers.Fault
	n      int
}

// Inject implements handlers.FaultInjector; it refuses unknown causes.
func (f *Faults) Inject(x handlers.Fault) (string, error) {
	ok := false
	for _, c := range metrics.FaultCauses() {
		ok = ok || c == x.Cause
	}
	if !ok {
		return "", errors.New("unknown cause " + x.Cause)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.active = append(f.active, x)
	return "f" + strconv.Itoa(f.n), nil
}

// Faults implements handlers.FaultInjector.
func (f *Faults) Faults() []handlers.Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]handlers.Fault(nil), f.active...)
}

// ClearFaults implements handlers.FaultInjector.
func (f *Faults) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = nil
}

// Deviations is a plain 3-sigma baseline test over a snapshot's history,
// standing in for diagnose.Deviations so that handler tests do not depend
// on the engine's tuning.
func Deviations(s metrics.Snapshot) map[string]diagnose.Deviation {
	out := map[string]diagnose.Deviation{}
	for id, v := range s.Current {
		hist := s.Series(id)
		if len(hist) < 10 {
			continue
		}
		mean, sq := 0.0, 0.0
		for _, x := range hist {
			mean += x
		}
		mean /= float64(len(hist))
		for _, x := range hist {
			sq += (x - mean) * (x - mean)
		}
		std := math.Sqrt(sq / float64(len(hist)-1))
		if floor := math.Abs(mean) * 0.01; std < floor {
			std = floor
		}
		if std == 0 {
			std = 1e-9
		}
		z := (v - mean) / std
		m, _ := metrics.Lookup(id)
		bad := math.Abs(z) > 3
		switch m.Bad {
		case metrics.Up:
			bad = z > 3
		case metrics.Down:
			bad = z < -3
		}
		out[id] = diagnose.Deviation{Mean: mean, Std: std, Z: z, Anomalous: bad}
	}
	return out
}
