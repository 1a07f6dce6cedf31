// Package diagnose names the root cause of an inference-service slowdown from
// one metrics.Snapshot, the way a senior inference engineer would.
//
// The engine combines these pieces, all pure functions over metrics types:
//
//   - baseline: the deviation of every current value from the scope's own
//     history less its last five minutes (RecentWindow), which may hold a
//     fault's onset and serve to tell what moved first: mean and standard
//     deviation, with a median/MAD fallback and a floor on the scale so a
//     flat history does not make every wiggle an anomaly. StatusDeviations,
//     for the console's status badges rather than diagnosis, keeps a
//     deviation only once it has held, materially, for five one-minute
//     readings and outlasts the excursions the hour already held, so
//     traffic bursts are not a warning;
//   - rules: one Rule per root cause in metrics.Causes, each reading absolute
//     physics (saturation knees, TTFT/TPOT, queue share of E2E, gateway minus
//     engine E2E, KV usage near 1, clocks against their baseline) together
//     with the deviations, and returning a score and the evidence it read;
//   - causal ranking: a graph over the catalog from causes to symptoms, used
//     to prefer the most upstream anomalous cause that explains the others
//     and to report the chain from cause to symptoms; residual ranking
//     (residual.go) weighs each pair of firing causes by how much of one's
//     anomaly the other predicts through the physical relation between
//     them (KV usage = batch x tokens a sequence, batch = throughput x step
//     time, capacity = batch / service time, GPU activity held or falling
//     with a slower step), so a symptom an upstream cause fully explains
//     does not win, and one that coincides with it does not lose;
//   - absolute physics (absolute.go): per cause, a signature read from the
//     current values alone against limits that hold for any vLLM service
//     (a few percent of requests failing, KV usage at its knee with
//     preemptions, a queue deeper than the running batch behind saturated
//     SMs, a busy GPU below every boost clock or at its slowdown
//     temperature, seconds spent outside the engine, most drafts
//     rejected). With history it counts by how much more it holds than at
//     the baseline, so a chronic state is not an incident; without
//     history it counts in full, and the confidence is scaled down by the
//     share of metrics that lack a baseline (the footing) and a note says
//     so;
//   - physical checks across causes: a queue that neither more load nor
//     slower steps nor a full cache explain is capped admission
//     (underutilisation), not a backlog; causes that add prefill cannot
//     make the GPU compute less; failures well past a healthy rate while
//     waiting is a small share of the request are the engine's own, not
//     queue timeouts behind another cause; a running batch that grew
//     because each step got slower (by Little's law the batch is
//     throughput x time in the engine), or at lower throughput, is the
//     slow step's symptom, not load, and load explains a slower step only
//     up to what it grew; time to first token that grew outside the
//     engine's queue and prefill is spent in the API server (host
//     overhead), and when a scrape lost the queue or prefill interval
//     the queue's depth or the prompts' length and hits stand in for it;
//     a bigger batch keeps the GPU busier each step, so with requests
//     hardly waiting only activity beyond the batch's growth counts as
//     the GPU working harder; prompts that grew with content the prefix
//     cache serves add no prefill but longer contexts for decode to read
//     (bandwidth, not a prefill surge); longer prompts claim the slower
//     prefill only for the part of the uncached tokens' growth their
//     length accounts for, the rest being hits lost to a storm they could
//     not cause; a hit rate that fell to nothing in the recent minutes
//     and is climbing back is a cache a restart emptied, not
//     traffic that stopped sharing prefixes, and slower steps around an
//     idle GPU beside such a cache are the restart's downtime, not host
//     overhead; failures count as clients
//     timing out of a queue only once waiting dominates their requests,
//     and as clients leaving a slow gateway when the time outside the
//     engine grew while the engine's did not; more load than the engine
//     serves comfortably may go into the running batch rather than the
//     waiting queue, which shows as latency growing clearly faster than
//     the load; TPOT is time per token, so drafts rejected more often
//     explain its growth with no step slower; a clock that fell with the
//     GPU's activity is an idle GPU's power management, not throttling;
//     a rule's physical checks discount its absolute
//     signature as well as its own score; one metric beyond AnomalyZ that
//     a rule explains is named before users feel it; and a change of
//     traffic volume whose latency impact stays within the load's growth,
//     with no queue and no errors, is not an incident even when no rule
//     fits;
//   - calibration: a fixed, documented mapping from the winning score and its
//     margin over the runner-up to a confidence in 0-1; once the knowledge
//     base holds 100 reviews that record the confidence they were
//     diagnosed at (calibration.go), every confidence is mapped through an
//     isotonic fit of "confirmed, not corrected" on that raw confidence,
//     learned from the last 1,000 of them at run time, so a confidence of
//     0.8 is right about 80% of the time on this deployment's own
//     incidents;
//   - similar-case matching (similar.go): a case signature of 32 features
//     (24 direction-aware, log-squashed z-scores against the scope's own
//     baseline, neutral when missing, and 8 physical ratios: TTFT/TPOT,
//     queue share of E2E, gateway excess over engine E2E, KV usage,
//     prefix-hit change, SM activity per running sequence against its
//     baseline, error level, draft rejection), stored as 7-bit codes in a
//     KnowledgeBase of reviewed cases (confirmed, corrected or known
//     truth; unreviewed diagnoses never teach). The k nearest cases (L1
//     distance, a SWAR scan over one flat slice, 32 bytes a case; once ten
//     cases of two causes are labelled, each feature is weighted by how
//     well it separates the labelled causes, weights.go) vote by
//     similarity², review (a correction counts 1.5) and recency (90-day
//     half-life, floor 0.25). Once the knowledge base holds 50 cases, a
//     multinomial logistic regression of the label on the signature (the
//     features, their absolute values and a one-hot of the cause the
//     rules alone named for the case, which each labelled case keeps;
//     classifier.go), refitted as cases arrive, adds its probabilities to
//     the votes with the support of three close cases: it learns which
//     combinations of features separate the labelled causes, where the
//     vote counts every feature of a neighbour alike, and where the rules
//     name a symptom in place of the labelled cause. Their votes and the rules' answer are mixed
//     with a weight that grows with the votes' support, so close agreeing
//     cases overturn a rule (the diagnosis notes why) and can name a cause
//     no rule covers, while a few distant or split cases leave it. The
//     diagnosis lists the neighbours with their similarity and the
//     deviations they share;
//   - explaining away (explain.go): when the rules' answer and their
//     runner-up both show signs the other cause alone does not produce
//     (judged against the labelled cases of each), the snapshot is read as
//     two faults, and the one that showed first in the snapshot's recent
//     minutes is named (else the one expressed more strongly against its
//     own labelled cases), even if the other moves more metrics; and
//     where the rules say "none", a cause they considered is named when
//     its signs together exceed those of 95% of the labelled healthy
//     cases. The prototypes, signs and ranks are all learned from the
//     knowledge base.
//
// Evaluation (Evaluation, Evaluate) measures accuracy, per-cause precision
// and recall, the confusion matrix and the calibration of the confidence on
// a labelled corpus; EvaluateFeedback replays a corpus in order with a
// growing knowledge base (optionally with wrong labels) and reports rules
// alone against rules with matching and against PlainKNN, the simplest
// case-based baseline (a 5-nearest-neighbour vote on log-ratios of current
// values to their history mean), block by block, with the calibration
// error of both rules and matching. ParseSnapshot is a fast,
// parity-fuzzed front end to metrics.DecodeSnapshot for bulk input.
//
// Where dcgm-exporter runs with its default counters, the profiling fields
// (SM, tensor and DRAM activity) are absent and gpu_sm_util is the GPU_UTIL
// duty cycle, near 100% whenever the engine is busy. The GPU-side rules
// then read the duty cycle only for gaps between kernels, and power per
// generated token for work per step, say so in a note and lower the
// confidence (noProfilingFactor).
//
// Every title and sentence the package shows lives in texts.go.
package diagnose
