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
	// hosts are the nodes the fault's instances ran on at injection: a
	// fault of the hardware or of a co-tenant on the node stays with the
	// node when an instance moves away (hostBound).
	hosts map[string]bool
	// surgeBase is the scope's capacity in requests per second when a
	// surge began: the surge is client traffic, a fixed load that added
	// capacity shares, not a multiple of whatever capacity there is.
	surgeBase float64
}

// hostBound reports whether a cause's physical change belongs to the node
// (its GPUs, their cooling and power, a co-tenant process on them) rather
// than to the traffic or the engine process.
func hostBound(cause string) bool {
	switch cause {
	case metrics.CauseGPUThrottling, metrics.CauseMemoryBandwidthBound, metrics.CauseKVCacheEviction, metrics.CauseEngineErrors:
		return true
	}
	return false
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
	hosts := map[string]bool{}
	for _, in := range ins {
		hosts[in.host] = true
	}
	c.nextID++
	id := "f" + strconv.Itoa(c.nextID)
	c.faults = append(c.faults, faultEntry{id: id, Fault: f, hosts: hosts})
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
	for i := range c.faults {
		f := &c.faults[i]
		if f.Scope.Model != in.model.spec.Name {
			continue
		}
		if f.hosts == nil { // an entry built without Inject (the corpus)
			f.hosts = map[string]bool{}
			ins, _ := c.scopeInstances(f.Scope)
			for _, x := range ins {
				f.hosts[x.host] = true
			}
		}
		onHost := f.hosts[in.host]
		if f.Scope.Instance != "" && f.Scope.Instance != in.name && !(hostBound(f.Cause) && onHost) {
			continue
		}
		if t.Before(f.Start) || (f.Duration > 0 && !t.Before(f.Start.Add(f.Duration))) {
			continue
		}
		s := effectSize(f.Severity) * math.Min(1, float64(t.Sub(f.Start))/float64(rampUp))
		if f.Cause == metrics.CauseQueueBacklog {
			if f.surgeBase == 0 {
				ins, _ := c.scopeInstances(f.Scope)
				for _, x := range ins {
					f.surgeBase += x.capacity
				}
				f.surgeBase /= float64(max(1, len(ins)))
			}
			// The surge's clients, spread over the replicas the router
			// now has (a one-instance fault stays on that instance).
			n := 1.0
			if f.Scope.Instance == "" {
				n = float64(max(1, len(in.model.instances))) / float64(max(1, in.model.baseReps))
			}
			ph.surgeRPS = math.Max(ph.surgeRPS, (0.9+0.7*s)*f.surgeBase/n)
			continue
		}
		applyFault(&ph, f.Cause, s, f.Scope.Instance != "", !hostBound(f.Cause) || onHost, in, in.onsetState(f.id))
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
	pool   float64   // the KV pool the configuration gave, tokens
	tp     int       // tensor-parallel degree
	powerW []float64 // per-GPU board power
}

func (in *instance) onsetState(id string) onsetState {
	if st, ok := in.onset[id]; ok {
		return st
	}
	if in.onset == nil {
		in.onset = map[string]onsetState{}
	}
	st := onsetState{kvNeed: in.kvNeed, ctx: in.ctxSeq, pool: in.poolTokens(), tp: in.cfg.TensorParallelSize}
	for _, g := range in.gpus {
		st.powerW = append(st.powerW, g.powerW)
	}
	in.onset[id] = st
	return st
}

// applyFault changes the physical parameters one cause acts on; s is the
// effect size (0..1, ramped), at the instance's state at the fault's onset.
// onHost is false for an instance that runs away from the nodes a
// host-bound fault sits on: the fault's traffic part still reaches it, its
// hardware part does not.
func applyFault(ph *physics, cause string, s float64, oneInstance, onHost bool, in *instance, at onsetState) {
	if !onHost {
		if cause == metrics.CauseKVCacheEviction {
			ph.ctxGrowth *= 1 + 0.3*s
			ph.prefixShare *= 1 - 0.5*s
		}
		return
	}
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
			ph.powerCapW[i] = math.Max(in.constants().GPU.IdlePowerW+40, w*(1-0.45*s))
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
		// The co-tenant holds a fixed number of bytes on each GPU:
		// what the pool had beyond the target, sized at the onset.
		need := math.Max(at.kvNeed, 2*at.ctx)
		claim := math.Max(0, at.pool-1.25*need/(1+0.6*s))
		ph.kvClaimBytes = math.Max(ph.kvClaimBytes, claim*in.model.spec.KVBytesPerToken()/float64(max(1, at.tp)))
	case metrics.CauseLongPromptPrefill:
		ph.promptScale *= 1 + 2.5*s
	case metrics.CausePrefixCacheMiss:
		// A client changed its system prompt per request: shared
		// prefixes no longer match.
		ph.prefixShare *= 1 - 0.95*s
	case metrics.CauseSpecDecodeDegradation:
		ph.acceptance *= 1 - 0.75*s
	case metrics.CauseGPUUnderutilized:
		// A load-balancer weight change sends most of the traffic to
		// another pool: requests keep flowing, but the batches get small
		// and the GPUs idle between steps.
		ph.keep *= math.Exp(-3.5 * s)
	case metrics.CauseTransportLatency:
		ph.netDelayS += 0.05 + 1.5*s
	case metrics.CauseEngineErrors:
		// Requests fail inside the engine (finished_reason="error");
		// when severe, a GPU fault (XID 43) takes the engine core down
		// again and again, and while it restarts the API server answers
		// 5xx to requests the engine never sees.
		ph.errorProb += 0.01 + 0.3*s
		if s > 0.7 {
			ph.xid = 43
			ph.apiFail = 0.5 * (s - 0.7) / 0.3
		}
	case metrics.CauseHostOverhead:
		// Tokenizer, scheduler or kernel-launch time on the CPU.
		ph.hostMs += 4 + 14*s
	}
}
