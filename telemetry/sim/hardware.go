package sim

import (
	"fmt"
	"math"
	"strconv"
)

// GPUSpec describes one accelerator model.
type GPUSpec struct {
	Name          string  // dcgm-exporter modelName label
	MemoryMiB     float64 // framebuffer total
	ReservedMiB   float64 // framebuffer reserved by the driver
	HBMBytesPerS  float64 // peak HBM bandwidth
	PeakFLOPS     float64 // dense BF16 tensor FLOP/s at the max SM clock
	MaxSMClockMHz float64
	MemClockMHz   float64
	PowerLimitW   float64
	IdlePowerW    float64
	SlowdownC     float64 // the temperature at which the clocks start to drop
	AmbientC      float64 // inlet air
	ThermalCPerW  float64 // steady-state temperature rise per watt
	ThermalTauS   float64 // time constant of the die temperature
	Driver        string
}

// H100 is an NVIDIA H100 80GB HBM3 (SXM).
var H100 = GPUSpec{
	Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, ReservedMiB: 586,
	HBMBytesPerS: 3.35e12, PeakFLOPS: 989e12,
	MaxSMClockMHz: 1980, MemClockMHz: 2619,
	PowerLimitW: 700, IdlePowerW: 72,
	SlowdownC: 87, AmbientC: 27, ThermalCPerW: 0.072, ThermalTauS: 60,
	Driver: "560.35.03",
}

// The other accelerators a corpus case may run on (datasheet figures; the
// thermal constants are typical of their air-cooled boards).
var (
	// H200 is an NVIDIA H200 (SXM, 141 GB HBM3e).
	H200 = GPUSpec{
		Name: "NVIDIA H200", MemoryMiB: 143771, ReservedMiB: 592,
		HBMBytesPerS: 4.8e12, PeakFLOPS: 989e12,
		MaxSMClockMHz: 1980, MemClockMHz: 3201,
		PowerLimitW: 700, IdlePowerW: 78,
		SlowdownC: 87, AmbientC: 27, ThermalCPerW: 0.07, ThermalTauS: 60,
		Driver: "560.35.03",
	}
	// A100 is an NVIDIA A100 80GB (SXM, HBM2e).
	A100 = GPUSpec{
		Name: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, ReservedMiB: 512,
		HBMBytesPerS: 2.04e12, PeakFLOPS: 312e12,
		MaxSMClockMHz: 1410, MemClockMHz: 1593,
		PowerLimitW: 400, IdlePowerW: 55,
		SlowdownC: 86, AmbientC: 27, ThermalCPerW: 0.12, ThermalTauS: 50,
		Driver: "550.90.07",
	}
	// L40S is an NVIDIA L40S (PCIe, 48 GB GDDR6).
	L40S = GPUSpec{
		Name: "NVIDIA L40S", MemoryMiB: 46068, ReservedMiB: 450,
		HBMBytesPerS: 0.864e12, PeakFLOPS: 362e12,
		MaxSMClockMHz: 2520, MemClockMHz: 9001,
		PowerLimitW: 350, IdlePowerW: 35,
		SlowdownC: 88, AmbientC: 28, ThermalCPerW: 0.15, ThermalTauS: 45,
		Driver: "550.90.07",
	}
)

// Constants are the physical constants of one deployment that the engine
// physics reads besides the model and its configuration: the accelerator,
// how much of its peak bandwidth and compute the kernels reach, and the
// fixed CPU-side cost of an engine step. The live cluster uses
// DefaultConstants; each corpus case draws its own (see Scenarios), so
// that no threshold read off one set of them fits them all.
type Constants struct {
	GPU GPUSpec
	// BWEfficiency is the share of peak HBM bandwidth decode kernels reach.
	BWEfficiency float64
	// FLOPSEfficiency is the share of peak tensor FLOP/s the matmuls reach.
	FLOPSEfficiency float64
	// HostStepMs is the CPU-side time of one engine step (scheduler,
	// sampling, kernel launches), ms.
	HostStepMs float64
	// SyncMsPerLayer is the tensor-parallel all-reduce cost per layer and
	// step, ms (only when TP > 1).
	SyncMsPerLayer float64
	// DraftMsPerToken is the draft model's time per speculative token, ms.
	DraftMsPerToken float64
}

// DefaultConstants are the live cluster's constants: H100s at the
// efficiencies the simulator has always used.
func DefaultConstants() Constants {
	return Constants{GPU: H100, BWEfficiency: 0.8, FLOPSEfficiency: 0.6, HostStepMs: 1.1, SyncMsPerLayer: 0.008, DraftMsPerToken: 0.3}
}

// ModelSpec describes a served model and its traffic.
type ModelSpec struct {
	Name      string  // served model name, the model_name label
	PodPrefix string  // pods are named <PodPrefix>-<n>
	Params    float64 // parameters
	Layers    int
	KVHeads   int
	HeadDim   int
	// Trace names the Azure trace whose request sizes and burstiness the
	// model's traffic follows ("conv" or "code").
	Trace string
	// PeakRPS is the arrival rate per instance at the weekday peak.
	PeakRPS float64
	// SharedPrefix is the share of prompt tokens in prefixes shared
	// between requests (system prompts, few-shot headers).
	SharedPrefix float64
	// Acceptance is the per-token acceptance probability of the draft.
	Acceptance float64
	// SpecTokens is the default num_speculative_tokens.
	SpecTokens int
	// Burstiness is the share of the trace's excess arrival dispersion
	// (index of dispersion above Poisson) the model's traffic shows; the
	// rest of its traffic is steadier API load.
	Burstiness float64
}

// KVBytesPerToken is the K and V cache size of one token over all layers
// in BF16: layers x KV heads x head dim x 2 (K and V) x 2 bytes. Under
// tensor parallelism each GPU holds 1/TP of it.
func (m ModelSpec) KVBytesPerToken() float64 {
	return 2 * float64(m.Layers*m.KVHeads*m.HeadDim) * 2
}

// WeightBytes is the size of the BF16 weights.
func (m ModelSpec) WeightBytes() float64 { return 2 * m.Params }

// Models are the model specs New draws from, in order.
var Models = []ModelSpec{
	{Name: "llama-3.1-8b-instruct", PodPrefix: "llama-8b", Params: 8.03e9, Layers: 32, KVHeads: 8, HeadDim: 128,
		Trace: "conv", PeakRPS: 32, SharedPrefix: 0.45, Acceptance: 0.78, SpecTokens: 3, Burstiness: 0.5},
	{Name: "qwen2.5-32b-instruct", PodPrefix: "qwen-32b", Params: 32.8e9, Layers: 64, KVHeads: 8, HeadDim: 128,
		Trace: "code", PeakRPS: 4, SharedPrefix: 0.35, Acceptance: 0.8, SpecTokens: 3, Burstiness: 0.1},
	{Name: "mistral-7b-instruct-v0.3", PodPrefix: "mistral-7b", Params: 7.25e9, Layers: 32, KVHeads: 8, HeadDim: 128,
		Trace: "conv", PeakRPS: 26, SharedPrefix: 0.4, Acceptance: 0.77, SpecTokens: 3, Burstiness: 0.5},
	{Name: "qwen2.5-14b-instruct", PodPrefix: "qwen-14b", Params: 14.7e9, Layers: 48, KVHeads: 8, HeadDim: 128,
		Trace: "code", PeakRPS: 9, SharedPrefix: 0.35, Acceptance: 0.77, SpecTokens: 3, Burstiness: 0.1},
}

func modelSpec(i int) ModelSpec {
	m := Models[i%len(Models)]
	if k := i / len(Models); k > 0 {
		m.Name += "-" + strconv.Itoa(k+1)
		m.PodPrefix += "-" + strconv.Itoa(k+1)
	}
	return m
}

// EngineConfig is the vLLM engine configuration of one instance: the knobs
// suggested actions change. It is exposed as vllm:cache_config_info labels.
type EngineConfig struct {
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization"`
	MaxNumSeqs           int     `json:"max_num_seqs"`
	MaxNumBatchedTokens  int     `json:"max_num_batched_tokens"`
	MaxModelLen          int     `json:"max_model_len"`
	EnablePrefixCaching  bool    `json:"enable_prefix_caching"`
	NumSpeculativeTokens int     `json:"num_speculative_tokens"`
	TensorParallelSize   int     `json:"tensor_parallel_size"`
	Replicas             int     `json:"replicas"`
	BlockSize            int     `json:"block_size"`
}

func defaultConfig(m ModelSpec, tp, replicas int) EngineConfig {
	return EngineConfig{
		GPUMemoryUtilization: 0.9, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192,
		MaxModelLen: 32768, EnablePrefixCaching: true, NumSpeculativeTokens: m.SpecTokens,
		TensorParallelSize: tp, Replicas: replicas, BlockSize: 16,
	}
}

// Validate reports what is wrong with the configuration.
func (c EngineConfig) Validate() error {
	switch {
	case c.GPUMemoryUtilization <= 0.1 || c.GPUMemoryUtilization > 0.99:
		return fmt.Errorf("gpu_memory_utilization %g is outside (0.1, 0.99]", c.GPUMemoryUtilization)
	case c.MaxNumSeqs < 1 || c.MaxNumSeqs > 4096:
		return fmt.Errorf("max_num_seqs %d is outside 1..4096", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 16 || c.MaxNumBatchedTokens > 1<<20:
		return fmt.Errorf("max_num_batched_tokens %d is outside 16..1048576", c.MaxNumBatchedTokens)
	case c.MaxModelLen < 256 || c.MaxModelLen > 1<<20:
		return fmt.Errorf("max_model_len %d is outside 256..1048576", c.MaxModelLen)
	case c.NumSpeculativeTokens < 0 || c.NumSpeculativeTokens > 16:
		return fmt.Errorf("num_speculative_tokens %d is outside 0..16", c.NumSpeculativeTokens)
	case c.TensorParallelSize < 1 || c.TensorParallelSize > 8:
		return fmt.Errorf("tensor_parallel_size %d is outside 1..8", c.TensorParallelSize)
	case c.Replicas < 1 || c.Replicas > 16:
		return fmt.Errorf("replicas %d is outside 1..16", c.Replicas)
	case c.BlockSize != 16 && c.BlockSize != 32 && c.BlockSize != 8:
		return fmt.Errorf("block_size %d is not 8, 16 or 32", c.BlockSize)
	}
	return nil
}

// activationReserveBytes is the per-GPU memory vLLM keeps outside the KV
// pool for activations, CUDA graphs and the NCCL buffers.
const activationReserveBytes = 3.5 * (1 << 30)

// kvPoolTokens is the KV-cache capacity of an instance in tokens, as vLLM
// sizes it at start-up: per GPU, gpu_memory_utilization of the framebuffer
// minus the weight shard and the activation reserve, in whole blocks of
// block_size tokens, each token taking the model's KV bytes divided by the
// tensor-parallel degree (the KV heads are split across the GPUs).
func kvPoolTokens(m ModelSpec, cfg EngineConfig) float64 {
	return kvPoolTokensOn(H100, m, cfg, 0)
}

// kvPoolTokensOn is kvPoolTokens on gpu when another process holds claim
// bytes of each GPU inside the engine's share.
func kvPoolTokensOn(gpu GPUSpec, m ModelSpec, cfg EngineConfig, claim float64) float64 {
	g := float64(max(1, cfg.TensorParallelSize))
	perGPU := cfg.GPUMemoryUtilization*gpu.MemoryMiB*(1<<20) - m.WeightBytes()/g - activationReserveBytes - claim
	blockBytes := float64(max(1, cfg.BlockSize)) * m.KVBytesPerToken() / g
	blocks := math.Floor(math.Max(0, perGPU) / blockBytes)
	return blocks * float64(cfg.BlockSize)
}
