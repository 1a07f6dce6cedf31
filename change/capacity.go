package change

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
)

// GPU is what the capacity check knows of one GPU, from DCGM
// (dcgm-exporter's Hostname, gpu and UUID labels) over the check window.
type GPU struct {
	Host string `json:"host"`
	GPU  string `json:"gpu"`
	UUID string `json:"uuid,omitempty"`
	// Engine names the engine process on the GPU (the pod label of
	// dcgm-exporter, or a configured target); "" means none.
	Engine string `json:"engine,omitempty"`
	// MaxUtil is the highest utilisation over the window, 0..1
	// (DCGM_FI_PROF_SM_ACTIVE, else DCGM_FI_DEV_GPU_UTIL / 100).
	MaxUtil float64 `json:"max_util"`
	// Samples is how many readings the window held; 0 means no data.
	Samples int `json:"samples"`
}

// IdleUtil is the utilisation below which a GPU with no engine counts as
// idle (a healthy idle H100 reads 0%; monitoring agents add a little).
const IdleUtil = 0.05

// Capacity is the answer of the capacity check.
type Capacity struct {
	Window  time.Duration `json:"window_ns"`
	Checked int           `json:"checked"`
	Idle    []GPU         `json:"idle"`
	// Replicas is how many more replicas of the model the idle GPUs can
	// hold, with each replica's GPUs on one host.
	Replicas int    `json:"replicas"`
	Summary  string `json:"summary"`
}

// CheckCapacity looks for idle GPUs: no engine process and utilisation
// below IdleUtil for the whole window. gpusPerReplica is the tensor-parallel
// size a new replica needs on one host.
func CheckCapacity(gpus []GPU, window time.Duration, gpusPerReplica int) Capacity {
	return CheckCapacityIn("", gpus, window, gpusPerReplica)
}

// CheckCapacityIn is CheckCapacity with the summary in lang ("zh-CN";
// English otherwise).
func CheckCapacityIn(lang string, gpus []GPU, window time.Duration, gpusPerReplica int) Capacity {
	l := locale(lang)
	gpusPerReplica = max(1, gpusPerReplica)
	c := Capacity{Window: window, Checked: len(gpus)}
	perHost := map[string]int{}
	for _, g := range gpus {
		if g.Engine == "" && g.Samples > 0 && g.MaxUtil < IdleUtil {
			c.Idle = append(c.Idle, g)
			perHost[g.Host]++
		}
	}
	sort.Slice(c.Idle, func(i, j int) bool {
		if c.Idle[i].Host != c.Idle[j].Host {
			return c.Idle[i].Host < c.Idle[j].Host
		}
		return c.Idle[i].GPU < c.Idle[j].GPU
	})
	var hosts []string
	for h, n := range perHost {
		c.Replicas += n / gpusPerReplica
		hosts = append(hosts, fmt.Sprintf("%s (%d)", h, n))
	}
	sort.Strings(hosts)
	mins := int(window.Minutes())
	switch {
	case len(gpus) == 0:
		c.Summary = l.T("cr.capacity_no_data")
	case len(c.Idle) == 0:
		c.Summary = l.T("cr.capacity_none", len(gpus), mins)
	case c.Replicas == 0:
		c.Summary = l.T("cr.capacity_no_host", len(c.Idle), mins, strings.Join(hosts, ", "), gpusPerReplica)
	default:
		c.Summary = l.T("cr.capacity_room", len(c.Idle), mins, strings.Join(hosts, ", "), c.Replicas, gpusPerReplica)
	}
	return c
}

// ScaleOut reports whether an action needs GPUs it does not hold now
// (more replicas, a larger tensor-parallel group, a move to other
// nodes), so that it needs a capacity check first.
func ScaleOut(a diagnose.Action) bool {
	switch a.Knob {
	case "replicas":
		return !strings.HasPrefix(strings.TrimSpace(a.Proposed), "-")
	case "tensor_parallel_size":
		return a.Proposed == "double" || strings.Contains(a.Proposed, "x 2")
	}
	return a.ID == "drain_node"
}

// locale is the Locale of a language code; English for "" or any code
// the console does not speak.
func locale(lang string) *i18n.Locale {
	t, _ := i18n.Parse(lang)
	return i18n.New(t)
}
