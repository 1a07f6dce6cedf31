package secondworld

// gpu is one accelerator model with the figures the roofline and the
// power/thermal model need. Bandwidth and dense tensor throughput are the
// vendor datasheet peaks; achievable fractions are applied in the step model.
type gpu struct {
	name       string
	memGiB     float64 // framebuffer
	bwGBs      float64 // peak DRAM bandwidth, GB/s
	tflops     float64 // dense BF16 tensor peak, TFLOP/s
	fp8        bool    // FP8 tensor cores (FP8 doubles the tensor peak)
	tdpW       float64 // default board power limit
	idleW      float64
	maxSMMHz   float64 // boost SM clock
	idleSMMHz  float64
	memMHz     float64 // memory clock as DCGM reports it
	slowdownC  float64 // temperature at which the driver starts cutting clocks (own approximation)
	rth        float64 // board-to-inlet thermal resistance, °C per W (own approximation)
	linkGBs    float64 // effective all-reduce bus bandwidth per GPU (NVLink or PCIe)
	linkLatUs  float64 // per all-reduce fixed latency
	shareCount float64 // relative frequency in the generated fleet
}

// gpus: A100 SXM4 80GB (2,039 GB/s, 312 TFLOPS BF16 dense, 400 W), H100 SXM5
// (3,350 GB/s, 989 TFLOPS, 700 W), H200 SXM (141 GB, 4,800 GB/s, 989 TFLOPS,
// 700 W), L40S (48 GB GDDR6, 864 GB/s, 362 TFLOPS dense, 350 W, PCIe only).
var gpus = []gpu{
	{"A100-SXM4-80GB", 80, 2039, 312, false, 400, 55, 1410, 210, 1593, 86, 0.115, 230, 7, 25},
	{"H100-SXM5-80GB", 80, 3350, 989, true, 700, 85, 1980, 345, 2619, 87, 0.072, 360, 6, 35},
	{"H200-SXM-141GB", 141, 4800, 989, true, 700, 85, 1980, 345, 3201, 87, 0.068, 360, 6, 20},
	{"L40S", 48, 864, 362, true, 350, 35, 2520, 210, 9001, 88, 0.150, 22, 20, 20},
}

// model is one served LLM. For mixture-of-experts models denseB is the part
// every token reads (attention, embeddings, router); the rest is split over
// experts, of which topK are used per token.
type model struct {
	name          string
	paramsB       float64
	activeB       float64
	denseB        float64
	experts, topK int
	layers        int
	hidden        int // residual width (all-reduce message size per token)
	qDim          int // query heads x head dim (attention FLOPs)
	kvHeads       int
	headDim       int
	maxLen        int
	shareCount    float64
}

var models = []model{
	{"llama-3.1-8b-instruct", 8.03, 8.03, 8.03, 0, 0, 32, 4096, 4096, 8, 128, 131072, 22},
	{"mistral-7b-instruct-v0.3", 7.25, 7.25, 7.25, 0, 0, 32, 4096, 4096, 8, 128, 32768, 8},
	{"qwen2.5-14b-instruct", 14.8, 14.8, 14.8, 0, 0, 48, 5120, 5120, 8, 128, 32768, 12},
	{"qwen2.5-32b-instruct", 32.8, 32.8, 32.8, 0, 0, 64, 5120, 5120, 8, 128, 32768, 14},
	{"llama-3.3-70b-instruct", 70.6, 70.6, 70.6, 0, 0, 80, 8192, 8192, 8, 128, 131072, 20},
	{"mixtral-8x7b-instruct", 46.7, 12.9, 1.63, 8, 2, 32, 4096, 4096, 8, 128, 32768, 10},
	{"qwen3-30b-a3b", 30.5, 3.3, 1.49, 128, 8, 48, 2048, 4096, 4, 128, 40960, 12},
}

// expertsTouched is the expected fraction of a MoE layer's experts that at
// least one of t tokens routes to (uniform routing): small decode batches
// read only a few experts, large batches read them all.
func (m model) expertsTouched(t float64) float64 {
	if m.experts == 0 {
		return 1
	}
	p := float64(m.topK) / float64(m.experts)
	return 1 - pow(1-p, t)
}

// weightBytesRead is the bytes of weights one GPU streams for a step of t tokens.
func (m model) weightBytesRead(t, bytesPerParam float64, tp int) float64 {
	b := m.denseB + (m.paramsB-m.denseB)*m.expertsTouched(t)
	return b * 1e9 * bytesPerParam / float64(tp)
}

// kvBytesPerToken is the KV-cache footprint of one token on one GPU. KV
// heads are split over the tensor-parallel group; when there are fewer KV
// heads than GPUs they are replicated.
func (m model) kvBytesPerToken(kvDtypeBytes float64, tp int) float64 {
	split := tp
	if m.kvHeads < split {
		split = m.kvHeads
	}
	return 2 * float64(m.layers) * float64(m.kvHeads) * float64(m.headDim) * kvDtypeBytes / float64(split)
}
