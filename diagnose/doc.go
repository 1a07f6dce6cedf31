// Package diagnose names the root cause of an inference-service slowdown from
// one metrics.Snapshot, the way a senior inference engineer would.
//
// The engine combines four pieces, all pure functions over metrics types:
//
//   - baseline: the deviation of every current value from the scope's own
//     history (mean and standard deviation, with a median/MAD fallback and a
//     floor on the scale so a flat history does not make every wiggle an
//     anomaly);
//   - rules: one Rule per root cause in metrics.Causes, each reading absolute
//     physics (saturation knees, TTFT/TPOT, queue share of E2E, gateway minus
//     engine E2E, KV usage near 1, clocks against their baseline) together
//     with the deviations, and returning a score and the evidence it read;
//   - causal ranking: a graph over the catalog from causes to symptoms, used
//     to prefer the most upstream anomalous cause that explains the others
//     and to report the chain from cause to symptoms;
//   - calibration: a fixed, documented mapping from the winning score and its
//     margin over the runner-up to a confidence in 0-1.
//
// Evaluation (Evaluation, Evaluate) measures accuracy, per-cause precision
// and recall, the confusion matrix and the calibration of the confidence on
// a labelled corpus. ParseSnapshot is a fast, parity-fuzzed front end to
// metrics.DecodeSnapshot for bulk input.
//
// Every title and sentence the package shows lives in texts.go.
package diagnose
