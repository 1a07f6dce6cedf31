// Package metrics is Casebook's vocabulary: the four-dimension metric catalog,
// the snapshot contract that outside tools produce and consume, time series
// types, and the root-cause taxonomy.
//
// Every other package reads metric ids, units, bad directions, display
// labels, sentence names and PromQL from Catalog, and cause titles from
// Causes (CauseTitle); nothing else hard-codes a metric name or a cause
// title. The package does no I/O.
//
// The catalog has an engine dimension: each metric's alternatives belong to
// one engine (vLLM across its release lines, SGLang, TensorRT-LLM,
// llama.cpp; Engines) or to every engine (GPU series, the gateway, NVIDIA
// Dynamo's frontend). Metric.PromQL chains all of them, so one recording
// rule reads every engine under one name; Metric.ForEngine keeps only one
// engine's, and says why when that engine has no equivalent. DetectEngine
// names the engine of a scope from the prefixes of the series it exposes
// and refuses a scope that exposes two. engine_catalog.go cites the file
// and commit each engine's names, types and semantics were read from.
package metrics
