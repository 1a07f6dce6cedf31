package sim

import "fmt"

// DCGMFields names which of dcgm-exporter's two shipped counter files the
// simulated exporter follows. The default file (default-counters.csv) leaves
// the profiling fields commented out, so most clusters see only
// DCGM_FI_DEV_GPU_UTIL: the share of time at least one kernel ran, which
// reads near 100% whenever the engine is busy, whatever the batch size. The
// profiling file (dcp-metrics-included.csv) adds DCGM_FI_PROF_SM_ACTIVE,
// _PIPE_TENSOR_ACTIVE and _DRAM_ACTIVE.
type DCGMFields string

const (
	// DCGMDefault: dcgm-exporter's default counters, no profiling fields.
	DCGMDefault DCGMFields = "default"
	// DCGMProfiling: the default counters plus the profiling fields.
	DCGMProfiling DCGMFields = "profiling"
)

// ParseDCGMFields reads a --dcgm-fields value; empty means profiling, the
// field set the simulator has always emitted.
func ParseDCGMFields(s string) (DCGMFields, error) {
	switch DCGMFields(s) {
	case "", DCGMProfiling:
		return DCGMProfiling, nil
	case DCGMDefault:
		return DCGMDefault, nil
	}
	return "", fmt.Errorf("dcgm fields %q: want %q or %q", s, DCGMDefault, DCGMProfiling)
}
