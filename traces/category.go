package traces

import "strings"

// Category is the kernel class GPU time is attributed to. The values are
// stable: stored summaries and evidence keys use them.
type Category string

// The kernel categories, in display order.
const (
	CategoryGEMM          Category = "gemm"
	CategoryAttention     Category = "attention"
	CategoryNorm          Category = "normalization"
	CategoryActivation    Category = "activation"
	CategoryRotary        Category = "rotary"
	CategorySampling      Category = "sampling"
	CategoryCommunication Category = "communication"
	CategoryMemory        Category = "memcpy"
	CategoryOther         Category = "other"
)

// categories is the display order; categoryCodes holds one lane letter each.
var categories = [...]Category{
	CategoryGEMM, CategoryAttention, CategoryNorm, CategoryActivation,
	CategoryRotary, CategorySampling, CategoryCommunication, CategoryMemory,
	CategoryOther,
}

const categoryCodes = "ganxrscmo"

// Categories returns every category in display order.
func Categories() []Category {
	out := make([]Category, len(categories))
	copy(out, categories[:])
	return out
}

// index returns the position of c in the display order, or the position of
// CategoryOther for an unknown value.
func (c Category) index() int {
	for i, k := range categories {
		if k == c {
			return i
		}
	}
	return len(categories) - 1
}

// Title is a short human name for the category, for legends and tables.
func (c Category) Title() string {
	switch c {
	case CategoryGEMM:
		return "GEMM"
	case CategoryAttention:
		return "Attention + KV write"
	case CategoryNorm:
		return "Normalization"
	case CategoryActivation:
		return "Activation"
	case CategoryRotary:
		return "Rotary"
	case CategorySampling:
		return "Sampling / softmax"
	case CategoryCommunication:
		return "Communication"
	case CategoryMemory:
		return "Memcpy / memset"
	default:
		return "Other"
	}
}

// rule is one classification rule: a kernel whose lower-cased name contains
// any of the substrings belongs to the category. Rules are tried in order
// and the first match wins; the order is part of the contract documented in
// doc.go.
type rule struct {
	category Category
	contains []string
}

var rules = []rule{
	// Collectives first: NCCL names contain "reduce" and element types.
	{CategoryCommunication, []string{
		"nccl", "cross_device_reduce", "custom_all_reduce", "allreduce", "all_reduce",
		"allgather", "all_gather", "reducescatter", "reduce_scatter", "alltoall", "all_to_all",
	}},
	// Explicit sampling kernels before attention: FlashInfer's sampling
	// kernels live in the flashinfer namespace too.
	{CategorySampling, []string{"sampling", "topktopp", "top_k_top_p", "multinomial"}},
	// Attention before GEMM: FA3 kernels are cutlass::device_kernel<flash::...>.
	// The KV-cache write (reshape_and_cache, FlashInfer's append) is counted
	// here; see doc.go.
	{CategoryAttention, []string{
		"flash_fwd", "flash_bwd", "flashattn", "flash::", "fmha", "paged_attention",
		"batchprefill", "batchdecode", "singleprefill", "singledecode", "mergestate",
		"attention", "attn_fwd", "reshape_and_cache", "concat_and_cache",
		"appendpagedkvcache", "append_paged_kv", "sdpa",
	}},
	// Dense and grouped matrix multiplies, including MoE expert GEMMs.
	{CategoryGEMM, []string{
		"gemm", "xmma", "nvjet", "cutlass", "cublas", "s16816", "s1688", "gemv",
		"splitkreduce", "matmul", "scaled_mm", "fused_moe_kernel", "marlin",
	}},
	{CategoryNorm, []string{
		"rms_norm", "rmsnorm", "layer_norm", "layernorm", "group_norm", "groupnorm",
		"batch_norm", "rsqrt",
	}},
	{CategoryRotary, []string{"rotary", "rope_", "_rope"}},
	{CategoryActivation, []string{
		"act_and_mul", "silu", "gelu", "swiglu", "geglu", "relu", "sigmoid", "tanh",
	}},
	// Generic softmax/top-k/sort glue of the sampler (logits -> token).
	// MoE routing kernels are matched before this rule and counted as other.
	{CategoryOther, []string{"moe_align", "topkgating", "topk_softmax", "moe_sum"}},
	{CategorySampling, []string{"softmax", "topk", "top_k", "sort", "argmax", "exponential", "gumbel"}},
}

// Classify returns the category of a kernel by its (demangled or short)
// name. Memcpy and memset activities are classified by their kind, not by
// name; see ClassifyActivity.
func Classify(name string) Category {
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "memcpy") || strings.HasPrefix(lower, "memset") {
		return CategoryMemory
	}
	for _, r := range rules {
		for _, s := range r.contains {
			if strings.Contains(lower, s) {
				return r.category
			}
		}
	}
	return CategoryOther
}

// ClassifyActivity returns the category of one GPU activity: every memcpy
// and memset is CategoryMemory; kernels go through Classify.
func ClassifyActivity(kind Kind, name string) Category {
	if kind == KindMemcpy || kind == KindMemset {
		return CategoryMemory
	}
	return Classify(name)
}
