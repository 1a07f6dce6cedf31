// Package tracegen writes synthetic GPU traces of a small transformer's
// prefill and decode steps, in the PyTorch profiler Chrome-trace format and
// as an Nsight Systems SQLite export. The kernel names, event fields and
// table columns follow the real formats; the durations are plausible for a
// tensor-parallel 8B-class model on an H100 but are invented. Casebook's
// test fixtures and parser benchmarks are generated with it; no output of
// a real profiler is stored in the repository.
package tracegen

import (
	"math/rand"
	"strconv"
)

// Options shapes the generated trace. Zero values mean the defaults.
type Options struct {
	Seed         int64
	Layers       int // transformer layers; default 8
	PrefillSteps int // eager prefill steps first; default 1 (negative: none)
	DecodeSteps  int // CUDA-graph decode steps after them; default 3
	TP           int // tensor-parallel degree; default 2 (adds all-reduce kernels)
	Device       int // GPU index of this rank; default 0
	// HostGap is the CPU time between two decode steps (scheduler, input
	// preparation) during which the GPU idles, in microseconds; default 150.
	HostGap int
	// AttentionScale multiplies attention kernel durations (e.g. 2 for
	// twice the context length); default 1.
	AttentionScale float64
	// TargetBytes, when positive, keeps adding decode steps to a Chrome
	// trace until at least this many bytes are written.
	TargetBytes int64
}

func (o Options) withDefaults() Options {
	if o.Layers <= 0 {
		o.Layers = 8
	}
	if o.PrefillSteps == 0 {
		o.PrefillSteps = 1
	}
	if o.PrefillSteps < 0 {
		o.PrefillSteps = 0
	}
	if o.DecodeSteps <= 0 {
		o.DecodeSteps = 3
	}
	if o.TP <= 0 {
		o.TP = 2
	}
	if o.HostGap <= 0 {
		o.HostGap = 150
	}
	if o.AttentionScale <= 0 {
		o.AttentionScale = 1
	}
	return o
}

// Kernel names as the profilers report them (demangled).
const (
	KernelQKV          = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	KernelOProj        = "nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNT"
	KernelGateUp       = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
	KernelDown         = "nvjet_tst_192x192_64x3_1x2_h_bz_coopB_TNT"
	KernelLMHead       = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
	KernelFlashPrefill = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)"
	KernelFlashDecode  = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)"
	KernelFlashCombine = "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 3, false>(flash::Flash_fwd_params)"
	KernelCacheWrite   = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)"
	KernelRMSNorm      = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)"
	KernelAddRMSNorm   = "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
	KernelRotary       = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)"
	KernelSiluAndMul   = "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)"
	KernelCustomAR     = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)"
	KernelNCCL         = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
	KernelEmbedding    = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)"
	KernelSoftmax      = "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
	KernelSampling     = "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::CUB_200200_900_NS::BlockScanAlgorithm)2, (cub::CUB_200200_900_NS::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned int)"
	KernelFill         = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
)

// Streams used by the generated traces: compute and the NCCL stream.
const (
	StreamCompute = 7
	StreamNCCL    = 20
)

// kind of a GPU record.
type kind int

const (
	kernel kind = iota
	memcpy
	memset
)

// op is one GPU operation of a step: which kernel, how long it runs (µs,
// before jitter), the CPU op that launches it, its stream and launch grid.
type op struct {
	kind   kind
	name   string
	cpuOp  string
	dur    float64
	stream int
	grid   [3]int
	block  [3]int
	bytes  int
}

// layerOps returns the kernels of one decoder layer.
func layerOps(o Options, prefill bool) []op {
	// Durations in µs: prefill of ~512 tokens vs a decode batch of 32.
	pick := func(p, d float64) float64 {
		if prefill {
			return p
		}
		return d
	}
	att := KernelFlashDecode
	if prefill {
		att = KernelFlashPrefill
	}
	ops := []op{
		{kind: kernel, name: KernelAddRMSNorm, cpuOp: "_C::fused_add_rms_norm", dur: pick(6, 2.5), grid: [3]int{pick2(prefill, 512, 32), 1, 1}, block: [3]int{1024, 1, 1}},
		{kind: kernel, name: KernelQKV, cpuOp: "aten::mm", dur: pick(62, 11), grid: [3]int{132, 1, 1}, block: [3]int{384, 1, 1}},
		{kind: kernel, name: KernelRotary, cpuOp: "_C::rotary_embedding", dur: pick(4.5, 1.8), grid: [3]int{pick2(prefill, 512, 32), 1, 1}, block: [3]int{512, 1, 1}},
		{kind: kernel, name: KernelCacheWrite, cpuOp: "_C_cache_ops::reshape_and_cache_flash", dur: pick(3.2, 1.6), grid: [3]int{pick2(prefill, 512, 32), 1, 1}, block: [3]int{512, 1, 1}},
		{kind: kernel, name: att, cpuOp: "vllm::unified_attention_with_output", dur: pick(38, 16) * o.AttentionScale, grid: [3]int{pick2(prefill, 4, 1), 32, 16}, block: [3]int{128, 1, 1}},
	}
	if !prefill {
		ops = append(ops, op{kind: kernel, name: KernelFlashCombine, cpuOp: "vllm::unified_attention_with_output", dur: 2.4 * o.AttentionScale, grid: [3]int{1, 32, 16}, block: [3]int{128, 1, 1}})
	}
	ops = append(ops, op{kind: kernel, name: KernelOProj, cpuOp: "aten::mm", dur: pick(24, 5.5), grid: [3]int{132, 1, 1}, block: [3]int{384, 1, 1}})
	if o.TP > 1 {
		ops = append(ops, allReduce(prefill))
	}
	ops = append(ops,
		op{kind: kernel, name: KernelAddRMSNorm, cpuOp: "_C::fused_add_rms_norm", dur: pick(6, 2.5), grid: [3]int{pick2(prefill, 512, 32), 1, 1}, block: [3]int{1024, 1, 1}},
		op{kind: kernel, name: KernelGateUp, cpuOp: "aten::mm", dur: pick(118, 21), grid: [3]int{132, 1, 1}, block: [3]int{384, 1, 1}},
		op{kind: kernel, name: KernelSiluAndMul, cpuOp: "_C::silu_and_mul", dur: pick(9, 2.8), grid: [3]int{pick2(prefill, 512, 32), 1, 1}, block: [3]int{1024, 1, 1}},
		op{kind: kernel, name: KernelDown, cpuOp: "aten::mm", dur: pick(58, 11), grid: [3]int{132, 1, 1}, block: [3]int{384, 1, 1}},
	)
	if o.TP > 1 {
		ops = append(ops, allReduce(prefill))
	}
	return ops
}

func allReduce(prefill bool) op {
	if prefill {
		return op{kind: kernel, name: KernelNCCL, cpuOp: "nccl:all_reduce", dur: 21, stream: StreamNCCL, grid: [3]int{2, 1, 1}, block: [3]int{640, 1, 1}}
	}
	return op{kind: kernel, name: KernelCustomAR, cpuOp: "_C_custom_ar::all_reduce", dur: 7.5, grid: [3]int{36, 1, 1}, block: [3]int{512, 1, 1}}
}

func pick2(prefill bool, p, d int) int {
	if prefill {
		return p
	}
	return d
}

// headOps are the kernels before the first layer (inputs, embedding).
func headOps(prefill bool) []op {
	return []op{
		{kind: memcpy, name: "Memcpy HtoD (Pinned -> Device)", cpuOp: "aten::copy_", dur: 2.1, bytes: 4096},
		{kind: memset, name: "Memset (Device)", cpuOp: "aten::zero_", dur: 1.2, bytes: 2048},
		{kind: kernel, name: KernelEmbedding, cpuOp: "aten::index_select", dur: map[bool]float64{true: 9, false: 2.2}[prefill], grid: [3]int{264, 1, 1}, block: [3]int{128, 4, 1}},
	}
}

// tailOps are the final norm, LM head and the sampler.
func tailOps(prefill bool) []op {
	return []op{
		{kind: kernel, name: KernelRMSNorm, cpuOp: "_C::rms_norm", dur: 2.5, grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}},
		{kind: kernel, name: KernelLMHead, cpuOp: "aten::mm", dur: map[bool]float64{true: 31, false: 24}[prefill], grid: [3]int{501, 1, 1}, block: [3]int{256, 1, 1}},
		{kind: kernel, name: KernelFill, cpuOp: "aten::fill_", dur: 1.4, grid: [3]int{64, 1, 1}, block: [3]int{128, 1, 1}},
		{kind: kernel, name: KernelSoftmax, cpuOp: "aten::_softmax", dur: 6.5, grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}},
		{kind: kernel, name: KernelSampling, cpuOp: "flashinfer::top_k_top_p_sampling_from_probs", dur: 18, grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}},
		{kind: memcpy, name: "Memcpy DtoH (Device -> Pinned)", cpuOp: "aten::copy_", dur: 2.3, bytes: 256},
	}
}

// record is one generated event, handed to a writer.
type record struct {
	rec      recKind
	name     string
	ts, dur  int64 // ns
	corr     int   // correlation id (runtime <-> GPU)
	ext      int   // External id (cpu_op <-> runtime/GPU)
	step     int
	gpu      op
	graphID  int
	graphNde int
}

type recKind int

const (
	recStep recKind = iota
	recCPUOp
	recRuntime
	recGPU
)

// simulate produces the events of the trace in CPU-time order and calls
// emit for each; emit returning false stops it early.
func simulate(o Options, emit func(record) bool) {
	rng := rand.New(rand.NewSource(o.Seed))
	jit := func(us float64) int64 {
		return int64(us * 1000 * (0.95 + 0.1*rng.Float64()))
	}
	var cpu, gpu int64 = 1_000_000, 0 // ns since the trace base
	corr, ext := 1, 1
	graphID := 0
	launch := func(g op, graph bool, node int, graphStart *int64) bool {
		// One CPU op with one runtime call inside, then the GPU op.
		if !graph {
			opStart := cpu
			ext++
			corr++
			rt := "cudaLaunchKernel"
			if g.kind == memcpy {
				rt = "cudaMemcpyAsync"
			} else if g.kind == memset {
				rt = "cudaMemsetAsync"
			}
			rtStart := opStart + jit(1.5)
			rtDur := jit(3.5)
			if !emit(record{rec: recCPUOp, name: g.cpuOp, ts: opStart, dur: rtStart - opStart + rtDur + jit(1), ext: ext}) ||
				!emit(record{rec: recRuntime, name: rt, ts: rtStart, dur: rtDur, corr: corr, ext: ext}) {
				return false
			}
			start := max(gpu+jit(0.8), rtStart+jit(4))
			d := jit(g.dur)
			gpu = start + d
			cpu = rtStart + rtDur + jit(2.5)
			return emit(record{rec: recGPU, name: g.name, ts: start, dur: d, corr: corr, ext: ext, gpu: g})
		}
		start := max(gpu+jit(1.0), *graphStart)
		d := jit(g.dur)
		gpu = start + d
		return emit(record{rec: recGPU, name: g.name, ts: start, dur: d, corr: corr, ext: ext, gpu: g, graphID: graphID, graphNde: node})
	}
	stepNo := 0
	runStep := func(prefill bool) bool {
		stepStart := cpu
		stepNo++
		ext++
		stepExt := ext
		var ops []op
		ops = append(ops, headOps(prefill)...)
		for l := 0; l < o.Layers; l++ {
			ops = append(ops, layerOps(o, prefill)...)
		}
		tail := tailOps(prefill)
		// Step annotation first (its duration is known only at the end, so
		// it is emitted with an estimate that covers the step).
		var records []record
		collect := func(r record) bool { records = append(records, r); return true }
		saved := emit
		emit = collect
		if prefill {
			for _, g := range ops {
				launch(g, false, 0, nil)
			}
		} else {
			// Inputs are copied eagerly, the layers replay as one CUDA graph.
			for _, g := range ops[:2] {
				launch(g, false, 0, nil)
			}
			ext++
			corr++
			graphID++
			rtStart := cpu + jit(2)
			rtDur := jit(18)
			emit(record{rec: recCPUOp, name: "vllm::cuda_graph_replay", ts: cpu, dur: rtStart - cpu + rtDur + jit(1), ext: ext})
			emit(record{rec: recRuntime, name: "cudaGraphLaunch", ts: rtStart, dur: rtDur, corr: corr, ext: ext})
			gs := rtStart + jit(6)
			for i, g := range ops[2:] {
				launch(g, true, i+1, &gs)
			}
			cpu = rtStart + rtDur + jit(3)
		}
		for _, g := range tail {
			launch(g, false, 0, nil)
		}
		// The host waits for the sampled tokens, then prepares the next
		// step while the GPU idles.
		cpu = max(cpu, gpu) + jit(float64(o.HostGap))
		emit = saved
		if !emit(record{rec: recStep, name: "ProfilerStep#" + strconv.Itoa(stepNo), ts: stepStart, dur: cpu - stepStart - jit(2), ext: stepExt, step: stepNo}) {
			return false
		}
		for _, r := range records {
			if !emit(r) {
				return false
			}
		}
		return true
	}
	for i := 0; i < o.PrefillSteps; i++ {
		if !runStep(true) {
			return
		}
	}
	for i := 0; ; i++ {
		if o.TargetBytes <= 0 && i >= o.DecodeSteps {
			return
		}
		if !runStep(false) {
			return
		}
	}
}
