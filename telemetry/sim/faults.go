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
	for _, m := range c.models {
		for _, in := range m.instances {
			in.onset = nil
		}
	}
}

// RemoveFault removes one fault by id and reports whether it existed.
func (c *Cluster) RemoveFault(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.faults {
		if f.id == id {
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			for _, m := range c.models {
				for _, in := range m.instances {
					delete(in.onset, id)
				}
			}
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
		s := effectSize(f.Severity) * math.Min(1, float64(t.Sub(f.Start))/float64(rampUp))
		applyFault(&ph, f.Cause, s, f.Scope.Instance != "", in, in.onsetState(f.id))
	}
	return ph
}

// effectSize maps a severity to the size of the physical change. A fault
// of any severity above zero is a real change: the mildest is about a
// quarter of the strongest, which puts it a few standard deviations off
// the metrics the cause moves rather than inside their noise.
func effectSize(severity float64) float64 {
	if severity <= 0 {
		return 0
	}
	return 0.25 + 0.75*severity
}

// onsetState is what an instance looked like when a fault first acted on
// it: faults that are sized against the running deployment (a co-tenant
// that leaves the KV pool too small for the working set, a power cap below
// the draw) read it, so that they stay put while the state they cause
// evolves.
type onsetState struct {
	kvNeed float64   // unique KV tokens the running batch held
	ctx    float64   // mean context of a running sequence, tokens
	powerW []float64 // per-GPU board power
}

func (in *instance) onsetState(id string) onsetState {
	if st, ok := in.onset[id]; ok {
		return st
	}
	if in.onset == nil {
		in.onset = map[string]onsetState{}
	}
	st := onsetState{kvNeed: in.kvNeed, ctx: in.ctxSeq}
	for _, g := range in.gpus {
		st.powerW = append(st.powerW, g.powerW)
	}
	in.onset[id] = st
	return st
}

// applyFault changes the physical parameters one cause acts on; s is the
// effect size (0..1, ramped), at the instance's state at the fault's onset.
func applyFault(ph *physics, cause string, s float64, oneInstance bool, in *instance, at onsetState) {
	switch cause {
	case metrics.CauseMemoryBandwidthBound:
		// A co-tenant streaming through HBM (or degraded HBM): less
		// bandwidth for the engine, the memory interface busier.
		ph.bwFactor *= 1 - 0.6*s
		ph.neighbourDRAM += 0.5 * s
	case metrics.CauseGPUThrottling:
		// The rack's power controller caps the boards below their draw
		// (clocks-event reason SW power cap) while failing fans and hot
		// inlet air push the die toward the slowdown temperature.
		ph.thermalR *= 1 + 2.5*s
		ph.ambientC += 20 * s
		ph.powerCapW = make([]float64, len(at.powerW))
		for i, w := range at.powerW {
			ph.powerCapW[i] = math.Max(H100.IdlePowerW+40, w*(1-0.45*s))
		}
		if oneInstance {
			ph.hotGPU = 0
		}
	case metrics.CauseKVCacheEviction:
		// Longer, more diverse sessions arrive while a co-tenant process
		// claims GPU memory: the KV pool left to the engine is smaller
		// than the working set it held, so blocks are evicted and
		// sequences preempted and recomputed.
		ph.ctxGrowth *= 1 + 0.3*s
		ph.prefixShare *= 1 - 0.5*s
		need := math.Max(at.kvNeed, 2*at.ctx)
		ph.kvPoolTokens = 1.25 * need / (1 + 0.6*s)
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
		// A load-balancer weight change sends most of the traffic to
		// another pool: requests keep flowing, but the batches get small
		// and the GPUs idle between steps.
		ph.keep *= math.Exp(-3.5 * s)
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
		ph.hostMs += 4 + 14*s
	}
}
