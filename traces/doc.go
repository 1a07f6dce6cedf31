// Package traces reads GPU profiler traces attached to an incident and
// summarises them: level 4 of Casebook's latency decomposition.
//
// # Formats
//
// Parse detects the format from the first bytes of the input:
//
//   - PyTorch profiler Chrome-trace JSON (torch.profiler export_chrome_trace
//     or tensorboard_trace_handler, "*.pt.trace.json"), also gzip-compressed
//     (magic 1f 8b). The document is an object with schemaVersion,
//     deviceProperties, baseTimeNanoseconds and a traceEvents array; a bare
//     array of events is accepted too. GPU activities are the complete
//     ("ph": "X") events with cat "kernel", "gpu_memcpy" or "gpu_memset"
//     (older kineto: "Kernel", "Memcpy", "Memset"); their device is
//     args.device (else pid) and their stream args.stream (else tid, where
//     a string like "stream 7" counts by its digits); ts and dur are
//     microseconds with nanosecond decimals and are converted to integer
//     nanoseconds without float rounding. user_annotation events named
//     ProfilerStep#N count steps; cuda_runtime cudaLaunchKernel and
//     cudaGraphLaunch count launches; ac2g flow starts are counted. Every
//     other event and field is skipped.
//   - Nsight Systems SQLite exports (nsys export --type sqlite, magic
//     "SQLite format 3\x00"). Kernels come from CUPTI_ACTIVITY_KIND_KERNEL
//     (start, end, deviceId, streamId; the name is StringIds.value of
//     demangledName, else shortName); copies from CUPTI_ACTIVITY_KIND_MEMCPY
//     (named after copyKind, e.g. "Memcpy HtoD") and
//     CUPTI_ACTIVITY_KIND_MEMSET. nsys creates tables lazily, so the parser
//     reads sqlite_master first; the kernel table and StringIds are required.
//
// # Limits and streaming
//
// The JSON parser streams: encoding/json's Decoder walks the top-level
// object with Token, decodes one event at a time from traceEvents, and
// skips unknown values token by token, so a trace of several hundred MB is
// never held in memory; only GPU activities (32 bytes each, names interned)
// are kept. Reading, decompression and the byte-level limit checks run one
// chunk ahead of the decoder in a second goroutine. Options bounds the
// input: MaxBytes (default 1 GiB, counted after decompression, so a gzip
// bomb stops there), MaxStringLen, MaxDepth, MaxSpace (the longest run of
// whitespace, or bare literal, between two tokens) and MaxEventBytes (the
// longest single event), all checked on the raw bytes before encoding/json
// buffers them, and MaxEvents. Runs of whitespace are collapsed on the way
// to the decoder, which would otherwise rescan them on every read and
// spend time quadratic in their length. Every read checks the context, so
// a cancelled request or a passed deadline stops decompression, spooling
// and decoding alike. Bad input returns an error wrapping ErrTooLarge, ErrLimit,
// ErrFormat or ErrNoGPUActivity, never a panic. Bare inf/nan values, which
// kineto releases before 2021 wrote for zero-length memcpys, are not JSON
// and are rejected with a message that says so. An Nsight export read from
// a stream is spooled to a temporary file, because SQLite reads files.
//
// # Categories
//
// Classify maps a kernel name to a Category by case-insensitive substring
// rules tried in this order (the first match wins):
//
//  1. memcpy: every memcpy and memset activity, and names starting with
//     "Memcpy" or "Memset".
//  2. communication: nccl (ncclDevKernel_*, ncclKernel_*),
//     cross_device_reduce (vLLM custom all-reduce), allreduce / all_reduce,
//     allgather, reduce_scatter, alltoall.
//  3. sampling (explicit): "sampling" (flashinfer::sampling::*),
//     TopKTopP, multinomial. Before attention because FlashInfer's sampling
//     kernels share the flashinfer namespace.
//  4. attention: flash_fwd (FA2 flash_fwd_kernel, flash_fwd_splitkv_kernel
//     and its combine kernel, pytorch_flash::), flash:: and FlashAttn (FA3's
//     cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>, matched before
//     the GEMM rule that would claim "cutlass"), fmha, paged_attention
//     (vllm::paged_attention_v1/v2 and the v2 reduce), Triton attn_fwd,
//     sdpa, FlashInfer BatchPrefill / BatchDecode / SinglePrefill /
//     SingleDecode / MergeState, any "attention", and the KV-cache writes
//     reshape_and_cache(_flash), concat_and_cache (MLA) and FlashInfer's
//     AppendPagedKVCache. The KV write is counted with attention, not with
//     memcpy: it is a kernel of the attention layer whose cost grows with
//     tokens x KV heads exactly like attention's KV reads, so "attention +
//     KV" is the number that answers "are long contexts or memory bandwidth
//     eating the step?"; memcpy is kept for copy-engine transfers, whose
//     presence inside a step means host synchronisation.
//  5. gemm: gemm (cuBLAS sm90_xmma_gemm_*, ampere_*_s16816gemm_*,
//     CUTLASS *gemm*), xmma, nvjet (newer cuBLAS), cutlass (remaining
//     CUTLASS kernels, including cutlass_scaled_mm), cublas, gemv,
//     splitKreduce, matmul (Triton), scaled_mm, fused_moe_kernel (MoE expert
//     GEMMs), marlin.
//  6. normalization: rms_norm (vllm::rms_norm_kernel,
//     fused_add_rms_norm_kernel), layer_norm, group_norm, and "rsqrt" for
//     torch.compile's Triton norms (triton_red_fused_add_mean_mul_pow_rsqrt_*).
//  7. rotary: rotary (vllm::rotary_embedding_kernel, FlashInfer's
//     ApplyRotary kernels), rope_ / _rope. torch.compile may fuse rotary
//     into a triton_poi_fused_* kernel whose name does not say so; such
//     kernels land in other.
//  8. activation: act_and_mul (SiLU-and-mul, GELU-and-mul), silu, gelu,
//     swiglu, relu, sigmoid, tanh.
//  9. other (MoE routing): moe_align_block_size, topkGatingSoftmax,
//     topk_softmax, moe_sum, matched before the generic softmax/top-k rule.
//  10. sampling (generic): softmax (cunn_SoftMaxForward), topk, sort,
//     argmax, exponential / gumbel (random sampling).
//  11. other: everything else (elementwise glue, embedding lookups, fills).
//
// # Summary, idle gaps and timeline
//
// Summarize computes GPU time per category (shares of the summed activity
// time), the top kernels by total time with counts and mean and max
// durations, and GPU idle time. The idle time of a device is the part of the
// trace's GPU span (first activity start to last activity end, over all
// devices) in which no kernel, memcpy or memset runs on any of its streams;
// the idle share is idle time over devices x span. Gaps are the idle
// intervals between two busy intervals of a device; gaps shorter than
// SmallGap (20µs) are kernel-launch latency between back-to-back kernels
// (IdleStats.SmallGapTime), longer ones are host-side stalls (scheduler,
// input preparation, tokenizer, synchronisation). Summary.Lanes keeps a fixed-width binned
// timeline of the busiest streams, from which TimelineSVG renders an
// escaped, self-contained SVG with a legend.
//
// # Use from the console
//
// An upload handler calls Parse (or ParseFile) with its own MaxBytes,
// maps errors.Is(err, ErrTooLarge) to 413 and the other sentinels to 400
// with the error text, then stores Summarize's result as Summary.Encode
// writes it; the page reads it back with DecodeSummary and renders
// Summary.TimelineSVG from it, so the trace file itself need not be kept.
// See Example.
//
// # Comparison and evidence
//
// Compare puts two summaries side by side per category, with absolute and
// relative deltas, normalised per ProfilerStep when both traces have steps
// and per second of GPU span otherwise. Evidences turns a summary (and an
// optional baseline) into findings for the diagnosis engine: a high or
// rising idle share and in-step memcpy support host_overhead; a dominant or
// rising attention share supports memory_bandwidth_bound; GEMMs slower at
// the same count support gpu_throttling; a large or rising communication
// share points at tensor-parallel or interconnect trouble, which has no
// taxonomy entry and is reported under unknown.
package traces
