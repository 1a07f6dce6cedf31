package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Options configure a simulated cluster. Zero values mean the defaults.
type Options struct {
	Models            int       // default 2
	InstancesPerModel int       // default 2
	GPUsPerInstance   int       // default 2 (tensor parallel)
	Seed              int64     // random seed; the same seed and calls give the same telemetry
	Start             time.Time // simulated start; zero = time.Now()
	// DCGMFields is the counter set of the simulated dcgm-exporter: the
	// default file (no profiling fields) or the profiling one; "" means
	// profiling.
	DCGMFields DCGMFields
	// Engines are the engines serving the models, in model order and
	// repeating (model i runs Engines[i % len]); empty means vLLM
	// everywhere. Each engine's /metrics page carries its own names,
	// labels, buckets and semantics (see EngineOf).
	Engines []metrics.Engine
	// Deployments, when set, are the models the cluster serves, each
	// with its own replicas and tensor-parallel size (FleetPreset); Models,
	// InstancesPerModel and GPUsPerInstance are then ignored.
	Deployments []Deployment
	// ModelDCGMFields overrides DCGMFields for the GPUs of the models it
	// names (served model names), as in a cluster whose node pools run
	// dcgm-exporter with different counter files.
	ModelDCGMFields map[string]DCGMFields
}

// GatewayPath is where Handler serves the gateway's metrics.
const GatewayPath = "/gateway/metrics"

// subStep is the longest physics step.
const subStep = 5 * time.Second

// flushEvery bounds how long finished requests wait before they reach the
// histograms within one long Advance.
const flushEvery = time.Minute

// Cluster is a simulated inference cluster: models served by vLLM
// instances on tensor-parallel GPU groups, behind a gateway. It is safe for
// concurrent use.
type Cluster struct {
	mu      sync.Mutex
	seed    int64
	now     time.Time
	stepped bool
	models  []*model
	faults  []faultEntry
	nextID  int
	gpus    int
	hosts   int
	step    time.Duration
	gateway *page      // the gateway page layout, rebuilt when instances change
	dcgm    DCGMFields // the simulated dcgm-exporter's counter set
}

// model is one served model and its replicas.
type model struct {
	spec      ModelSpec
	index     int
	baseReps  int // the replica count the traffic was sized for
	instances []*instance
	nextPod   int
	cfg       EngineConfig   // configuration of new replicas
	gwVia     string         // the path clients take: "" (the gateway), "standby" or "direct"
	gwReps    int            // gateway replicas in the path (0: 1)
	noise     float64        // slow load fluctuation, log scale
	engine    metrics.Engine // the engine whose /metrics the instances serve
	rng       *rand.Rand
	dcgm      DCGMFields // the counter set of its GPUs' dcgm-exporter
}

// New builds a cluster with defaults filled in.
func New(opts Options) *Cluster {
	if opts.Models <= 0 {
		opts.Models = 2
	}
	if opts.InstancesPerModel <= 0 {
		opts.InstancesPerModel = 2
	}
	if opts.GPUsPerInstance <= 0 {
		opts.GPUsPerInstance = 2
	}
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.DCGMFields == "" {
		opts.DCGMFields = DCGMProfiling
	}
	c := &Cluster{seed: opts.Seed, now: opts.Start.UTC(), step: subStep, dcgm: opts.DCGMFields}
	for i, d := range opts.Deployments {
		e := metrics.EngineVLLM
		if len(opts.Engines) > 0 {
			e = opts.Engines[i%len(opts.Engines)]
		}
		c.addModelOn(d.Spec, max(d.Replicas, 1), max(d.TP, 1), e)
		if f, ok := opts.ModelDCGMFields[d.Spec.Name]; ok && f != "" {
			c.models[len(c.models)-1].dcgm = f
		}
	}
	if len(opts.Deployments) > 0 {
		return c
	}
	for i := range opts.Models {
		e := metrics.EngineVLLM
		if len(opts.Engines) > 0 {
			e = opts.Engines[i%len(opts.Engines)]
		}
		c.addModelOn(modelSpec(i), opts.InstancesPerModel, opts.GPUsPerInstance, e)
		if f, ok := opts.ModelDCGMFields[c.models[i].spec.Name]; ok && f != "" {
			c.models[i].dcgm = f
		}
	}
	return c
}

func (c *Cluster) addModel(spec ModelSpec, reps, tp int) {
	c.addModelOn(spec, reps, tp, metrics.EngineVLLM)
}

func (c *Cluster) addModelOn(spec ModelSpec, reps, tp int, engine metrics.Engine) {
	m := &model{spec: spec, index: len(c.models), baseReps: reps, cfg: defaultConfig(spec, tp, reps), engine: engine, dcgm: c.dcgm,
		rng: rand.New(rand.NewPCG(uint64(c.seed), uint64(1000+len(c.models))))}
	c.models = append(c.models, m)
	for range reps {
		c.addInstance(m)
	}
}

func (c *Cluster) addInstance(m *model) *instance {
	n := m.nextPod
	m.nextPod++
	in := &instance{model: m, name: m.spec.PodPrefix + "-" + strconv.Itoa(n), cfg: m.cfg, weight: 1,
		host: "gpu-node-" + strconv.Itoa(c.hosts),
		rng:  rand.New(rand.NewPCG(uint64(c.seed), uint64(m.index*1000+n)))}
	c.hosts++
	in.hist = newHistogramsFor(m.engine, in.cfg.MaxModelLen)
	in.cnt.acceptedPos = make([]float64, in.cfg.NumSpeculativeTokens)
	in.setGPUs(c)
	m.instances = append(m.instances, in)
	return in
}

// setGPUs (re)builds the instance's GPU group after a tensor-parallel change.
func (in *instance) setGPUs(c *Cluster) {
	tp := in.cfg.TensorParallelSize
	old := in.gpus
	in.gpus = make([]gpuState, tp)
	for i := range in.gpus {
		if i < len(old) {
			in.gpus[i] = old[i]
			continue
		}
		id := c.gpus
		c.gpus++
		h := uint64(c.seed)*0x9e3779b97f4a7c15 + uint64(id)*0xbf58476d1ce4e5b9
		gs := gpuState{index: i, clock: 1, throttle: 1,
			uuid:    fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(h), uint16(h>>32), uint16(h>>48), uint16(id), h&0xffffffffffff),
			bus:     fmt.Sprintf("00000000:%02X:00.0", []int{0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB}[i%8]),
			offsetC: float64(int(h%7)) - 3,
		}
		gs.tempC = H100.AmbientC + gs.offsetC + H100.ThermalCPerW*250
		gs.memTempC = gs.tempC + 4
		in.gpus[i] = gs
	}
}

// Target is one instance's scrape endpoints: paths on Handler.
type Target struct {
	Model, Instance, EnginePath, GPUPath string
	// Engine is the engine whose /metrics EnginePath serves.
	Engine metrics.Engine
}

// Targets lists every instance's endpoints, in model then instance order.
func (c *Cluster) Targets() []Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Target
	for _, m := range c.models {
		for _, in := range m.instances {
			out = append(out, Target{Model: m.spec.Name, Instance: in.name, Engine: m.engine,
				EnginePath: "/engines/" + in.name + "/metrics", GPUPath: "/gpus/" + in.name + "/metrics"})
		}
	}
	return out
}

// Now returns the cluster's simulated time: the instant of the last step.
func (c *Cluster) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance steps the model forward to now. It is a no-op when now is not
// after the last step.
func (c *Cluster) Advance(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(now)
}

func (c *Cluster) advance(now time.Time) {
	if !now.After(c.now) {
		return
	}
	sinceFlush := time.Duration(0)
	for c.now.Before(now) {
		dt := min(c.step, now.Sub(c.now))
		c.stepAll(dt)
		c.now = c.now.Add(dt)
		c.stepped = true
		sinceFlush += dt
		if sinceFlush >= flushEvery {
			c.flushAll()
			sinceFlush = 0
		}
	}
	c.flushAll()
}

func (c *Cluster) flushAll() {
	for _, m := range c.models {
		for _, in := range m.instances {
			in.flush()
		}
	}
}

// loadFactor is the traffic level at t relative to the weekday peak: a
// business-hours peak around 15:00 UTC, a night trough around 03:00 UTC,
// and quieter weekends.
func loadFactor(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60
	day := 0.5 - 0.5*math.Cos(2*math.Pi*(h-3)/24)
	f := 0.18 + 0.82*math.Pow(day, 1.4)
	switch t.Weekday() {
	case time.Saturday, time.Sunday:
		f *= 0.55
	}
	return f
}

func (c *Cluster) stepAll(d time.Duration) {
	dt := d.Seconds()
	mid := c.now.Add(d / 2)
	for _, m := range c.models {
		// Slow fluctuation around the daily curve (Ornstein-Uhlenbeck,
		// 20-minute correlation, 8% spread).
		a := math.Exp(-dt / 1200)
		m.noise = m.noise*a + 0.08*math.Sqrt(1-a*a)*m.rng.NormFloat64()
		rate := m.spec.PeakRPS * float64(m.baseReps) * loadFactor(mid) * math.Exp(m.noise)
		// The router spreads the model's traffic evenly; a fault may send
		// part of an instance's share to another pool (keep < 1).
		total := 0.0
		for _, in := range m.instances {
			total += in.weight
		}
		for _, in := range m.instances {
			ph := c.physicsFor(in, mid)
			m.gatewayPath(&ph)
			share := 0.0
			if total > 0 {
				share = in.weight / total
			}
			in.step(dt, rate*share*ph.keep, ph)
		}
	}
}

// Run calls Advance(time.Now()) every tick until ctx is done.
func (c *Cluster) Run(ctx context.Context, tick time.Duration) {
	if tick <= 0 {
		tick = 5 * time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	c.Advance(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.Advance(now)
		}
	}
}

// Label is one name/value pair of a series.
type Label struct{ Name, Value string }

// Sample is one series value at one instant, as Backfill emits it.
type Sample struct {
	// Key is a stable unique id of the series (same key = same series).
	Key string
	// Labels include __name__ and the target label pod=<instance>:
	// exactly the labels the live scrape of the same series carries,
	// before the scraper adds job and instance. The slice is shared
	// between calls; copy it to keep it.
	Labels []Label
	T      time.Time
	V      float64
}

// Backfill runs the model from `from` to `to` at `step` and emits every
// series' value at each step, as a scrape at that instant would have seen it
// (counters cumulative, histogram buckets cumulative). It leaves the
// cluster's state at `to`, so live scraping continues seamlessly. A cluster
// that has not stepped yet starts at `from`.
func (c *Cluster) Backfill(from, to time.Time, step time.Duration, emit func(Sample) error) error {
	if step <= 0 {
		return errors.New("sim: backfill: step must be positive")
	}
	if to.Before(from) {
		return fmt.Errorf("sim: backfill: end %s is before start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if from.Before(c.now) {
		if c.stepped {
			return fmt.Errorf("sim: backfill: start %s is before the cluster's time %s", from.Format(time.RFC3339), c.now.Format(time.RFC3339))
		}
		c.now = from.UTC()
	}
	for t := from; !t.After(to); t = t.Add(step) {
		c.advance(t)
		if err := c.emitAll(t, emit); err != nil {
			return fmt.Errorf("sim: backfill at %s: %w", t.Format(time.RFC3339), err)
		}
	}
	c.advance(to)
	return nil
}

func (c *Cluster) emitAll(t time.Time, emit func(Sample) error) error {
	for _, m := range c.models {
		for _, in := range m.instances {
			for _, kind := range []pageKind{pageEngine, pageGPU} {
				if err := in.page(kind, m.dcgm).emit(t, emit); err != nil {
					return err
				}
			}
		}
	}
	return c.gatewayPage().emit(t, emit)
}

// findInstance returns the instance named name of the model, or nil.
func (c *Cluster) findModel(name string) *model {
	for _, m := range c.models {
		if m.spec.Name == name || m.spec.PodPrefix == name {
			return m
		}
	}
	return nil
}

// Config returns the engine configuration of one instance, or of a model's
// first instance when scope.Instance is empty.
func (c *Cluster) Config(scope metrics.Scope) (EngineConfig, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ins, err := c.scopeInstances(scope)
	if err != nil {
		return EngineConfig{}, err
	}
	return ins[0].cfg, nil
}

// SetConfig applies an engine configuration to one instance, or to every
// instance of a model when scope.Instance is empty. A change of Replicas
// (model scope only) starts or stops instances; a change of
// TensorParallelSize regroups the GPUs; other changes take effect at the
// next step, as after an engine restart with the new flags.
func (c *Cluster) SetConfig(scope metrics.Scope, cfg EngineConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("sim: set config of %s: %w", scope, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ins, err := c.scopeInstances(scope)
	if err != nil {
		return err
	}
	m := ins[0].model
	if scope.Instance != "" && cfg.Replicas != ins[0].cfg.Replicas {
		return fmt.Errorf("sim: set config of %s: replicas can only change for a whole model", scope)
	}
	for _, in := range ins {
		c.reconfigure(in, cfg)
	}
	if scope.Instance == "" {
		m.cfg = cfg
		for len(m.instances) < cfg.Replicas {
			c.addInstance(m)
		}
		if len(m.instances) > cfg.Replicas {
			m.instances = m.instances[:cfg.Replicas]
		}
		c.gateway = nil
	}
	return nil
}

func (c *Cluster) reconfigure(in *instance, cfg EngineConfig) {
	old := in.cfg
	in.cfg = cfg
	if cfg.MaxModelLen != old.MaxModelLen {
		in.hist.prompt = newHistogram(buckets125(cfg.MaxModelLen))
		in.hist.generation = newHistogram(buckets125(cfg.MaxModelLen))
	}
	if n := cfg.NumSpeculativeTokens; n != len(in.cnt.acceptedPos) {
		pos := make([]float64, n)
		copy(pos, in.cnt.acceptedPos)
		in.cnt.acceptedPos = pos
	}
	if cfg.TensorParallelSize != old.TensorParallelSize {
		in.setGPUs(c)
	}
	in.layouts = [3]*page{}
	in.histFams = nil
	c.gateway = nil
}

func (c *Cluster) scopeInstances(scope metrics.Scope) ([]*instance, error) {
	m := c.findModel(scope.Model)
	if m == nil {
		return nil, fmt.Errorf("sim: unknown model %q (have %s)", scope.Model, c.modelNames())
	}
	if scope.Instance == "" {
		return m.instances, nil
	}
	name := scope.Instance
	if _, err := strconv.Atoi(name); err == nil {
		name = m.spec.PodPrefix + "-" + name
	}
	for _, in := range m.instances {
		if in.name == name {
			return []*instance{in}, nil
		}
	}
	for _, in := range m.instances {
		if in.name == scope.Instance {
			return []*instance{in}, nil
		}
	}
	var names []string
	for _, in := range m.instances {
		names = append(names, in.name)
	}
	return nil, fmt.Errorf("sim: model %s has no instance %q (have %v)", m.spec.Name, scope.Instance, names)
}

func (c *Cluster) modelNames() string {
	var names []string
	for _, m := range c.models {
		names = append(names, m.spec.Name)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
