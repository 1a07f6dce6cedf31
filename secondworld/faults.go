package secondworld

import (
	"math"
	"math/rand/v2"

	"github.com/casebook/casebook/metrics"
)

// fault is one physical disturbance: which cause, how strong (sev in 0..1),
// which variant of the cause, when it began (minutes before the snapshot)
// and how long it takes to reach full strength.
type fault struct {
	cause   string
	sev     float64
	variant int
	onset   float64 // minutes before "at"
	ramp    float64 // minutes from onset to full strength
	gpus    []bool  // GPUs it hits (throttling)
	restart bool    // a configuration change that restarts the engine
	other   bool    // the memory went to another process (eviction), not back to the pool

	// targets fixed when the fault is drawn, relative to the healthy state
	target  float64
	target2 float64
}

// level is the fault's mean strength over the one-minute window that ends t
// minutes after "at" (t <= 0).
func (f *fault) level(t float64) float64 {
	elapsed := t + f.onset
	if elapsed <= 0 {
		return 0
	}
	cover := math.Min(1, elapsed)
	mid := elapsed - cover/2
	strength := 1.0
	if f.ramp > 0 {
		strength = math.Min(1, mid/f.ramp)
	}
	return cover * strength
}

// baseline is the healthy operating point the faults are sized against.
type baseline struct {
	capacity float64   // completions/s
	op       operating // at the healthy arrival rate
	arrival  float64
	powerW   float64 // per-GPU board power
}

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// drawFault picks the variant and the targets of a fault for deployment d.
// Sizes are relative to the deployment's own headroom, so that "severe"
// means the same thing on a lightly and a heavily loaded instance.
func drawFault(r *rand.Rand, cause string, sev float64, d *deployment, b baseline) fault {
	f := fault{cause: cause, sev: sev, ramp: uniform(r, 0, 2)}
	if r.Float64() < 0.75 {
		f.onset = uniform(r, 0.2, 5)
	} else {
		f.onset = uniform(r, 5, 30)
	}
	headroom := d.kvBlocks / math.Max(1, b.op.used)
	switch cause {
	case metrics.CauseKVCacheEviction:
		if headroom > 2.5 || r.Float64() < 0.4 {
			// the pool shrank: another process took memory, or a redeploy
			// lowered gpu_memory_utilization / reserved more for graphs
			f.variant = 0
			f.target = b.op.used / (0.88 + 0.55*sev) // new block count
			f.other = r.Float64() < 0.5
			f.restart = true
			f.ramp = 0
		} else {
			// contexts got longer and more diverse (longer sessions, bigger
			// max_tokens), so the same traffic needs more blocks
			f.variant = 1
			f.target = headroom * (0.95 + 0.5*sev) // KV demand multiplier
			f.ramp = uniform(r, 0.5, 4)
		}
		f.target2 = 2 + 8*sev // prefix working-set multiplier
	case metrics.CauseQueueBacklog:
		f.target = b.capacity * (1.02 + 0.8*math.Pow(sev, 1.3))
		f.ramp = uniform(r, 0.5, 4)
	case metrics.CauseGPUUnderutilized:
		n0 := b.op.running()
		if n0 >= 4 && r.Float64() < 0.7 {
			// max_num_seqs pushed too low. Completions grow slower than
			// linearly with the batch, so a cap just under the needed
			// concurrency is barely visible and a deep cut starves the GPU.
			f.variant = 0
			f.target = math.Max(2, math.Floor(n0*math.Pow(1.03-0.65*sev, 1.25)))
		} else {
			f.variant = 1 // max_num_batched_tokens pushed far too low
			q := 1.0
			if d.specK > 0 {
				q = float64(d.specK + 1)
			}
			need := b.op.nDec*q + b.op.x*b.op.prefillTokPerReq*b.op.cost.tStep
			f.target = math.Max(64, need*(1.25-0.85*sev))
		}
		f.restart = true
		f.ramp = 0
	case metrics.CauseSpecDecodeDegradation:
		f.target = math.Max(0.05, d.alpha*(0.78-0.6*sev))
		f.ramp = uniform(r, 0, 6)
	case metrics.CauseMemoryBandwidthBound:
		switch x := r.Float64(); {
		case x < 0.35:
			f.variant = 0 // memory clock / HBM slowdown
			f.target = 1 - (0.15 + 0.45*sev)
		case x < 0.75 || headroom < 1.8:
			f.variant = 1 // a co-located process streams memory
			f.target = 0.15 + 0.6*sev
			f.target2 = uniform(r, 0.01, 0.05)
		default:
			f.variant = 2 // much longer, mostly cached contexts
			f.target = math.Min(headroom*0.8-1, 1.2+5*sev)
			f.ramp = uniform(r, 1, 5)
		}
	case metrics.CauseLongPromptPrefill:
		grow := 0.6 + 5*sev
		grow = math.Min(grow, float64(d.model.maxLen)/3/d.promptMean-1)
		grow = math.Min(grow, headroom*1.3-1)
		f.target = math.Max(0.3, grow)
		f.ramp = uniform(r, 0, 3)
	case metrics.CausePrefixCacheMiss:
		f.target = 1 - (0.35 + 0.6*sev)
		f.ramp = uniform(r, 0, 2)
	case metrics.CauseGPUThrottling:
		f.gpus = make([]bool, d.tp)
		if d.tp > 1 && r.Float64() < 0.55 {
			f.gpus[r.IntN(d.tp)] = true
		} else {
			for i := range f.gpus {
				f.gpus[i] = true
			}
		}
		switch x := r.Float64(); {
		case x < 0.45: // cooling: thermal resistance or inlet temperature up
			f.variant = 0
			need := (d.gpu.slowdownC - d.tin) / (d.gpu.rth * b.powerW)
			f.target = need * (1.06 + 0.8*sev)
			f.ramp = uniform(r, 1, 6)
		case x < 0.85: // power brake or a lowered power limit
			f.variant = 1
			f.target = b.powerW * (0.93 - 0.45*sev)
		default: // hardware slowdown: clocks cut without heat or power
			f.variant = 2
			f.target = 1 - (0.2 + 0.5*sev)
		}
	case metrics.CauseTransportLatency:
		f.target = 20 + 3000*math.Pow(sev, 1.5) // ms added between client and engine
		if r.Float64() < 0.35 {
			f.target2 = 0.004 + 0.05*sev // clients giving up mid-stream
		}
		f.ramp = uniform(r, 0, 1.5)
	case metrics.CauseEngineErrors:
		if r.Float64() < 0.65 {
			f.variant = 0 // requests failing: bad inputs, NaN logits, adapter errors
			f.target = 0.008 + 0.35*math.Pow(sev, 1.3)
		} else {
			f.variant = 1 // crash loop: the engine restarts, dropping work in flight
			f.target = 0.06 + 0.45*sev
			f.target2 = 0.01 + 0.1*sev
		}
		f.ramp = 0
	case metrics.CauseHostOverhead:
		switch x := r.Float64(); {
		case x < 0.45:
			f.variant = 0 // CPU contention or a cgroup quota on the engine process
			f.target = 0.6 + 5*sev
		case x < 0.8:
			f.variant = 1 // per-sequence CPU work: structured output, logits processors
			f.target = 2 + 25*sev
		default:
			f.variant = 2 // the API server: tokenizer / detokenizer saturated
			f.target = 15 + 400*sev
		}
		f.ramp = uniform(r, 0, 2)
	}
	return f
}

// apply changes the minute's conditions by the fault at strength x.
func (f *fault) apply(c *conditions, x float64, d *deployment, b baseline) {
	if x <= 0 {
		return
	}
	switch f.cause {
	case metrics.CauseKVCacheEviction:
		if f.variant == 0 {
			nb := d.kvBlocks - x*(d.kvBlocks-f.target)
			if !f.other { // a lower gpu_memory_utilization frees the framebuffer
				c.memUsedDelta -= (d.kvBlocks - nb) * d.blockSize * d.kvTok / (d.gpu.memGiB * (1 << 30))
			}
			c.kvBlocks = math.Min(c.kvBlocks, nb)
		} else {
			m := 1 + x*(f.target-1)
			c.outMean *= 1 + (m-1)*0.7
			c.promptMean *= 1 + (m-1)*0.3
		}
		c.workingFrac *= 1 + x*(f.target2-1)
	case metrics.CauseQueueBacklog:
		c.arrival += x * math.Max(0, f.target-b.arrival)
	case metrics.CauseGPUUnderutilized:
		if x >= 0.5 {
			if f.variant == 0 {
				c.maxSeqs = math.Min(c.maxSeqs, f.target)
			} else {
				c.maxBatchTokens = math.Min(c.maxBatchTokens, f.target)
			}
		}
	case metrics.CauseSpecDecodeDegradation:
		c.alpha -= x * (d.alpha - f.target)
	case metrics.CauseMemoryBandwidthBound:
		switch f.variant {
		case 0:
			c.memClockScale *= 1 - x*(1-f.target)
		case 1:
			c.neighbourBW += x * f.target
			c.neighbourMem += x * f.target2
		default:
			p := c.promptMean
			np := p * (1 + x*f.target)
			c.sharedFrac = (c.sharedFrac*p + (np-p)*0.92) / np
			c.promptMean = np
		}
	case metrics.CauseLongPromptPrefill:
		p := c.promptMean
		np := p * (1 + x*f.target)
		c.sharedFrac = c.sharedFrac * p / np
		c.promptMean = np
	case metrics.CausePrefixCacheMiss:
		c.sharedFrac *= 1 - x*(1-f.target)
	case metrics.CauseGPUThrottling:
		for i, hit := range f.gpus {
			if !hit {
				continue
			}
			switch f.variant {
			case 0:
				c.rthScale[i] *= 1 + x*(f.target-1)
			case 1:
				c.powerCap[i] = math.Min(c.powerCap[i], d.gpu.tdpW-x*(d.gpu.tdpW-f.target))
			default:
				c.hwSlow[i] = math.Min(c.hwSlow[i], 1-x*(1-f.target))
			}
		}
	case metrics.CauseTransportLatency:
		c.transportMs += x * f.target
		c.abortFrac += x * f.target2
	case metrics.CauseEngineErrors:
		if f.variant == 0 {
			c.errFrac += x * f.target
		} else {
			c.downFrac += x * f.target
			c.errFrac += x * f.target2
			c.coldCache = math.Max(c.coldCache, math.Min(0.9, 2*x*f.target))
		}
	case metrics.CauseHostOverhead:
		switch f.variant {
		case 0:
			c.hostScale *= 1 + x*f.target
		case 1:
			c.hostPerSeqScale *= 1 + x*f.target
		default:
			c.frontendMs += x * f.target
			c.hostScale *= 1 + x*0.3*f.sev
		}
	}
}

// restartEffect is the blip of an engine restart at a configuration change:
// the engine is down for part of the onset minute and its prefix cache
// starts cold.
func (f *fault) restartEffect(c *conditions, t float64) {
	if !f.restart {
		return
	}
	since := t + f.onset // minutes since the change, at the window's end
	switch {
	case since <= 0:
	case since <= 1:
		c.downFrac = math.Max(c.downFrac, 0.6*since)
		c.coldCache = math.Max(c.coldCache, 1)
	default:
		c.coldCache = math.Max(c.coldCache, math.Exp(-(since-1)/1.5))
	}
}
