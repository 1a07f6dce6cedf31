// Package robust holds the order statistics that the baseline and the
// forecaster share: an in-place k-th smallest selection and the median,
// in linear expected time and without allocating.
package robust
