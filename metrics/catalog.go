package metrics

import (
	"strings"
	"time"
)

// Dimension is one of the four views of an inference service.
type Dimension string

// The four dimensions.
const (
	Latency     Dimension = "latency"
	Throughput  Dimension = "throughput"
	Utilization Dimension = "utilization"
	Quality     Dimension = "quality"
)

// Dimensions lists the four dimensions in display order.
var Dimensions = []Dimension{Latency, Throughput, Utilization, Quality}

// Direction says which way a metric moves when the service gets worse.
type Direction int

// Directions a metric can go bad in.
const (
	// Up means higher values are worse (latency, errors).
	Up Direction = 1
	// Down means lower values are worse (throughput, clocks, hit rates).
	Down Direction = -1
	// Both means a move either way is a problem (SM activity: idle is
	// waste, saturated is a bottleneck).
	Both Direction = 0
)

// String returns "up", "down" or "both".
func (d Direction) String() string {
	switch d {
	case Up:
		return "up"
	case Down:
		return "down"
	default:
		return "both"
	}
}

// Source names where a metric comes from.
type Source string

// Metric sources.
const (
	SourceEngine  Source = "engine"  // vLLM /metrics
	SourceGPU     Source = "gpu"     // dcgm-exporter /metrics or DCGM directly
	SourceGateway Source = "gateway" // the load balancer in front of the engines (optional)
)

// Metric is one catalog entry: the contract id, how to read it, and how to
// compute it with PromQL.
type Metric struct {
	ID        string
	Dimension Dimension
	Unit      string
	Bad       Direction
	Help      string
	Source    Source
	// Min and Max bound valid values; Max is 0 when unbounded. Values
	// outside are rejected at the snapshot boundary.
	Min, Max float64
	// PromQL is the expression template. $ENGINE and $GPU expand to the
	// label matchers of the scope (without braces), $WINDOW to a range
	// duration such as 1m, and $BY / $BYLE to the grouping clause of every
	// aggregation ("" and "by (le)" for one scope; "by (model_name, pod)"
	// when recording rules keep one series per scope).
	PromQL string
}

// Selectors restrict catalog queries to one scope. Each is a comma-separated
// list of PromQL label matchers without braces; empty means everything.
type Selectors struct {
	Engine string // matchers on vLLM and gateway series
	GPU    string // matchers on DCGM series
}

// Query expands the metric's PromQL template for a scope and rate window;
// the result is one series for the whole scope.
func (m Metric) Query(sel Selectors, window time.Duration) string {
	return m.QueryBy(sel, window, nil)
}

// QueryBy is Query keeping one series per distinct value of the by labels
// (for recording and alerting rules). GPU series carry no model_name label,
// so for GPU metrics only the labels other than model_name are kept.
func (m Metric) QueryBy(sel Selectors, window time.Duration, by []string) string {
	if m.Source == SourceGPU {
		var gpuBy []string
		for _, l := range by {
			if l != "model_name" {
				gpuBy = append(gpuBy, l)
			}
		}
		by = gpuBy
	}
	grouping, groupingLE := "", "by (le)"
	if len(by) > 0 {
		grouping = "by (" + strings.Join(by, ", ") + ") "
		groupingLE = "by (le, " + strings.Join(by, ", ") + ")"
	}
	q := strings.NewReplacer(
		"$ENGINE", sel.Engine,
		"$GPU", sel.GPU,
		"$WINDOW", FormatDuration(window),
		"$BYLE", groupingLE,
		"$BY ", grouping,
	).Replace(m.PromQL)
	// An empty selector followed by further matchers leaves "{," behind.
	return strings.ReplaceAll(q, "{,", "{")
}

// FormatDuration renders d as a PromQL duration (90s -> "90s", 2m -> "2m").
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		d = time.Minute
	}
	switch {
	case d%time.Hour == 0:
		return itoa(int64(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return itoa(int64(d/time.Minute)) + "m"
	case d%time.Second == 0:
		return itoa(int64(d/time.Second)) + "s"
	default:
		return itoa(int64(d/time.Millisecond)) + "ms"
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Metric ids from the snapshot contract.
const (
	GatewayE2E       = "gateway_e2e_ms"
	E2E              = "e2e_ms"
	E2EP99           = "e2e_p99_ms"
	TTFT             = "ttft_ms"
	TTFTP99          = "ttft_p99_ms"
	TPOT             = "tpot_ms"
	TPOTP99          = "tpot_p99_ms"
	QueueTime        = "queue_ms"
	PrefillTime      = "prefill_ms"
	DecodeTime       = "decode_ms"
	ThroughputRPS    = "throughput_rps"
	ArrivalRPS       = "arrival_rps"
	PromptTPS        = "prompt_tps"
	GenerationTPS    = "generation_tps"
	RunningSeqs      = "running_seqs"
	QueueDepth       = "queue_depth"
	MeanPromptTokens = "mean_prompt_tokens"
	SMUtil           = "gpu_sm_util"
	TensorActive     = "tensor_active"
	DRAMActive       = "dram_active"
	GPUMemUsedFrac   = "gpu_mem_used_frac"
	KVCacheUsage     = "kv_cache_usage"
	SMClock          = "sm_clock_mhz"
	MemClock         = "mem_clock_mhz"
	Power            = "power_w"
	GPUTemp          = "gpu_temp_c"
	KVCacheHitRate   = "kv_cache_hit_rate"
	RejectionRate    = "rejection_rate"
	ErrorRate        = "error_rate"
	PreemptionRate   = "preemption_rate"
)

// Gateway metric names. Gateways differ (Envoy, nginx, a custom router), so
// Casebook reads one documented convention: a histogram of request duration
// and a counter of arriving requests, labelled like the engine series.
const (
	GatewayDurationMetric = "gateway_request_duration_seconds"
	GatewayRequestsMetric = "gateway_requests_total"
)

func meanOf(hist string) string {
	return "1000 * sum $BY (rate(" + hist + "_sum{$ENGINE}[$WINDOW])) / sum $BY (rate(" + hist + "_count{$ENGINE}[$WINDOW]))"
}

func p99Of(hist string) string {
	return "1000 * histogram_quantile(0.99, sum $BYLE (rate(" + hist + "_bucket{$ENGINE}[$WINDOW])))"
}

func rateOf(counter string) string {
	return "sum $BY (rate(" + counter + "{$ENGINE}[$WINDOW]))"
}

// Catalog is the one definition of every metric, in the contract's order.
var Catalog = []Metric{
	{ID: GatewayE2E, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceGateway,
		Help:   "Mean end-to-end latency seen at the gateway or load balancer.",
		PromQL: meanOf(GatewayDurationMetric)},
	{ID: E2E, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "Mean engine end-to-end request latency.",
		PromQL: meanOf("vllm:e2e_request_latency_seconds")},
	{ID: E2EP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "p99 engine end-to-end request latency.",
		PromQL: p99Of("vllm:e2e_request_latency_seconds")},
	{ID: TTFT, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "Mean time to first token.",
		PromQL: meanOf("vllm:time_to_first_token_seconds")},
	{ID: TTFTP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "p99 time to first token.",
		PromQL: p99Of("vllm:time_to_first_token_seconds")},
	// TPOT is per output token: vLLM's per-request decode time / (tokens-1).
	// The inter-token latency histogram observes one interval per engine
	// step, and with speculative decoding a step emits several tokens, so it
	// is only the fallback for engines without the per-request histogram.
	{ID: TPOT, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help: "Mean time per output token (per-request decode time / output tokens).",
		PromQL: "(" + meanOf("vllm:request_time_per_output_token_seconds") + ") or (" +
			meanOf("vllm:inter_token_latency_seconds") + ")"},
	{ID: TPOTP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help: "p99 time per output token.",
		PromQL: "(" + p99Of("vllm:request_time_per_output_token_seconds") + ") or (" +
			p99Of("vllm:inter_token_latency_seconds") + ")"},
	{ID: QueueTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "Mean time a request waits in the engine queue.",
		PromQL: meanOf("vllm:request_queue_time_seconds")},
	{ID: PrefillTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "Mean prefill phase time.",
		PromQL: meanOf("vllm:request_prefill_time_seconds")},
	{ID: DecodeTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:   "Mean decode phase time.",
		PromQL: meanOf("vllm:request_decode_time_seconds")},
	{ID: ThroughputRPS, Dimension: Throughput, Unit: "req/s", Bad: Down, Source: SourceEngine,
		Help:   "Finished requests per second.",
		PromQL: rateOf("vllm:request_success_total")},
	{ID: ArrivalRPS, Dimension: Throughput, Unit: "req/s", Bad: Up, Source: SourceGateway,
		Help:   "Arriving requests per second, counted at the gateway.",
		PromQL: rateOf(GatewayRequestsMetric)},
	{ID: PromptTPS, Dimension: Throughput, Unit: "tok/s", Bad: Up, Source: SourceEngine,
		Help:   "Prompt (prefill) tokens processed per second.",
		PromQL: rateOf("vllm:prompt_tokens_total")},
	{ID: GenerationTPS, Dimension: Throughput, Unit: "tok/s", Bad: Down, Source: SourceEngine,
		Help:   "Generated tokens per second.",
		PromQL: rateOf("vllm:generation_tokens_total")},
	{ID: RunningSeqs, Dimension: Throughput, Unit: "count", Bad: Both, Source: SourceEngine,
		Help:   "Sequences in the running batch.",
		PromQL: "sum $BY (vllm:num_requests_running{$ENGINE})"},
	{ID: QueueDepth, Dimension: Throughput, Unit: "count", Bad: Up, Source: SourceEngine,
		Help:   "Requests waiting to be scheduled.",
		PromQL: "sum $BY (vllm:num_requests_waiting{$ENGINE})"},
	{ID: MeanPromptTokens, Dimension: Throughput, Unit: "tokens", Bad: Up, Source: SourceEngine,
		Help:   "Mean prompt length of finished requests.",
		PromQL: "sum $BY (rate(vllm:request_prompt_tokens_sum{$ENGINE}[$WINDOW])) / sum $BY (rate(vllm:request_prompt_tokens_count{$ENGINE}[$WINDOW]))"},
	{ID: SMUtil, Dimension: Utilization, Unit: "ratio", Bad: Both, Source: SourceGPU, Max: 1,
		Help:   "SM activity: DCGM profiling SM active, else GPU utilisation / 100.",
		PromQL: "avg $BY (DCGM_FI_PROF_SM_ACTIVE{$GPU}) or (avg $BY (DCGM_FI_DEV_GPU_UTIL{$GPU}) / 100)"},
	{ID: TensorActive, Dimension: Utilization, Unit: "ratio", Bad: Both, Source: SourceGPU, Max: 1,
		Help:   "Tensor pipe activity.",
		PromQL: "avg $BY (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{$GPU})"},
	{ID: DRAMActive, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceGPU, Max: 1,
		Help:   "Device memory bandwidth utilisation.",
		PromQL: "avg $BY (DCGM_FI_PROF_DRAM_ACTIVE{$GPU})"},
	{ID: GPUMemUsedFrac, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceGPU, Max: 1,
		Help:   "Framebuffer used / total.",
		PromQL: "sum $BY (DCGM_FI_DEV_FB_USED{$GPU}) / (sum $BY (DCGM_FI_DEV_FB_USED{$GPU}) + sum $BY (DCGM_FI_DEV_FB_FREE{$GPU}))"},
	{ID: KVCacheUsage, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:   "Engine KV-cache blocks in use.",
		PromQL: "avg $BY (vllm:kv_cache_usage_perc{$ENGINE}) or avg $BY (vllm:gpu_cache_usage_perc{$ENGINE})"},
	{ID: SMClock, Dimension: Utilization, Unit: "MHz", Bad: Down, Source: SourceGPU,
		Help:   "SM clock (minimum over the scope's GPUs: one slow GPU stalls a TP group).",
		PromQL: "min $BY (DCGM_FI_DEV_SM_CLOCK{$GPU})"},
	{ID: MemClock, Dimension: Utilization, Unit: "MHz", Bad: Down, Source: SourceGPU,
		Help:   "Memory clock (minimum over the scope's GPUs).",
		PromQL: "min $BY (DCGM_FI_DEV_MEM_CLOCK{$GPU})"},
	{ID: Power, Dimension: Utilization, Unit: "W", Bad: Up, Source: SourceGPU,
		Help:   "Board power (maximum over the scope's GPUs).",
		PromQL: "max $BY (DCGM_FI_DEV_POWER_USAGE{$GPU})"},
	{ID: GPUTemp, Dimension: Utilization, Unit: "C", Bad: Up, Source: SourceGPU,
		Help:   "GPU temperature (maximum over the scope's GPUs).",
		PromQL: "max $BY (DCGM_FI_DEV_GPU_TEMP{$GPU})"},
	{ID: KVCacheHitRate, Dimension: Quality, Unit: "ratio", Bad: Down, Source: SourceEngine, Max: 1,
		Help:   "Prefix-cache hits / queries, in tokens.",
		PromQL: "sum $BY (rate(vllm:prefix_cache_hits_total{$ENGINE}[$WINDOW])) / sum $BY (rate(vllm:prefix_cache_queries_total{$ENGINE}[$WINDOW]))"},
	{ID: RejectionRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:   "Speculative draft tokens rejected / proposed.",
		PromQL: "1 - sum $BY (rate(vllm:spec_decode_num_accepted_tokens_total{$ENGINE}[$WINDOW])) / sum $BY (rate(vllm:spec_decode_num_draft_tokens_total{$ENGINE}[$WINDOW]))"},
	{ID: ErrorRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:   "Requests finished with error or abort / all finished.",
		PromQL: "sum $BY (rate(vllm:request_success_total{$ENGINE,finished_reason=~\"error|abort\"}[$WINDOW])) / sum $BY (rate(vllm:request_success_total{$ENGINE}[$WINDOW]))"},
	{ID: PreemptionRate, Dimension: Quality, Unit: "1/s", Bad: Up, Source: SourceEngine,
		Help:   "Sequences preempted per second.",
		PromQL: rateOf("vllm:num_preemptions_total")},
}

var catalogIndex = func() map[string]int {
	idx := make(map[string]int, len(Catalog))
	for i, m := range Catalog {
		idx[m.ID] = i
	}
	return idx
}()

// Lookup returns the catalog entry for id.
func Lookup(id string) (Metric, bool) {
	i, ok := catalogIndex[id]
	if !ok {
		return Metric{}, false
	}
	return Catalog[i], true
}

// IDs returns every catalog id in catalog order.
func IDs() []string {
	ids := make([]string, len(Catalog))
	for i, m := range Catalog {
		ids[i] = m.ID
	}
	return ids
}

// InDimension returns the catalog entries of one dimension, in catalog order.
func InDimension(d Dimension) []Metric {
	var out []Metric
	for _, m := range Catalog {
		if m.Dimension == d {
			out = append(out, m)
		}
	}
	return out
}
