package demo

import (
	"context"
	"net/http"
	"time"

	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
)

// Cluster is the simulated cluster as a telemetry.DemoSource. Sim is the
// simulator itself, for the fault panel.
type Cluster struct {
	Sim *sim.Cluster
	buf []telemetry.Label
}

// Options is the cluster the console's demo runs: the simulator's
// defaults, except that the second model's node pool runs dcgm-exporter
// with its default counter file (no DCGM_FI_PROF_* profiling fields), as
// many clusters do, so that the demo shows what a scope without them
// lacks and which rules infer instead.
func Options() sim.Options {
	return sim.Options{ModelDCGMFields: map[string]sim.DCGMFields{sim.Models[1].Name: sim.DCGMDefault}}
}

// New starts a simulated cluster.
func New(opts sim.Options) *Cluster { return &Cluster{Sim: sim.New(opts)} }

// Handler serves the simulated /metrics endpoints.
func (c *Cluster) Handler() http.Handler { return c.Sim.Handler() }

// Run advances the simulator with the wall clock until ctx ends.
func (c *Cluster) Run(ctx context.Context, tick time.Duration) { c.Sim.Run(ctx, tick) }

// Targets lists each instance's engine and GPU exporter endpoints, and the
// gateway's, with the job and pod labels of a Kubernetes scrape.
func (c *Cluster) Targets() []telemetry.Target {
	var out []telemetry.Target
	for _, st := range c.Sim.Targets() {
		out = append(out,
			telemetry.Target{URL: st.EnginePath, Labels: map[string]string{"job": telemetry.JobEngine, telemetry.GPUInstanceLabel: st.Instance}},
			telemetry.Target{URL: st.GPUPath, Labels: map[string]string{"job": telemetry.JobGPU, telemetry.GPUInstanceLabel: st.Instance}},
		)
	}
	return append(out, telemetry.Target{URL: sim.GatewayPath, Labels: map[string]string{"job": telemetry.JobGateway}})
}

// Backfill runs the simulator over [from, to] and emits each sample.
func (c *Cluster) Backfill(from, to time.Time, step time.Duration, emit func(telemetry.DemoSample) error) error {
	return c.Sim.Backfill(from, to, step, func(s sim.Sample) error {
		c.buf = c.buf[:0]
		for _, l := range s.Labels {
			c.buf = append(c.buf, telemetry.Label(l))
		}
		return emit(telemetry.DemoSample{Key: s.Key, Labels: c.buf, T: s.T, V: s.V})
	})
}
