package telemetry

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// GPU join labels. dcgm-exporter in Kubernetes mode labels each GPU with
// the pod, namespace and container that hold it. Behind a ServiceMonitor
// with honorLabels false (the Helm chart's default) Prometheus renames
// those to exported_pod and exported_namespace and sets pod to the
// exporter's own pod; --use-old-namespace gives pod_name and
// pod_namespace.
var gpuJoinCandidates = []struct{ instance, namespace string }{
	{"exported_pod", "exported_namespace"},
	{"pod", "namespace"},
	{"pod_name", "pod_namespace"},
}

// EngineNamespaceLabel is the label that carries an engine's Kubernetes
// namespace on its series (set by Kubernetes service discovery).
const EngineNamespaceLabel = "namespace"

// LabelAuto asks for a join label to be detected from the data.
const LabelAuto = "auto"

// JoinOptions configure how GPU series join engine instances; empty or
// LabelAuto fields are detected.
type JoinOptions struct {
	// InstanceLabel is the GPU series' label holding the engine's pod.
	InstanceLabel string
	// NamespaceLabel is the GPU series' label holding the pod's
	// namespace; "none" keeps namespaces out of the join.
	NamespaceLabel string
}

// EngineRef is one engine instance as its series name it.
type EngineRef struct {
	Model, Instance, Namespace string
}

// GPUJoin says how GPU series join engine instances, and what did not
// join.
type GPUJoin struct {
	// InstanceLabel and NamespaceLabel are the GPU labels of the join;
	// InstanceLabel is "" when no GPU series names any engine instance.
	InstanceLabel  string
	NamespaceLabel string
	// HostLabel is dcgm-exporter's host label as the source spells it
	// (Hostname, or hostname on newer builds); "" when absent.
	HostLabel string
	// Detected is true when the labels were found in the data rather than
	// configured.
	Detected bool
	// GPUs is the number of GPU series seen; Joined maps each engine
	// instance ("namespace/pod" when namespaced) to the GPUs joined to it.
	GPUs   int
	Joined map[string]int
	// Unjoined are the engine instances no GPU series names, sorted.
	Unjoined []string
	// Why explains a join that found nothing, in words.
	Why string
	// At is when the join was computed (zero for a pure computation).
	At time.Time
}

// OK reports whether every engine instance has GPUs.
func (j GPUJoin) OK() bool { return j.InstanceLabel != "" && len(j.Unjoined) == 0 }

// Summary is one line for /readyz and logs.
func (j GPUJoin) Summary() string {
	switch {
	case j.InstanceLabel == "":
		return "GPU series join no engine: " + j.Why
	case len(j.Unjoined) > 0:
		return fmt.Sprintf("GPU series join engines through %s, but %d engine instance(s) have no GPU series: %s",
			j.labels(), len(j.Unjoined), strings.Join(j.Unjoined, ", "))
	}
	return fmt.Sprintf("GPU series join every engine through %s", j.labels())
}

func (j GPUJoin) labels() string {
	s := j.InstanceLabel
	if j.NamespaceLabel != "" {
		s += " and " + j.NamespaceLabel
	}
	return s
}

// DetectGPUJoin finds the labels that join GPU series (their label sets)
// to the engine instances: the candidate whose values name the most
// engine instances wins, exported_pod before pod before pod_name on a
// tie. Configured labels in opts are used as given.
func DetectGPUJoin(engines []EngineRef, gpus []map[string]string, opts JoinOptions) GPUJoin {
	j := GPUJoin{GPUs: len(gpus), Joined: map[string]int{}}
	for _, g := range gpus {
		if g["hostname"] != "" {
			j.HostLabel = "hostname"
		} else if g["Hostname"] != "" && j.HostLabel == "" {
			j.HostLabel = "Hostname"
		}
	}
	namespaced := false
	for _, e := range engines {
		if e.Namespace != "" {
			namespaced = true
		}
	}
	type choice struct{ inst, ns string }
	var cands []choice
	if opts.InstanceLabel != "" && opts.InstanceLabel != LabelAuto {
		ns := opts.NamespaceLabel
		if ns == "" || ns == LabelAuto {
			ns = ""
			for _, c := range gpuJoinCandidates {
				if c.instance == opts.InstanceLabel {
					ns = c.namespace
				}
			}
		}
		cands = []choice{{opts.InstanceLabel, ns}}
	} else {
		j.Detected = true
		for _, c := range gpuJoinCandidates {
			ns := c.namespace
			if opts.NamespaceLabel != "" && opts.NamespaceLabel != LabelAuto {
				ns = opts.NamespaceLabel
			}
			cands = append(cands, choice{c.instance, ns})
		}
	}
	if opts.NamespaceLabel == "none" {
		for i := range cands {
			cands[i].ns = ""
		}
	}
	best, bestScore := choice{}, 0
	var bestJoined map[string]int
	for _, c := range cands {
		useNS := namespaced && c.ns != "" && anyHas(gpus, c.ns)
		joined := map[string]int{}
		score := 0
		for _, g := range gpus {
			v := g[c.inst]
			if v == "" {
				continue
			}
			for _, e := range engines {
				if e.Instance != v || (useNS && e.Namespace != "" && g[c.ns] != e.Namespace) {
					continue
				}
				// Without namespaces a GPU joins every engine of its
				// pod's name: the scopes cannot tell them apart.
				joined[e.key()]++
				score++
			}
		}
		if score > bestScore {
			best, bestScore, bestJoined = c, score, joined
			if !useNS {
				best.ns = ""
			}
		}
	}
	if bestScore == 0 {
		configured := ""
		if !j.Detected {
			configured = cands[0].inst
		}
		j.Why = whyNoJoin(engines, gpus, configured)
		for _, e := range engines {
			j.Unjoined = append(j.Unjoined, e.key())
		}
		sort.Strings(j.Unjoined)
		return j
	}
	j.InstanceLabel, j.NamespaceLabel, j.Joined = best.inst, best.ns, bestJoined
	for _, e := range engines {
		if j.Joined[e.key()] == 0 {
			j.Unjoined = append(j.Unjoined, e.key())
		}
	}
	sort.Strings(j.Unjoined)
	j.Unjoined = dedupe(j.Unjoined)
	return j
}

func (e EngineRef) key() string {
	if e.Namespace != "" {
		return e.Namespace + "/" + e.Instance
	}
	return e.Instance
}

func anyHas(gpus []map[string]string, label string) bool {
	for _, g := range gpus {
		if g[label] != "" {
			return true
		}
	}
	return false
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// whyNoJoin says what the GPU series carry when none names an engine.
func whyNoJoin(engines []EngineRef, gpus []map[string]string, configured string) string {
	switch {
	case len(gpus) == 0:
		return "no GPU series (DCGM_FI_DEV_GPU_UTIL) in the source"
	case len(engines) == 0:
		return "no engine series (" + livenessNames() + ") in the source"
	}
	var present []string
	for _, c := range gpuJoinCandidates {
		if anyHas(gpus, c.instance) {
			present = append(present, c.instance+" ("+exampleValue(gpus, c.instance)+")")
		}
	}
	if configured != "" && !anyHas(gpus, configured) {
		if len(present) == 0 {
			return "no GPU series carries the configured label " + configured + ", nor any other pod label"
		}
		return "no GPU series carries the configured label " + configured + "; they carry " + strings.Join(present, ", ")
	}
	if len(present) == 0 {
		return "the GPU series carry no pod label (pod, exported_pod or pod_name) with a value: run dcgm-exporter in Kubernetes mode, or join by host"
	}
	if configured != "" {
		for _, c := range gpuJoinCandidates {
			if c.instance != configured && namesAnEngine(gpus, engines, c.instance) {
				return "the configured label " + configured + " (" + exampleValue(gpus, configured) + ") names no engine instance (" +
					exampleEngine(engines) + "), but " + c.instance + " does: set --gpu-instance-label " + c.instance + " or auto"
			}
		}
	}
	return "no GPU series' " + strings.Join(present, ", ") + " names an engine instance (" + exampleEngine(engines) + "); set --gpu-instance-label"
}

func namesAnEngine(gpus []map[string]string, engines []EngineRef, label string) bool {
	for _, g := range gpus {
		for _, e := range engines {
			if g[label] != "" && g[label] == e.Instance {
				return true
			}
		}
	}
	return false
}

func exampleValue(gpus []map[string]string, label string) string {
	for _, g := range gpus {
		if v := g[label]; v != "" {
			return "e.g. " + v
		}
	}
	return ""
}

func exampleEngine(engines []EngineRef) string {
	return "e.g. " + engines[0].key()
}

// joinCacheFor is how long a computed GPU join is reused.
const joinCacheFor = time.Minute

// joinCache holds the latest GPU join of a deployment.
type joinCache struct {
	mu      sync.Mutex
	j       GPUJoin
	engines []EngineRef
	ok      bool
}

// GPUJoin returns how the source's GPU series join its engine instances,
// computed from the last day's engines and the last ten minutes' GPUs and
// reused for a minute. It records the outcome as the "gpu join" source
// status, so that /readyz and the status panels say when GPUs do not join.
func (t *Telemetry) GPUJoin(ctx context.Context) (GPUJoin, error) {
	j, _, err := t.gpuJoin(ctx)
	return j, err
}

func (t *Telemetry) gpuJoin(ctx context.Context) (GPUJoin, []EngineRef, error) {
	t.join.mu.Lock()
	if t.join.ok && time.Since(t.join.j.At) < joinCacheFor {
		j, e := t.join.j, t.join.engines
		t.join.mu.Unlock()
		return j, e, nil
	}
	t.join.mu.Unlock()

	inst := t.opts.InstanceLabel
	rs, err := t.seenInLookback(ctx, EngineNamespaceLabel)
	if err != nil {
		return GPUJoin{}, nil, fmt.Errorf("telemetry: gpu join: engines: %w", err)
	}
	var engines []EngineRef
	for _, r := range rs {
		if r.Labels["model_name"] == "" || r.Labels[inst] == "" {
			continue
		}
		engines = append(engines, EngineRef{Model: r.Labels["model_name"], Instance: r.Labels[inst], Namespace: r.Labels[EngineNamespaceLabel]})
	}
	labels := []string{"UUID", "gpu", "Hostname", "hostname"}
	for _, c := range gpuJoinCandidates {
		labels = append(labels, c.instance, c.namespace)
	}
	if t.opts.GPUInstanceLabel != "" && t.opts.GPUInstanceLabel != LabelAuto {
		labels = append(labels, t.opts.GPUInstanceLabel)
	}
	if l := t.opts.GPUNamespaceLabel; l != "" && l != LabelAuto && l != "none" {
		labels = append(labels, l)
	}
	var gpus []map[string]string
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK"} {
		rs, err = t.querier.Instant(ctx, "group by ("+strings.Join(labels, ", ")+") (last_over_time("+name+"[10m]))", t.now())
		if err != nil {
			return GPUJoin{}, nil, fmt.Errorf("telemetry: gpu join: gpus: %w", err)
		}
		for _, r := range rs {
			gpus = append(gpus, r.Labels)
		}
		if len(gpus) > 0 {
			break
		}
	}
	j := DetectGPUJoin(engines, gpus, JoinOptions{InstanceLabel: t.opts.GPUInstanceLabel, NamespaceLabel: t.opts.GPUNamespaceLabel})
	j.At = t.now()
	if len(engines) > 0 && len(gpus) > 0 && !j.OK() {
		t.status.fail(joinSource, fmt.Errorf("%s", j.Summary()))
	} else if len(gpus) > 0 {
		t.status.ok(joinSource)
	}
	t.join.mu.Lock()
	t.join.j, t.join.engines, t.join.ok = j, engines, true
	t.join.mu.Unlock()
	return j, engines, nil
}

// joinSource is the status board's name for the GPU join.
const joinSource = "gpu join"
