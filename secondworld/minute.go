package secondworld

import (
	"math"
)

// activity is what DCGM would see on one GPU over a minute.
type activity struct {
	busy     float64 // fraction of time a kernel runs (DCGM_FI_DEV_GPU_UTIL / 100)
	smActive float64 // fraction of cycles an SM has a warp (DCGM_FI_PROF_SM_ACTIVE)
	tensor   float64
	dram     float64
}

// activityOf derives GPU activity from the engine's operating point: the
// share of each step the GPU works, how full the SMs are for the tokens in a
// step, and the FLOPs and bytes against the peaks.
func activityOf(d *deployment, op operating, g gpuEnv, c *conditions) activity {
	cost := op.cost
	if cost.tStep <= 0 {
		return activity{}
	}
	up := 1 - c.downFrac
	present := (1 - math.Exp(-op.running())) * up // the engine has work
	busy := cost.tGPU / cost.tStep * present
	fill := 0.55 + 0.4*(1-math.Exp(-cost.tokens/64))
	sm := ((cost.tGPU-cost.tComm)*fill + cost.tComm*0.2) / cost.tStep * present
	tensor := cost.flops / (g.peak * g.clock * cost.tStep) * 1.2 * present
	dram := cost.bytes / (d.gpu.bwGBs * 1e9 * g.bwScale * cost.tStep) * present
	// a co-located process adds its own kernels and memory traffic
	busy += (1 - busy) * math.Min(1, 2*c.neighbourBW)
	sm += (1 - sm) * 0.5 * c.neighbourBW
	dram += c.neighbourBW
	return activity{
		busy:     clamp(busy, 0, 1),
		smActive: clamp(sm, 0, 0.98),
		tensor:   clamp(tensor, 0, 0.95),
		dram:     clamp(dram, 0, 0.98),
	}
}

// power is one GPU's board power at activity a and SM clock ratio clock
// (dynamic power falls faster than the clock because voltage falls with it).
func (d *deployment) power(a activity, clock float64) float64 {
	g := d.gpu
	mix := 0.25*a.busy + 0.5*a.tensor + 0.35*a.dram
	return g.idleW + (g.tdpW-g.idleW)*math.Min(1, mix)*math.Pow(clock, 1.7)
}

// gpuState carries what persists from one minute to the next on each GPU.
type gpuState struct {
	temp  []float64
	clock []float64
	act   activity
	// lastCap seeds the next minute's capacity search
	lastCap float64
}

func newGPUState(d *deployment) *gpuState {
	s := &gpuState{temp: make([]float64, d.tp), clock: make([]float64, d.tp)}
	for i := range s.temp {
		s.temp[i] = d.tin + 10
		s.clock[i] = 1
	}
	return s
}

// clocks sets each GPU's clock from last minute's activity: the lowest of
// the power-limit clock, the thermal clock (once the GPU is near its
// slowdown temperature) and any hardware slowdown.
func (s *gpuState) clocks(d *deployment, c *conditions) {
	g := d.gpu
	for j := range s.clock {
		demand := d.power(s.act, 1)
		capW := math.Min(c.powerCap[j], g.tdpW)
		cPow := 1.0
		if demand > capW {
			cPow = math.Pow((capW-g.idleW)/(demand-g.idleW), 1/1.7)
		}
		tin := d.tin + c.tinDelta[j]
		rth := d.gpuRth[j] * c.rthScale[j]
		cTh := 1.0
		if tin+rth*math.Min(demand, capW) > g.slowdownC {
			allowed := (g.slowdownC - tin) / rth
			cTh = math.Pow(math.Max(0.01, (allowed-g.idleW)/(demand-g.idleW)), 1/1.7)
			near := clamp((s.temp[j]-(g.slowdownC-5))/5, 0, 1)
			cTh = 1 - (1-cTh)*near
		}
		s.clock[j] = clamp(math.Min(math.Min(cPow, cTh), c.hwSlow[j]), 0.25, 1)
	}
}

func (s *gpuState) minClock() float64 {
	m := 1.0
	for _, c := range s.clock {
		m = math.Min(m, c)
	}
	return m
}

// heat moves each GPU's temperature towards its equilibrium with a time
// constant of about a minute and a half.
func (s *gpuState) heat(d *deployment, c *conditions, settle bool) []float64 {
	p := make([]float64, len(s.temp))
	for j := range s.temp {
		p[j] = math.Min(d.power(s.act, s.clock[j]), math.Min(c.powerCap[j], d.gpu.tdpW))
		eq := d.tin + c.tinDelta[j] + d.gpuRth[j]*c.rthScale[j]*p[j]
		eq = math.Min(eq, d.gpu.slowdownC+1.5)
		if settle {
			s.temp[j] = eq
		} else {
			s.temp[j] += (eq - s.temp[j]) * (1 - math.Exp(-1/1.5))
		}
	}
	return p
}

// warm settles clocks and temperatures at the healthy operating point.
func (s *gpuState) warm(d *deployment, c *conditions, b baseline) {
	s.clocks(d, c)
	g := d.gpuEnvAt(s.minClock(), c.memClockScale)
	op := d.solve(c, g, math.Min(c.arrival, 0.95*d.capacity(c, g).x))
	s.act = activityOf(d, op, g, c)
	s.heat(d, c, true)
}

// minuteOut is the true (noise-free) state of one minute.
type minuteOut struct {
	c          conditions
	op         operating
	capacity   float64
	served     float64 // completions/s delivered by the engine
	aborts     float64 // waiting requests given up by their clients, /s
	queueAvg   float64
	waitS      float64
	waitP99S   float64
	clockRatio float64
	kvUse      float64
	act        activity
	powerW     []float64
	temp       []float64
	clocks     []float64
}

// minute advances the engine by one minute under c. queue carries the
// backlog between minutes: when arrivals exceed capacity it grows by the
// difference (a fluid queue); below capacity the wait follows an M/M/c
// approximation around the engine's concurrency limit, which stays small
// until the load nears capacity and then grows steeply.
func (d *deployment) minute(c *conditions, s *gpuState, queue *float64) minuteOut {
	s.clocks(d, c)
	clock := s.minClock()
	g := d.gpuEnvAt(clock, c.memClockScale)
	capOp := d.capacityNear(c, g, s.lastCap)
	s.lastCap = capOp.x
	up := 1 - c.downFrac
	xmax := capOp.x * up
	lambda := c.arrival
	out := minuteOut{c: *c, capacity: xmax, clockRatio: clock}

	if c.downFrac > 0 {
		*queue *= 1 - c.downFrac // a restart drops the engine's waiting queue
	}
	var op operating
	q0 := *queue
	if q0 > 0.5 || lambda > 0.995*xmax {
		op = capOp
		// Clients give up after their timeout, so a FIFO backlog cannot
		// hold more than about timeout x service rate requests; the
		// overflow leaves as aborts.
		qMax := d.clientTimeoutS * xmax
		q1 := q0 + (lambda-xmax)*60
		aborts := 0.0
		if q1 > qMax {
			aborts = (q1 - qMax) / 60
			q1 = qMax
		}
		q1 = math.Max(0, q1)
		if q1 > 0 {
			out.served = xmax
			out.queueAvg = (q0 + q1) / 2
		} else {
			drainS := q0 / math.Max(xmax-lambda, 1e-6)
			frac := math.Min(1, drainS/60)
			out.served = math.Min(xmax, lambda+q0/60)
			out.queueAvg = q0 / 2 * frac
			if frac < 0.5 {
				op = d.solve(c, g, math.Min(lambda, 0.99*capOp.x))
			}
		}
		*queue = q1
		out.aborts = aborts
		out.waitS = out.queueAvg/math.Max(xmax, 1e-6) + op.cost.tStep
		out.waitP99S = out.waitS*1.6 + 2*op.cost.tStep
	} else {
		op = d.solve(c, g, lambda)
		rho := lambda / capOp.x
		conc := int(math.Max(1, math.Round(capOp.running())))
		w := erlangC(conc, rho) / (capOp.x * (1 - rho)) * 1.3
		out.waitS = op.cost.tStep/2 + w
		out.waitP99S = op.cost.tStep + 4.6*w
		out.served = lambda * up
		out.queueAvg = lambda * w
		*queue = 0
	}
	out.op = op
	out.kvUse = clamp(op.used/c.kvBlocks, 0, 1) * up
	s.act = activityOf(d, op, g, c)
	out.act = s.act
	out.powerW = s.heat(d, c, false)
	out.temp = append([]float64(nil), s.temp...)
	out.clocks = append([]float64(nil), s.clock...)
	return out
}
