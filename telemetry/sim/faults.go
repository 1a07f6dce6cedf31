package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Fault is an injected root cause. It changes a physical parameter of the
// affected instances, never a metric directly.
type Fault struct {
	Cause    string        // a metrics.FaultCauses() id
	Scope    metrics.Scope // model, optionally one instance
	Severity float64       // 0..1
	Start    time.Time     // zero = now
	Duration time.Duration // zero = until cleared
}

type faultEntry struct {
	id string
	Fault
}

// rampUp is how long a fault takes to reach its full severity.
const rampUp = time.Minute

// Inject adds a fault and returns its id.
func (c *Cluster) Inject(f Fault) (string, error) {
	if !slices.Contains(metrics.FaultCauses(), f.Cause) {
		return "", fmt.Errorf("sim: inject: unknown cause %q (want one of %v)", f.Cause, metrics.FaultCauses())
	}
	if math.IsNaN(f.Severity) || f.Severity < 0 || f.Severity > 1 {
		return "", fmt.Errorf("sim: inject: severity %g is outside 0..1", f.Severity)
	}
	if f.Duration < 0 {
		return "", fmt.Errorf("sim: inject: duration %s is negative", f.Duration)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ins, err := c.scopeInstances(f.Scope)
	if err != nil {
		return "", fmt.Errorf("sim: inject: %w", err)
	}
	f.Scope.Model = ins[0].model.spec.Name // accept the pod prefix as a model name
	if f.Scope.Instance != "" {
		f.Scope.Instance = ins[0].name // accept an ordinal as an instance name
	}
	if f.Start.IsZero() {
		f.Start = c.now
	}
	c.nextID++
	id := "f" + strconv.Itoa(c.nextID)
	c.faults = append(c.faults, faultEntry{id: id, Fault: f})
	return id, nil
}

// Faults lists the injected faults that have not ended, in injection order.
func (c *Cluster) Faults() []Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Fault
	for _, f := range c.live() {
		out = append(out, f.Fault)
	}
	return out
}

func (c *Cluster) live() []faultEntry {
	var out []faultEntry
	for _, f := range c.faults {
		if f.Duration == 0 || c.now.Before(f.Start.Add(f.Duration)) {
			out = append(out, f)
		}
	}
	return out
}

// ClearFaults removes every injected fault.
func (c *Cluster) ClearFaults() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = nil
}

// RemoveFault removes one fault by id and reports whether it existed.
func (c *Cluster) RemoveFault(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.faults {
		if f.id == id {
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			return true
		}
	}
	return false
}

// physicsFor combines the faults acting on an instance at t.
func (c *Cluster) physicsFor(in *instance, t time.Time) physics {
	ph := neutral()
	for _, f := range c.faults {
		if f.Scope.Model != in.model.spec.Name || (f.Scope.Instance != "" && f.Scope.Instance != in.name) {
			continue
		}
		if t.Before(f.Start) || (f.Duration > 0 && !t.Before(f.Start.Add(f.Duration))) {
			continue
		}
		s := f.Severity * math.Min(1, float64(t.Sub(f.Start))/float64(rampUp))
		applyFault(&ph, f.Cause, s, f.Scope.Instance != "", in)
	}
	return ph
}

// applyFault changes the physical parameters one cause acts on.
func applyFault(ph *physics, cause string, s float64, oneInstance bool, in *instance) {
	switch cause {
	case metrics.CauseMemoryBandwidthBound:
		// A co-tenant streaming through HBM (or degraded HBM): less
		// bandwidth for the engine, the memory interface busier.
		ph.bwFactor *= 1 - 0.6*s
		ph.neighbourDRAM += 0.5 * s
	case metrics.CauseGPUThrottling:
		// Failing fans or hot inlet air plus a power brake.
		ph.thermalR *= 1 + 2*s
		ph.ambientC += 15 * s
		ph.powerLimit *= 1 - 0.5*s
		if oneInstance {
			ph.hotGPU = 0
		}
	case metrics.CauseKVCacheEviction:
		// A co-tenant claims GPU memory (the KV pool shrinks) while
		// sessions get longer and more diverse.
		ph.kvPool *= math.Pow(kvReference(in), 1.1*s)
		ph.ctxGrowth *= 1 + 0.3*s
		ph.prefixShare *= 1 - 0.4*s
	case metrics.CauseLongPromptPrefill:
		ph.promptScale *= 1 + 2.5*s
	case metrics.CausePrefixCacheMiss:
		// A client changed its system prompt per request: shared
		// prefixes no longer match.
		ph.prefixShare *= 1 - 0.95*s
	case metrics.CauseSpecDecodeDegradation:
		ph.acceptance *= 1 - 0.75*s
	case metrics.CauseQueueBacklog:
		ph.surge = math.Max(ph.surge, 0.9+0.7*s)
	case metrics.CauseGPUUnderutilized:
		if oneInstance {
			// The router sends most of the model's traffic elsewhere.
			ph.route *= 1 - 0.9*s
		} else {
			// max_num_seqs misconfigured very low.
			ph.maxSeqs = max(1, int(math.Round(48*math.Pow(1-s, 2.5))))
		}
	case metrics.CauseTransportLatency:
		ph.netDelayS += 0.05 + 1.5*s
	case metrics.CauseEngineErrors:
		ph.errorProb += 0.01 + 0.3*s
		ph.abortProb += 0.05 * s
		if s > 0.7 {
			ph.xid = 43
		}
	case metrics.CauseHostOverhead:
		// Tokenizer, scheduler or kernel-launch time on the CPU.
		ph.hostMs += 12 * s
	}
}

// kvReference is the share of the KV pool the instance's sequences fill at
// the weekday peak: shrinking the pool by this factor fills it.
func kvReference(in *instance) float64 {
	spec, cfg := in.model.spec, in.cfg
	tr := traceTables[spec.Trace]
	g := float64(cfg.TensorParallelSize)
	pool := (cfg.GPUMemoryUtilization*H100.MemoryMiB*(1<<20) - spec.WeightBytes()/g - 3.5*(1<<30)) * g
	tokens := pool / spec.KVBytesPerToken()
	peakBatch := spec.PeakRPS * 2 * tr.MeanGen * 0.012 // rough sequences at peak
	need := peakBatch * (tr.MeanCtx + tr.MeanGen)
	return clamp(need/tokens, 0.005, 0.9)
}
