package traces

import "testing"

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		kernel string
		want   Category
	}{
		// GEMM: cuBLAS Hopper, nvjet, Ampere, CUTLASS, quantised, MoE, gemv.
		{"cublas sm90 xmma", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", CategoryGEMM},
		{"cublas nvjet tst", "nvjet_tst_192x192_64x3_1x2_h_bz_coopB_NNT", CategoryGEMM},
		{"cublas nvjet sm90", "nvjet_sm90_tst_256x128_64x4_2x1_v_bz_coopA_bias_TNT", CategoryGEMM},
		{"cublas ampere", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", CategoryGEMM},
		{"cublas sm80 xmma", "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize160x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel", CategoryGEMM},
		{"cutlass kernel2 relu epilogue", "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8::Params)", CategoryGEMM},
		{"cutlass scaled mm", "void cutlass::device_kernel<vllm::enable_sm90_or_later<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, cutlass::gemm::collective::CollectiveMma<> > > >(vllm::cutlass_scaled_mm_sm90::Params)", CategoryGEMM},
		{"cublas splitk reduce", "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)", CategoryGEMM},
		{"gemv", "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(float, float)", CategoryGEMM},
		{"triton fused moe", "fused_moe_kernel", CategoryGEMM},

		// Attention: FA2, FA3, PyTorch SDPA copy, FlashInfer, vLLM paged.
		{"fa2 prefill", "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)", CategoryAttention},
		{"fa2 splitkv decode", "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)", CategoryAttention},
		{"fa2 splitkv combine", "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 3, false>(flash::Flash_fwd_params)", CategoryAttention},
		{"pytorch flash", "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)", CategoryAttention},
		{"fa3 hopper", "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, false, false, false, true, true, false, false, true, true, true, false, false>, flash::CollectiveEpilogueFwd<> > > >(flash::FlashAttnFwdSm90<>::Params)", CategoryAttention},
		{"flashinfer batch prefill", "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchPrefillPagedParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)", CategoryAttention},
		{"flashinfer batch decode", "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 8u, 1u, 1u, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)", CategoryAttention},
		{"vllm paged v1", "void vllm::paged_attention_v1_kernel<unsigned short, unsigned short, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false>(unsigned short*, unsigned short const*, unsigned short const*, unsigned short const*, int, float, int const*, int const*, int, float const*, int, int, int, int, float const*, float const*, int, int, int, int, int)", CategoryAttention},
		{"vllm paged v2", "void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, unsigned short*, unsigned short const*, unsigned short const*, unsigned short const*, int, float, int const*, int const*, int, float const*, int, int, int, int, float const*, float const*, int, int, int, int, int)", CategoryAttention},
		{"vllm paged v2 reduce", "void vllm::paged_attention_v2_reduce_kernel<unsigned short, 128, 128, 512>(unsigned short*, float const*, float const*, unsigned short const*, int const*, int)", CategoryAttention},
		{"kv write flash", "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)", CategoryAttention},
		{"kv write legacy", "void vllm::reshape_and_cache_kernel<unsigned short, unsigned short, (vllm::Fp8KVCacheDataType)0>(unsigned short const*, unsigned short const*, unsigned short*, unsigned short*, long const*, int, int, int, int, int, int, float const*, float const*)", CategoryAttention},
		{"mem efficient attention", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", CategoryAttention},

		// Normalization.
		{"vllm rms norm", "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", CategoryNorm},
		{"vllm fused add rms norm", "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", CategoryNorm},
		{"triton rsqrt norm", "triton_red_fused_add_mean_mul_pow_rsqrt_0", CategoryNorm},
		{"torch layer norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", CategoryNorm},

		// Rotary.
		{"vllm rotary", "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", CategoryRotary},
		{"flashinfer rope", "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)", CategoryRotary},

		// Activation.
		{"silu and mul", "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", CategoryActivation},
		{"gelu and mul", "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::gelu_tanh_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", CategoryActivation},
		{"triton silu", "triton_poi_fused_mul_silu_1", CategoryActivation},
		{"torch gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)", CategoryActivation},

		// Sampling, softmax, top-k.
		{"flashinfer topk topp", "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::CUB_200200_900_NS::BlockScanAlgorithm)2, (cub::CUB_200200_900_NS::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned int)", CategorySampling},
		{"torch softmax", "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", CategorySampling},
		{"torch topk", "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, unsigned int*)", CategorySampling},
		{"torch radix sort", "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<float, long, int>::Policy800, true, float, long, int, int, at_cuda_detail::cub::detail::identity_decomposer_t>(int*, int*, int*, int*, float*, float const*, long*, long const*, int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)", CategorySampling},

		// Communication.
		{"nccl dev kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CategoryCommunication},
		{"nccl old kernel", "ncclKernel_AllReduce_RING_LL_Sum_half(ncclWorkElem)", CategoryCommunication},
		{"nccl all gather", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CategoryCommunication},
		{"vllm custom all reduce 1 stage", "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", CategoryCommunication},
		{"vllm custom all reduce 2 stage", "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", CategoryCommunication},

		// Memcpy / memset by name.
		{"memcpy htod", "Memcpy HtoD (Pageable -> Device)", CategoryMemory},
		{"memcpy dtod", "Memcpy DtoD (Device -> Device)", CategoryMemory},
		{"memset", "Memset (Device)", CategoryMemory},

		// Other: MoE routing and elementwise glue.
		{"moe align", "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)", CategoryOther},
		{"moe gating softmax", "void vllm::moe::topkGatingSoftmax<4, 64, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", CategoryOther},
		{"elementwise fill", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", CategoryOther},
		{"index select", "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)", CategoryOther},
		{"empty name", "", CategoryOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.kernel); got != tc.want {
				t.Errorf("Classify(%.80q) = %s, want %s", tc.kernel, got, tc.want)
			}
		})
	}
}

func TestClassifyActivity(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		act  string
		want Category
	}{
		{"memcpy kind wins over name", KindMemcpy, "ncclSomething", CategoryMemory},
		{"memset kind", KindMemset, "whatever", CategoryMemory},
		{"kernel goes by name", KindKernel, "nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNT", CategoryGEMM},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassifyActivity(tc.kind, tc.act); got != tc.want {
				t.Errorf("ClassifyActivity(%v, %q) = %s, want %s", tc.kind, tc.act, got, tc.want)
			}
		})
	}
}

func TestCategoryCodes(t *testing.T) {
	seen := map[byte]bool{'.': true}
	for _, c := range Categories() {
		code := CategoryCode(c)
		if seen[code] {
			t.Errorf("category %s: code %q used twice", c, code)
		}
		seen[code] = true
		if back, ok := CodeCategory(code); !ok || back != c {
			t.Errorf("CodeCategory(%q) = %s, %v; want %s", code, back, ok, c)
		}
		if c.Title() == "Other" && c != CategoryOther {
			t.Errorf("category %s has no title", c)
		}
	}
	if _, ok := CodeCategory('.'); ok {
		t.Error("the idle mark decodes to a category")
	}
}
