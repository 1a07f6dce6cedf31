// Package sim is a simulated inference cluster (vLLM by default; SGLang,
// TensorRT-LLM and llama.cpp per model with Options.Engines, each serving
// its own exposition: engines.go). It serves the same
// telemetry a real deployment does, in the real formats, and lets faults be
// injected so that their causal chains show up in that telemetry.
//
// # Cluster
//
// New builds models, each served by replicas (Kubernetes-style pods such as
// "llama-8b-0"), each on a tensor-parallel group of NVIDIA H100 80GB HBM3
// GPUs (3.35 TB/s HBM, 989 dense BF16 TFLOP/s, 1980 MHz max SM clock,
// 700 W). The default is two models (Llama 3.1 8B Instruct and Qwen2.5 32B
// Instruct), two instances each, two GPUs per instance. Handler serves per
// instance a vLLM /metrics page (Python prometheus_client formatting) and a
// dcgm-exporter /metrics page (Kubernetes-mode labels, %f values), plus one
// gateway page with gateway_request_duration_seconds and
// gateway_requests_total. Backfill emits the same series as samples;
// WriteOpenMetrics writes them as a Prometheus scrape of PrometheusConfigFor
// would have stored them, for `promtool tsdb create-blocks-from openmetrics`.
// Options.Deployments sets each model's replicas and tensor-parallel size
// instead; FleetPreset is a 500-engine, 1,000-GPU fleet of 40 models.
//
// # Engine physics
//
// Each instance is a time-stepped fluid model (5 s steps live, 15 s for the
// corpus), not a per-token simulation:
//
//   - KV cache: per GPU, the pool is gpu_memory_utilization x framebuffer
//     minus the weight shard and ~3.5 GiB of activations and CUDA graphs,
//     in whole blocks; a token takes the model's KV bytes (layers x KV
//     heads x head dim x 2 for K and V x 2 bytes of BF16) divided by the
//     tensor-parallel degree. An 8B model on two H100s holds about a
//     million tokens, so in normal traffic usage stays in the low percent.
//     Running sequences hold their unique context; shared prefixes are
//     stored once while the cache has room.
//   - Batch: the running batch follows Little's law, B = throughput x service
//     time, capped by max_num_seqs and by KV capacity. The physics sees the
//     arrival rate and request sizes smoothed over about one service time
//     and half a minute, so results do not depend on the step size.
//   - Decode step: per-step host overhead (scheduler, launch, TP all-reduce)
//     plus the larger of the HBM time (weights/TP + KV read of every
//     sequence, over the effective bandwidth) and the tensor time, plus the
//     draft model. TPOT therefore grows with batch and with context length.
//   - Prefill: prompt FLOPs (2 x parameters per token, plus attention) over
//     the effective compute, chunked by max_num_batched_tokens; its share of
//     GPU time stretches the decode steps it interleaves with.
//   - Queueing: arrivals beyond capacity accumulate as a fluid backlog (with
//     clients abandoning after about two minutes, counted as aborts; the
//     gateway rejects arrivals itself once the queue holds a minute of work,
//     so those never reach vLLM's counters), plus a
//     utilisation-dependent wait: a many-server term (Allen-Cunneen with
//     Sakasegawa's approximation) and a single-server wait for the prefill
//     token budget. Latency versus load therefore has a knee.
//   - Prefix caching: hit rate = shared-prefix share x residency; residency
//     falls once KV usage passes 85%, and preemptions rise past 90%.
//   - Speculative decoding: with per-token acceptance a and k draft tokens, a
//     step emits 1 + a(1-a^k)/(1-a) tokens per sequence. As in vLLM V1,
//     inter_token_latency_seconds observes one interval per step (an output
//     may carry several tokens), while request_time_per_output_token_seconds
//     is per token; falling acceptance shows first in the latter and in
//     decode time, and in ITL once the longer-lived batch grows.
//   - GPU: SM activity is the busy time (minus host gaps) times an occupancy
//     that saturates with tokens per step, so it has a knee against
//     throughput. DRAM activity is bytes moved over peak bandwidth; every
//     engine step (decode or chunked prefill) streams the weight shard and
//     the running batch's KV, so it rises with the batch. Power follows
//     activity; temperature follows power with a 60 s time constant; a
//     power cap and a thermal controller lower the SM clock, which slows
//     compute (prefill) and, partly, memory-bound kernels (decode), and set
//     the DCGM clocks-event reasons (SW power cap, SW thermal slowdown).
//
// Histograms are filled once a minute (and at the end of each Advance) by
// spreading the interval's finished requests over the buckets with a
// lognormal around the interval's mean (token-count histograms use the trace
// quantile tables), so counts, sums and quantiles agree.
//
// Load follows the weekday business-hours peak (around 15:00 UTC), a night
// trough and quieter weekends, with a slow random fluctuation.
//
// # Faults
//
// Inject (or POST /faults, or --fault) applies a metrics.FaultCauses() cause
// to a model or one instance with a severity in 0..1, ramping in over a
// minute, by changing physical parameters, never a metric. Any severity
// above zero is a real change: the effect size is 0.25 + 0.75 x severity, so
// the mildest fault sits a few standard deviations off the metrics its cause
// moves. Faults sized against the running deployment read its state at
// their onset and keep it:
//
//   - memory_bandwidth_bound: a co-tenant takes up to 60% of HBM bandwidth.
//   - gpu_throttling: the rack's power controller caps each board at up to
//     45% below its draw at onset (SM clock down, power at the cap), while
//     worse cooling and hotter inlet air raise the temperature; severe
//     cases reach the slowdown temperature, where the thermal controller
//     holds it. DCGM_FI_DEV_POWER_MGMT_LIMIT and
//     DCGM_FI_DEV_CLOCKS_EVENT_REASONS show which limit acts.
//   - kv_cache_eviction: sessions get longer and more diverse while a
//     co-tenant process claims GPU memory, leaving a KV pool smaller than
//     the working set the engine held at onset: usage near 1, preemptions
//     and recomputation, prefix hits lost, requests waiting for blocks.
//   - long_prompt_prefill: prompts up to 3.5x longer.
//   - prefix_cache_miss: the shared-prefix share collapses.
//   - spec_decode_degradation: draft acceptance falls by up to 75%, so a
//     step emits fewer tokens and the per-token TPOT rises.
//   - queue_backlog: arrivals surge to up to 1.6x the capacity at onset (a
//     fixed client load, which added capacity shares); the batch fills to
//     max_num_seqs, throughput sits at its ceiling, the queue grows.
//   - gpu_underutilized: a load-balancer weight change sends most of the
//     traffic to another pool; requests keep flowing, but batches shrink
//     and the GPUs idle between steps.
//   - transport_latency: the primary gateway's congested hop adds delay
//     after the engine.
//   - engine_errors: the engine fails requests (finished_reason="error",
//     answered 500); when severe, an XID 43 takes the engine core down
//     again and again, and while it restarts the API server answers 5xx
//     to requests the engine never finishes (http_requests_total only).
//     Client aborts stay at their small healthy share: vLLM counts a
//     cancelled request as finished_reason="abort", not as an error.
//   - host_overhead: CPU-side time per engine step grows by 4 to 18 ms.
//
// Throttling, the memory and bandwidth co-tenants and engine errors belong
// to the node: they stay with the host an instance ran on when it was hit,
// so an instance that moves away leaves them behind (the eviction fault's
// longer, more diverse sessions are traffic and follow the model).
//
// SetConfig changes an instance's EngineConfig (the knobs suggested actions
// act on). As in vLLM, vllm:cache_config_info carries only CacheConfig
// fields (block_size, gpu_memory_utilization, enable_prefix_caching,
// num_gpu_blocks, ...), and /engines/<pod>/v1/models reports max_model_len;
// the other settings are visible to the simulator's callers only.
// Options.DCGMFields chooses dcgm-exporter's default counter file (no
// DCGM_FI_PROF_* fields) or the profiling one (ModelDCGMFields per model),
// and PrometheusConfigFor
// writes a scrape configuration with static or ServiceMonitor-style labels
// (exported_pod). Drain moves
// instances to fresh nodes, Route sets the router's weight of an instance,
// and SetGatewayPath sends a model's clients through the standby gateway,
// straight to the engines, or through more gateway replicas: the
// operations behind suggested actions that are not engine flags.
//
// # Labelled corpus
//
// Scenarios runs the same engine model for each case and computes every
// catalog value from the simulated exposition the way the catalog's PromQL
// does, with the snapshot history convention (65 one-minute points covering
// at-65m..at-1m). The labelled fault starts 1.5 to 5 minutes before the
// case's time, so the baseline hour (to at-6m) is free of it and the last
// five points show its onset; a second fault, in about 10% of cases,
// starts after it and never one that would swamp its signature
// (a surge on top of traffic routed away). TPOT is read from the
// per-request histogram, so E2E = TTFT + TPOT x (tokens-1) holds over a
// minute's means.
//
// Unlike the live cluster, which always runs on H100s at DefaultConstants,
// every corpus case draws its own deployment (drawDeployment): one of four
// models on H100, H200, A100 80GB or L40S, the smallest tensor-parallel
// degree whose KV pool holds a working set (sometimes twice that), the
// share of peak bandwidth and compute the kernels reach, the host and
// draft time per step, the TP all-reduce cost, the KV block size,
// gpu_memory_utilization, max_num_seqs and max_num_batched_tokens, and a
// weekday peak between 30% and 90% of the capacity these give. No
// threshold read off one set of constants therefore fits the corpus.
// ScenarioOptions.DCGMFields reads the GPUs with dcgm-exporter's default
// counters (no profiling fields, gpu_sm_util is the GPU_UTIL duty cycle)
// or the profiling ones.
//
// # Attribution
//
// Request sizes (context and generated token quantiles) and arrival
// burstiness (index of dispersion of arrival counts) are derived from the
// Azure LLM inference traces 2023 (Microsoft AzurePublicDataset, CC-BY 4.0),
// cited as: Patel et al., "Splitwise: Efficient generative LLM inference
// using phase splitting", ISCA 2024. Only summary statistics are embedded
// (traces_table.go); TestTraceTables re-derives them from the CSVs when the
// shared data directory is present, and `go generate` rewrites the table.
package sim
