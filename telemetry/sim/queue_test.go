package sim

import (
	"math/rand/v2"
	"testing"
)

// quietInstance is one instance of the default deployment of spec, warmed
// at a tenth of its capacity.
func quietInstance(spec ModelSpec) (*instance, float64) {
	hw := DefaultConstants()
	cfg := defaultConfig(spec, 1, 2)
	capacity := capacityOf(spec, hw, cfg)
	m := &model{spec: spec, cfg: cfg}
	in := &instance{model: m, cfg: cfg, consts: &hw, rng: rand.New(rand.NewPCG(3, 4)),
		hist: newHistograms(cfg.MaxModelLen), gpus: make([]gpuState, cfg.TensorParallelSize)}
	for i := range in.gpus {
		in.gpus[i] = gpuState{clock: 1, throttle: 1}
	}
	for range 60 {
		in.step(5, 0.1*capacity, neutral())
	}
	return in, capacity
}

// A burst of a few seconds near capacity does not wait as a stationary
// queue at that load would: such a queue needs minutes to build.
func TestQueueBuildsOverItsRelaxationTime(t *testing.T) {
	spec := Models[1]
	spec.Burstiness = 0 // the arrival rate as given
	in, capacity := quietInstance(spec)
	burst := in.step(5, 0.97*capacity, neutral()).queue
	var held float64
	for range 720 { // an hour at the same load
		held = in.step(5, 0.97*capacity, neutral()).queue
	}
	if held < 5*burst {
		t.Errorf("queue wait after one 5 s burst %.3f s, after an hour at the same load %.3f s: the burst should wait far less", burst, held)
	}
}

// With chunked prefill a decode step carries at most the token budget in
// prompt chunks: a prompt burst cannot slow decoding beyond one full-budget
// step, however close the prefill share comes to 1.
func TestChunkedPrefillBoundsInterTokenTime(t *testing.T) {
	spec := Models[1]
	spec.Burstiness = 0
	in, capacity := quietInstance(spec)
	in.cfg.MaxNumBatchedTokens = 512
	in.model.cfg = in.cfg
	quiet := in.step(5, 0.1*capacity, neutral()).itl
	hw := in.constants()
	g := float64(in.cfg.TensorParallelSize)
	// Seconds per prompt token at the longest prompts the trace gives.
	perToken := 2 * spec.Params / (g * hw.GPU.PeakFLOPS * hw.FLOPSEfficiency) * 2
	bound := quiet + 512*perToken
	for _, load := range []float64{0.9, 1.5, 3} {
		if itl := in.step(5, load*capacity, neutral()).itl; itl > bound {
			t.Errorf("at %.1f x capacity the inter-token time is %.3f s, beyond one full 512-token step (%.3f s)", load, itl, bound)
		}
	}
}
