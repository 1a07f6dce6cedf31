// Package secondworld generates labelled diagnosis cases from a model of an
// LLM inference service that was written independently of Casebook's
// simulator and rules: a second world to measure diagnosis accuracy on.
//
// Each case is one engine instance (GPU type, model, tensor parallelism,
// engine configuration, traffic mix, telemetry coverage) observed for 66
// minutes. Every minute the generator solves the engine's steady state from
// physics: a roofline step time (weights and KV bytes against DRAM
// bandwidth, FLOPs against tensor throughput, all-reduce time, and host
// overhead that only partly overlaps the GPU), continuous batching under a
// token budget with chunked prefill, a paged KV cache whose occupancy
// drives preemptions and prefix-cache retention, speculative decoding, and
// queueing (an M/M/c wait below capacity, a fluid backlog bounded by client
// timeouts above it). Power, clocks and temperature follow from activity
// through power limits and a thermal model.
//
// A fault is a change of a physical input (a smaller KV pool, a lower
// power limit, more CPU time per step, lower draft acceptance, ...), never
// a change of a symptom; the symptoms and their cascades emerge from the
// model. See README.md for the model, its sources and how it differs from
// a typical simulator.
//
// Generate is deterministic for a seed: case i draws from its own random
// stream (seed, i).
package secondworld
