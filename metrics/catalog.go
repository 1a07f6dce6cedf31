package metrics

import (
	"strconv"
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
	// Label is the short name the console shows in charts, tables and
	// legends ("TTFT p99").
	Label string
	// Name is the name sentences use: evidence, postmortems ("p99 time
	// to first token").
	Name string
	// Min and Max bound valid values; Max is 0 when unbounded. Values
	// outside are rejected at the snapshot boundary.
	Min, Max float64
	// PromQL is the expression template. $ENGINE and $GPU expand to the
	// label matchers of the scope (without braces), $WINDOW to a range
	// duration such as 1m, and $BY / $BYLE to the grouping clause of every
	// aggregation ("" and "by (le)" for one scope; "by (model_name, pod)"
	// when recording rules keep one series per scope). $INST expands to
	// the name of the engines' instance label. Catalog entries built
	// from Alts have it filled in: their alternatives joined with "or".
	PromQL string
	// Alts are the ways to compute the metric, in the order PromQL tries
	// them: the current series names first, then renamed or older ones
	// (vLLM renamed several metrics between releases). Resolve reads
	// them to say which one a source offers.
	Alts []Alternative
	// Absent says why the metric may be missing from a healthy source (a
	// profiling field dcgm-exporter ships commented out, speculative
	// decoding not configured); empty when its absence means the source
	// lacks something it should have.
	Absent string
}

// Alternative is one way to compute a metric from the series a source
// exposes.
type Alternative struct {
	// Series are the exposed series names the expression reads; all must
	// be present.
	Series []string
	// PromQL is the expression template (see Metric.PromQL).
	PromQL string
	// Note names the source generation that exposes these series, e.g.
	// "vLLM 0.6-0.10 (deprecated in 0.10, removed in 0.12)".
	Note string
}

// Selectors restrict catalog queries to one scope. Each is a comma-separated
// list of PromQL label matchers without braces; empty means everything.
type Selectors struct {
	Engine string // matchers on vLLM and gateway series
	GPU    string // matchers on DCGM series
	// InstanceLabel names the engines' instance label ($INST), e.g. the
	// pod label that joins the API server's HTTP series, which carry no
	// model_name, to their engine; empty means "pod".
	InstanceLabel string
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
	inst := sel.InstanceLabel
	if inst == "" {
		inst = "pod"
	}
	q := strings.NewReplacer(
		"$INST", inst,
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
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	default:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
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

// Metric ids added after the contract's first version; snapshots carry
// them when the source has them, and readers that do not know them ignore
// them.
const (
	// AbortRate is the share of finished requests the client cancelled
	// (finished_reason="abort"): not an engine fault, but the mark of
	// clients giving up on a slow service.
	AbortRate = "abort_rate"
	// APIErrorRate is the share of the API server's HTTP answers that are
	// 5xx: a crashed or wedged engine never reaches vLLM's finished-request
	// counter, but its API server answers 500 or 503.
	APIErrorRate = "api_5xx_rate"
	// XIDErrors counts the scope's GPUs whose last XID error is non-zero.
	XIDErrors = "gpu_xid_errors"
	// QueueCapacity is the part of the queue waiting for scheduling
	// capacity (vLLM's num_requests_waiting_by_reason{reason="capacity"}),
	// as opposed to requests deferred by a transient constraint.
	QueueCapacity = "queue_depth_capacity"
	// CachedPromptTPS is prompt tokens per second served from a cache.
	CachedPromptTPS = "cached_prompt_tps"
	// SpecAcceptLength is the mean tokens emitted per speculative step,
	// bonus token included; unlike the rejection rate it does not move
	// when num_speculative_tokens changes.
	SpecAcceptLength = "spec_accept_length"
)

// Gateway metric names. Gateways differ (Envoy, nginx, a custom router), so
// Casebook reads one documented convention: a histogram of request duration
// and a counter of arriving requests, labelled like the engine series.
const (
	GatewayDurationMetric = "gateway_request_duration_seconds"
	GatewayRequestsMetric = "gateway_requests_total"
)

// Source generations named in alternatives' notes.
const (
	noteCurrent = "current"
	noteV010    = "vLLM 0.8-0.11 (deprecated in 0.10, hidden from 0.12)"
	noteV0      = "vLLM V0 engine (0.6 and earlier)"
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

// one is the single alternative of a metric whose name never changed.
func one(q string, series ...string) []Alternative {
	return []Alternative{{Series: series, PromQL: q, Note: noteCurrent}}
}

func mean(note string, hist string) Alternative {
	return Alternative{Series: []string{hist + "_sum", hist + "_count"}, PromQL: meanOf(hist), Note: note}
}

func p99(note string, hist string) Alternative {
	return Alternative{Series: []string{hist + "_bucket"}, PromQL: p99Of(hist), Note: note}
}

// ratioOf is num/den of two counters' rates, each summed over the scope.
func ratioOf(num, den string) string {
	return "sum $BY (rate(" + num + "{$ENGINE}[$WINDOW])) / sum $BY (rate(" + den + "{$ENGINE}[$WINDOW]))"
}

// finishedShare is the share of finished requests with one finish reason.
func finishedShare(reason string) string {
	return "sum $BY (rate(vllm:request_success_total{$ENGINE,finished_reason=\"" + reason + "\"}[$WINDOW])) / sum $BY (rate(vllm:request_success_total{$ENGINE}[$WINDOW]))"
}

// apiRequests is the API server's HTTP request rate (status matchers
// optional) with the engine's model_name attached through the instance
// label: prometheus_fastapi_instrumentator's series carry no model_name.
func apiRequests(status string) string {
	sel := "{" + status + "}"
	if status == "" {
		sel = ""
	}
	return "sum $BY (rate(http_requests_total" + sel + "[$WINDOW]) * on ($INST) group_left (model_name) group by ($INST, model_name) (vllm:num_requests_running{$ENGINE}))"
}

const (
	profilingAbsent = "a DCGM profiling field: dcgm-exporter's default-counters.csv ships it commented out; use the profiling counter file (dcp-metrics-included.csv) to export it"
	specAbsent      = "vLLM registers the speculative-decoding counters only when a speculative config is set"
	gatewayAbsent   = "the gateway source is optional: Casebook reads gateway_request_duration_seconds and gateway_requests_total when a load balancer exports them"
)

// Catalog is the one definition of every metric: the contract's metrics
// in its order, then the later additions.
var Catalog = withChains([]Metric{
	{ID: GatewayE2E, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceGateway, Absent: gatewayAbsent,
		Help:  "Mean end-to-end latency seen at the gateway or load balancer.",
		Label: "Gateway E2E", Name: "Gateway E2E latency",
		Alts: []Alternative{mean(noteCurrent, GatewayDurationMetric)}},
	{ID: E2E, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean engine end-to-end request latency.",
		Label: "E2E", Name: "Engine E2E latency",
		Alts: []Alternative{mean(noteCurrent, "vllm:e2e_request_latency_seconds")}},
	{ID: E2EP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "p99 engine end-to-end request latency.",
		Label: "E2E p99", Name: "p99 engine E2E latency",
		Alts: []Alternative{p99(noteCurrent, "vllm:e2e_request_latency_seconds")}},
	{ID: TTFT, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean time to first token.",
		Label: "TTFT", Name: "Time to first token",
		Alts: []Alternative{mean(noteCurrent, "vllm:time_to_first_token_seconds")}},
	{ID: TTFTP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "p99 time to first token.",
		Label: "TTFT p99", Name: "p99 time to first token",
		Alts: []Alternative{p99(noteCurrent, "vllm:time_to_first_token_seconds")}},
	// TPOT is per output token: vLLM's per-request decode time / (tokens-1).
	// The inter-token latency histogram observes one interval per engine
	// step, and with speculative decoding a step emits several tokens, so it
	// is only the fallback for engines without the per-request histogram;
	// before 0.10.2 the same histogram was named time_per_output_token.
	{ID: TPOT, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean time per output token (per-request decode time / output tokens).",
		Label: "TPOT", Name: "Time per output token",
		Alts: []Alternative{
			mean(noteCurrent, "vllm:request_time_per_output_token_seconds"),
			mean("vLLM 0.10.2 and later (inter-token latency, per step)", "vllm:inter_token_latency_seconds"),
			mean("vLLM before 0.13 (renamed inter_token_latency_seconds in 0.10.2)", "vllm:time_per_output_token_seconds"),
		}},
	{ID: TPOTP99, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "p99 time per output token.",
		Label: "TPOT p99", Name: "p99 time per output token",
		Alts: []Alternative{
			p99(noteCurrent, "vllm:request_time_per_output_token_seconds"),
			p99("vLLM 0.10.2 and later (inter-token latency, per step)", "vllm:inter_token_latency_seconds"),
			p99("vLLM before 0.13 (renamed inter_token_latency_seconds in 0.10.2)", "vllm:time_per_output_token_seconds"),
		}},
	{ID: QueueTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean time a request waits in the engine queue.",
		Label: "Queue time", Name: "Queue time",
		Alts: []Alternative{mean(noteCurrent, "vllm:request_queue_time_seconds")}},
	{ID: PrefillTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean prefill phase time.",
		Label: "Prefill", Name: "Prefill time",
		Alts: []Alternative{mean(noteCurrent, "vllm:request_prefill_time_seconds")}},
	{ID: DecodeTime, Dimension: Latency, Unit: "ms", Bad: Up, Source: SourceEngine,
		Help:  "Mean decode phase time.",
		Label: "Decode", Name: "Decode time",
		Alts: []Alternative{mean(noteCurrent, "vllm:request_decode_time_seconds")}},
	{ID: ThroughputRPS, Dimension: Throughput, Unit: "req/s", Bad: Down, Source: SourceEngine,
		Help:  "Finished requests per second.",
		Label: "Throughput", Name: "Throughput",
		Alts: one(rateOf("vllm:request_success_total"), "vllm:request_success_total")},
	{ID: ArrivalRPS, Dimension: Throughput, Unit: "req/s", Bad: Up, Source: SourceGateway, Absent: gatewayAbsent,
		Help:  "Arriving requests per second, counted at the gateway.",
		Label: "Arrivals", Name: "Arrival rate",
		Alts: one(rateOf(GatewayRequestsMetric), GatewayRequestsMetric)},
	{ID: PromptTPS, Dimension: Throughput, Unit: "tok/s", Bad: Up, Source: SourceEngine,
		Help:  "Prompt (prefill) tokens processed per second.",
		Label: "Prompt tokens", Name: "Prompt tokens/s",
		Alts: one(rateOf("vllm:prompt_tokens_total"), "vllm:prompt_tokens_total")},
	{ID: GenerationTPS, Dimension: Throughput, Unit: "tok/s", Bad: Down, Source: SourceEngine,
		Help:  "Generated tokens per second.",
		Label: "Generated tokens", Name: "Generated tokens/s",
		Alts: one(rateOf("vllm:generation_tokens_total"), "vllm:generation_tokens_total")},
	{ID: RunningSeqs, Dimension: Throughput, Unit: "count", Bad: Both, Source: SourceEngine,
		Help:  "Sequences in the running batch.",
		Label: "Running seqs", Name: "Running batch",
		Alts: one("sum $BY (vllm:num_requests_running{$ENGINE})", "vllm:num_requests_running")},
	{ID: QueueDepth, Dimension: Throughput, Unit: "count", Bad: Up, Source: SourceEngine,
		Help:  "Requests waiting to be scheduled.",
		Label: "Queue depth", Name: "Queue depth",
		Alts: one("sum $BY (vllm:num_requests_waiting{$ENGINE})", "vllm:num_requests_waiting")},
	{ID: MeanPromptTokens, Dimension: Throughput, Unit: "tokens", Bad: Up, Source: SourceEngine,
		Help:  "Mean prompt length of finished requests.",
		Label: "Prompt length", Name: "Mean prompt length",
		Alts: one(ratioOf("vllm:request_prompt_tokens_sum", "vllm:request_prompt_tokens_count"),
			"vllm:request_prompt_tokens_sum", "vllm:request_prompt_tokens_count")},
	{ID: SMUtil, Dimension: Utilization, Unit: "ratio", Bad: Both, Source: SourceGPU, Max: 1,
		Help:  "SM activity: DCGM profiling SM active, else GPU utilisation / 100.",
		Label: "SM active", Name: "SM activity",
		Alts: []Alternative{
			{Series: []string{"DCGM_FI_PROF_SM_ACTIVE"}, PromQL: "avg $BY (DCGM_FI_PROF_SM_ACTIVE{$GPU})", Note: "dcgm-exporter profiling counters"},
			{Series: []string{"DCGM_FI_DEV_GPU_UTIL"}, PromQL: "avg $BY (DCGM_FI_DEV_GPU_UTIL{$GPU}) / 100",
				Note: "dcgm-exporter default counters: the share of time any kernel ran, near 1 whenever the engine is busy, whatever the batch"},
		}},
	{ID: TensorActive, Dimension: Utilization, Unit: "ratio", Bad: Both, Source: SourceGPU, Max: 1, Absent: profilingAbsent,
		Help:  "Tensor pipe activity.",
		Label: "Tensor active", Name: "Tensor-pipe activity",
		Alts: one("avg $BY (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{$GPU})", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")},
	{ID: DRAMActive, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceGPU, Max: 1, Absent: profilingAbsent,
		Help:  "Device memory bandwidth utilisation.",
		Label: "DRAM active", Name: "DRAM bandwidth utilisation",
		Alts: one("avg $BY (DCGM_FI_PROF_DRAM_ACTIVE{$GPU})", "DCGM_FI_PROF_DRAM_ACTIVE")},
	{ID: GPUMemUsedFrac, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceGPU, Max: 1,
		Help:  "Framebuffer used / total.",
		Label: "GPU memory", Name: "GPU memory used",
		Alts: one("sum $BY (DCGM_FI_DEV_FB_USED{$GPU}) / (sum $BY (DCGM_FI_DEV_FB_USED{$GPU}) + sum $BY (DCGM_FI_DEV_FB_FREE{$GPU}))",
			"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")},
	{ID: KVCacheUsage, Dimension: Utilization, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:  "Engine KV-cache blocks in use.",
		Label: "KV cache", Name: "KV-cache usage",
		Alts: []Alternative{
			{Series: []string{"vllm:kv_cache_usage_perc"}, PromQL: "avg $BY (vllm:kv_cache_usage_perc{$ENGINE})", Note: noteCurrent},
			{Series: []string{"vllm:gpu_cache_usage_perc"}, PromQL: "avg $BY (vllm:gpu_cache_usage_perc{$ENGINE})", Note: "vLLM before 0.12 (deprecated in 0.9.2)"},
		}},
	{ID: SMClock, Dimension: Utilization, Unit: "MHz", Bad: Down, Source: SourceGPU,
		Help:  "SM clock (minimum over the scope's GPUs: one slow GPU stalls a TP group).",
		Label: "SM clock", Name: "SM clock",
		Alts: one("min $BY (DCGM_FI_DEV_SM_CLOCK{$GPU})", "DCGM_FI_DEV_SM_CLOCK")},
	{ID: MemClock, Dimension: Utilization, Unit: "MHz", Bad: Down, Source: SourceGPU,
		Help:  "Memory clock (minimum over the scope's GPUs).",
		Label: "Mem clock", Name: "Memory clock",
		Alts: one("min $BY (DCGM_FI_DEV_MEM_CLOCK{$GPU})", "DCGM_FI_DEV_MEM_CLOCK")},
	{ID: Power, Dimension: Utilization, Unit: "W", Bad: Up, Source: SourceGPU,
		Help:  "Board power (maximum over the scope's GPUs).",
		Label: "Power", Name: "Board power",
		Alts: one("max $BY (DCGM_FI_DEV_POWER_USAGE{$GPU})", "DCGM_FI_DEV_POWER_USAGE")},
	{ID: GPUTemp, Dimension: Utilization, Unit: "C", Bad: Up, Source: SourceGPU,
		Help:  "GPU temperature (maximum over the scope's GPUs).",
		Label: "Temperature", Name: "GPU temperature",
		Alts: one("max $BY (DCGM_FI_DEV_GPU_TEMP{$GPU})", "DCGM_FI_DEV_GPU_TEMP")},
	{ID: KVCacheHitRate, Dimension: Quality, Unit: "ratio", Bad: Down, Source: SourceEngine, Max: 1,
		Help:  "Prefix-cache hits / queries, in tokens.",
		Label: "Prefix hit rate", Name: "Prefix-cache hit rate",
		Alts: []Alternative{
			{Series: []string{"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"},
				PromQL: ratioOf("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"), Note: noteCurrent},
			{Series: []string{"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"},
				PromQL: ratioOf("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"), Note: noteV010 + "; counted in blocks before 0.9"},
			{Series: []string{"vllm:gpu_prefix_cache_hit_rate"}, PromQL: "avg $BY (vllm:gpu_prefix_cache_hit_rate{$ENGINE})", Note: noteV0 + ": a block hit rate since start, not per minute"},
		}},
	{ID: RejectionRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1, Absent: specAbsent,
		Help:  "Speculative draft tokens rejected / proposed.",
		Label: "Draft rejection", Name: "Draft rejection rate",
		Alts: []Alternative{
			{Series: []string{"vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"},
				PromQL: "1 - " + ratioOf("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"), Note: noteCurrent},
			{Series: []string{"vllm:spec_decode_draft_acceptance_rate"}, PromQL: "1 - avg $BY (vllm:spec_decode_draft_acceptance_rate{$ENGINE})", Note: noteV0},
		}},
	// Only "error" is the engine's failure; "abort" is a client that gave
	// up (AbortRate). vLLM added the "error" reason in the V1 engine, so an
	// older engine leaves the metric missing rather than reading 0.
	{ID: ErrorRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:  "Requests the engine finished with an error / all finished (client aborts excluded).",
		Label: "Error rate", Name: "Error rate",
		Alts: []Alternative{{Series: []string{`vllm:request_success_total{finished_reason="error"}`}, PromQL: finishedShare("error"), Note: noteCurrent}}},
	{ID: PreemptionRate, Dimension: Quality, Unit: "1/s", Bad: Up, Source: SourceEngine,
		Help:  "Sequences preempted per second.",
		Label: "Preemptions", Name: "Preemption rate",
		Alts: one(rateOf("vllm:num_preemptions_total"), "vllm:num_preemptions_total")},

	{ID: AbortRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Help:  "Requests the client cancelled / all finished.",
		Label: "Client aborts", Name: "Client abort rate",
		Alts: []Alternative{{Series: []string{`vllm:request_success_total{finished_reason="abort"}`}, PromQL: finishedShare("abort"), Note: noteCurrent}}},
	{ID: APIErrorRate, Dimension: Quality, Unit: "ratio", Bad: Up, Source: SourceEngine, Max: 1,
		Absent: "the API server's HTTP metrics (prometheus_fastapi_instrumentator) join their engine through the instance label; without it they cannot be told apart",
		Help:   "Share of the engine API server's HTTP answers that are 5xx.",
		Label:  "API 5xx", Name: "API 5xx rate",
		Alts: []Alternative{{Series: []string{"http_requests_total"},
			PromQL: apiRequests(`status=~"5.."`) + " / " + apiRequests(""), Note: noteCurrent}}},
	{ID: XIDErrors, Dimension: Quality, Unit: "count", Bad: Up, Source: SourceGPU,
		Help:  "GPUs of the scope whose last XID error is non-zero (dcgm-exporter DCGM_FI_DEV_XID_ERRORS).",
		Label: "GPUs with XID errors", Name: "GPUs with XID errors",
		Alts: one("sum $BY (DCGM_FI_DEV_XID_ERRORS{$GPU} > bool 0)", "DCGM_FI_DEV_XID_ERRORS")},
	{ID: QueueCapacity, Dimension: Throughput, Unit: "count", Bad: Up, Source: SourceEngine,
		Absent: "vLLM splits the queue by reason from late 2025 on; older engines report only num_requests_waiting",
		Help:   "Requests waiting for scheduling capacity (not deferred by LoRA, KV transfer or a blocked status).",
		Label:  "Waiting for capacity", Name: "Requests waiting for capacity",
		Alts: []Alternative{{Series: []string{`vllm:num_requests_waiting_by_reason{reason="capacity"}`},
			PromQL: "sum $BY (vllm:num_requests_waiting_by_reason{$ENGINE,reason=\"capacity\"})", Note: noteCurrent}}},
	{ID: CachedPromptTPS, Dimension: Throughput, Unit: "tok/s", Bad: Down, Source: SourceEngine,
		Help:  "Prompt tokens per second served from a cache (local prefix cache or KV transfer).",
		Label: "Cached prompt tokens", Name: "Cached prompt tokens/s",
		Alts: []Alternative{
			{Series: []string{"vllm:prompt_tokens_cached_total"}, PromQL: rateOf("vllm:prompt_tokens_cached_total"), Note: noteCurrent},
			{Series: []string{"vllm:prefix_cache_hits_total"}, PromQL: rateOf("vllm:prefix_cache_hits_total"), Note: "vLLM before prompt_tokens_cached: local prefix-cache hits only"},
		}},
	{ID: SpecAcceptLength, Dimension: Quality, Unit: "tokens", Bad: Down, Source: SourceEngine, Absent: specAbsent,
		Help:  "Mean tokens emitted per speculative step, the bonus token included.",
		Label: "Acceptance length", Name: "Speculative acceptance length",
		Alts: one("1 + "+ratioOf("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total"),
			"vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_drafts_total")},
})

// withChains fills every metric's PromQL from its alternatives: each
// alternative in parentheses, joined with "or", so that a source answers
// with the first one it has.
func withChains(ms []Metric) []Metric {
	for i := range ms {
		if ms[i].PromQL != "" {
			continue
		}
		parts := make([]string, len(ms[i].Alts))
		for j, a := range ms[i].Alts {
			parts[j] = a.PromQL
			if len(ms[i].Alts) > 1 {
				parts[j] = "(" + a.PromQL + ")"
			}
		}
		ms[i].PromQL = strings.Join(parts, " or ")
	}
	return ms
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
