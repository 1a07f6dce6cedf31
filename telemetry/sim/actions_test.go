package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// operations apply the suggested actions that are not engine flags: what
// the engineer does to the deployment, as the simulator models it.
var operations = map[string]func(c *Cluster, scope metrics.Scope, fault string) error{
	"drain_node": func(c *Cluster, scope metrics.Scope, _ string) error { return c.Drain(scope) },
	"stop_routing_to_replica": func(c *Cluster, scope metrics.Scope, _ string) error {
		return c.Route(scope, 0)
	},
	"failover_gateway": func(c *Cluster, scope metrics.Scope, _ string) error {
		return c.SetGatewayPath(scope.Model, PathStandby, 0)
	},
	"bypass_gateway_hop": func(c *Cluster, scope metrics.Scope, _ string) error {
		return c.SetGatewayPath(scope.Model, PathDirect, 0)
	},
	"scale_gateway": func(c *Cluster, scope metrics.Scope, _ string) error {
		return c.SetGatewayPath(scope.Model, PathGateway, 2)
	},
	// The prefix-miss fault is the client's template change itself:
	// reverting the template is removing it.
	"stabilise_prompt_prefix": func(c *Cluster, _ metrics.Scope, fault string) error {
		if !c.RemoveFault(fault) {
			return fmt.Errorf("no fault %s", fault)
		}
		return nil
	},
}

// errNoChange marks a proposal that leaves the knob as it is (prefix
// caching that is already on): nothing to apply.
var errNoChange = errors.New("no change")

// errNotSimulated marks an action the simulator has no physics for (a
// read-only check, a client-side change).
var errNotSimulated = errors.New("not simulated")

// applyAction applies one action to the cluster: a knob through the
// change package's concrete proposal and SetConfig, anything else through
// operations.
func applyAction(c *Cluster, scope metrics.Scope, fault string, a diagnose.Action, observed metrics.Values) (string, error) {
	modelScope := metrics.Scope{Model: scope.Model}
	if op, ok := operations[a.ID]; ok {
		return a.ID, op(c, scope, fault)
	}
	if a.Knob == "" {
		return "", errNotSimulated
	}
	cfg, err := c.Config(modelScope)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	current, err := change.ParseConfig(raw)
	if err != nil {
		return "", err
	}
	p, err := change.Propose(a, current, observed, "")
	if err != nil {
		if errors.Is(err, change.ErrNeedValue) {
			return "", errNotSimulated
		}
		return "", err
	}
	k, _ := change.LookupKnob(a.Knob)
	x, err := k.Parse(p.Proposed)
	if err != nil {
		return "", err
	}
	switch a.Knob {
	case "gpu_memory_utilization":
		cfg.GPUMemoryUtilization = x
	case "max_num_seqs":
		cfg.MaxNumSeqs = int(x)
	case "max_num_batched_tokens":
		cfg.MaxNumBatchedTokens = int(x)
	case "max_model_len":
		cfg.MaxModelLen = int(x)
	case "enable_prefix_caching":
		cfg.EnablePrefixCaching = x != 0
	case "num_speculative_tokens":
		cfg.NumSpeculativeTokens = int(x)
	case "tensor_parallel_size":
		cfg.TensorParallelSize = int(x)
	case "replicas":
		cfg.Replicas = int(x)
	default:
		return "", fmt.Errorf("no engine field for knob %s", a.Knob)
	}
	desc := fmt.Sprintf("%s %s -> %s", a.Knob, p.Current, p.Proposed)
	if p.Current == p.Proposed {
		return desc, fmt.Errorf("%w: %s", errNoChange, p.Reason)
	}
	return desc, c.SetConfig(modelScope, cfg)
}

// modelValues is the catalog over the model's instances, averaged over
// minutes one-minute windows ending at end.
func modelValues(c *Cluster, model string, end time.Time, minutes int) metrics.Values {
	out := metrics.Values{}
	n := map[string]float64{}
	start := end.Add(-time.Duration(minutes) * time.Minute)
	c.Advance(start)
	m := c.findModel(model)
	prev := capturesOf(m.instances)
	for i := 1; i <= minutes; i++ {
		c.Advance(start.Add(time.Duration(i) * time.Minute))
		cur := capturesOf(m.instances)
		for id, v := range catalogValues(prev, cur, true) {
			out[id] += v
			n[id]++
		}
		prev = cur
	}
	for id := range out {
		out[id] /= n[id]
	}
	return out
}

// actionScope is where each cause's fault is injected for the action
// test: the node-level faults on one instance, so that moving or
// cordoning it is a possible remedy; the rest on the whole model.
func actionScope(cause string) metrics.Scope {
	s := metrics.Scope{Model: Models[0].Name}
	switch cause {
	case metrics.CauseGPUThrottling, metrics.CauseEngineErrors:
		s.Instance = Models[0].PodPrefix + "-0"
	}
	return s
}

// moved reports whether after moved from before in dir ("up" or "down")
// by more than the noise of a five-minute mean: 2% of the larger value,
// and an absolute floor for rates that sit near zero.
func moved(before, after float64, dir string) bool {
	tol := math.Max(0.02*math.Max(math.Abs(before), math.Abs(after)), 1e-4)
	switch dir {
	case "up":
		return after-before > tol
	case "down":
		return before-after > tol
	}
	return false
}

func TestEveryCauseHasThreeActionsTheSimulatorConfirms(t *testing.T) {
	onset := monday.Add(10 * time.Minute)
	applyAt := monday.Add(20 * time.Minute)
	end := monday.Add(35 * time.Minute)
	for _, cause := range metrics.FaultCauses() {
		t.Run(cause, func(t *testing.T) {
			scope := actionScope(cause)
			run := func(a *diagnose.Action) (metrics.Values, metrics.Values, string, error) {
				c := New(Options{Models: 1, Seed: 7, Start: monday})
				fault, err := c.Inject(Fault{Cause: cause, Scope: scope, Severity: 0.8, Start: onset})
				if err != nil {
					t.Fatal(err)
				}
				observed := modelValues(c, scope.Model, applyAt, 1)
				desc := ""
				if a != nil {
					var err error
					if desc, err = applyAction(c, scope, fault, *a, observed); err != nil {
						return nil, nil, desc, err
					}
				}
				return observed, modelValues(c, scope.Model, end, 5), desc, nil
			}
			_, without, _, err := run(nil)
			if err != nil {
				t.Fatal(err)
			}
			confirmed := 0
			for _, a := range diagnose.ActionsFor(cause) {
				_, with, desc, err := run(&a)
				if errors.Is(err, errNotSimulated) || errors.Is(err, errNoChange) {
					t.Logf("%s: not applied: %v", a.ID, err)
					continue
				}
				if err != nil {
					t.Errorf("%s: apply: %v", a.ID, err)
					continue
				}
				if len(a.Effects) == 0 {
					t.Errorf("%s: no expected effect to check", a.ID)
					continue
				}
				ok := true
				for _, e := range a.Effects {
					b, w := without[e.Metric], with[e.Metric]
					good := moved(b, w, e.Direction)
					t.Logf("%s (%s): %s %s: without %.4g, with %.4g (%+.1f%%) %v", a.ID, desc, e.Metric, e.Direction, b, w, 100*(w/b-1), good)
					if !good {
						ok = false
						t.Errorf("%s (%s): %s should go %s (%s): without the action %.4g, with it %.4g", a.ID, desc, e.Metric, e.Direction, e.Size, b, w)
					}
				}
				if ok {
					confirmed++
				}
			}
			if confirmed < 3 {
				t.Errorf("%d actions of %s have every expected effect confirmed, want at least 3", confirmed, cause)
			}
		})
	}
}
