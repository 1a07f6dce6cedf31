package sim

import (
	"fmt"
	"math"
	"strconv"

	"github.com/casebook/casebook/metrics"
)

// This file holds the operations an engineer performs on a deployment
// besides changing engine flags: moving replicas to other nodes, changing
// the router's weights and the clients' path to the engines. Suggested
// actions that are not engine flags are applied through them.

// Drain moves the instances of scope to fresh nodes, as cordoning and
// draining their node does: each keeps its name and configuration, gets a
// new tensor-parallel GPU group on a new host, and leaves behind the
// host-bound faults (throttling, a co-tenant, a failing GPU) of the node
// it ran on. Its in-flight work is lost.
func (c *Cluster) Drain(scope metrics.Scope) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ins, err := c.scopeInstances(scope)
	if err != nil {
		return fmt.Errorf("sim: drain: %w", err)
	}
	for _, in := range ins {
		in.host = "gpu-node-" + strconv.Itoa(c.hosts)
		c.hosts++
		in.gpus = nil
		in.setGPUs(c)
		in.queue, in.running, in.waiting, in.kvUsage, in.wStat = 0, 0, 0, 0, 0
		in.layouts = [3]*page{}
	}
	c.gateway = nil
	return nil
}

// Route sets the router's weight of the instances of scope (1 is the
// default; 0 stops sending them traffic, as taking a replica out of the
// load balancer does).
func (c *Cluster) Route(scope metrics.Scope, weight float64) error {
	if math.IsNaN(weight) || weight < 0 || weight > 100 {
		return fmt.Errorf("sim: route: weight %g is outside 0..100", weight)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ins, err := c.scopeInstances(scope)
	if err != nil {
		return fmt.Errorf("sim: route: %w", err)
	}
	for _, in := range ins {
		in.weight = weight
	}
	total := 0.0
	for _, in := range ins[0].model.instances {
		total += in.weight
	}
	if total == 0 {
		for _, in := range ins {
			in.weight = 1
		}
		return fmt.Errorf("sim: route: model %s would have no instance left in the router", ins[0].model.spec.Name)
	}
	return nil
}

// Gateway paths clients can take to a model's engines.
const (
	PathGateway = ""        // the primary gateway (the default)
	PathStandby = "standby" // the standby gateway, on its own network path
	PathDirect  = "direct"  // straight to the engine service, no gateway hop
)

// SetGatewayPath sends a model's clients along path, with replicas gateway
// instances on it (0 keeps the current number). A transport fault sits on
// the primary gateway's hop: the standby path and the direct path do not
// see it, and more gateway replicas share its congestion.
func (c *Cluster) SetGatewayPath(model, path string, replicas int) error {
	switch path {
	case PathGateway, PathStandby, PathDirect:
	default:
		return fmt.Errorf("sim: gateway path %q is not %q, %q or %q", path, PathGateway, PathStandby, PathDirect)
	}
	if replicas < 0 || replicas > 16 {
		return fmt.Errorf("sim: gateway replicas %d is outside 0..16", replicas)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.findModel(model)
	if m == nil {
		return fmt.Errorf("sim: gateway path: unknown model %q (have %s)", model, c.modelNames())
	}
	m.gwVia = path
	if replicas > 0 {
		m.gwReps = replicas
	}
	return nil
}

// gatewayPath applies the model's client path to the physics: a transport
// fault's delay is queueing on the primary gateway's congested hop, which
// the other paths avoid and which falls in proportion to the gateway
// replicas sharing it.
func (m *model) gatewayPath(ph *physics) {
	switch m.gwVia {
	case PathStandby:
		ph.netDelayS = 0
	case PathDirect:
		ph.netDelayS = 0
		ph.gwBaseS = 0.002
	default:
		ph.netDelayS /= float64(max(1, m.gwReps))
	}
}
