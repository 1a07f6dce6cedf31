// Package demo builds the console's demo cluster: the simulated inference
// cluster of telemetry/sim, offered to telemetry as an in-process source
// to back-fill and scrape (telemetry.DemoSource), labelled as a
// Kubernetes scrape of the same cluster would label it. Options is the
// console's demo: its second model's GPUs report dcgm-exporter's default
// counters, without the profiling fields.
package demo
