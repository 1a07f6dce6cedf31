// Package metrics is Casebook's vocabulary: the four-dimension metric catalog,
// the snapshot contract that outside tools produce and consume, time series
// types, and the root-cause taxonomy.
//
// Every other package reads metric ids, units, bad directions, display
// labels, sentence names and PromQL from Catalog, and cause titles from
// Causes (CauseTitle); nothing else hard-codes a metric name or a cause
// title. The package does no I/O.
package metrics
