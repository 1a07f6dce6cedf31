package diagnose

import (
	"math"

	m "github.com/casebook/casebook/metrics"
)

// causalEdges is the causal graph over the catalog: each metric maps to the
// metrics it drives. It encodes how a slowdown propagates in a vLLM service:
// clocks and memory bandwidth set the step time (TPOT), which sets capacity,
// which sets the queue; KV pressure causes preemption, which costs prefill
// recompute and TTFT; longer prompts cost prefill and KV; the gateway only
// adds to the gateway's own E2E. Over-long prompts are rejected and queue
// timeouts abort requests, so both feed the error rate; with chunked
// prefill, prefill work also stretches the decode steps it shares.
var causalEdges = map[string][]string{
	m.GPUTemp:          {m.SMClock},
	m.Power:            {m.SMClock},
	m.SMClock:          {m.TPOT, m.PrefillTime},
	m.MemClock:         {m.DRAMActive, m.TPOT},
	m.DRAMActive:       {m.TPOT},
	m.RejectionRate:    {m.TPOT, m.GenerationTPS},
	m.ArrivalRPS:       {m.QueueDepth, m.RunningSeqs, m.ThroughputRPS, m.PromptTPS},
	m.MeanPromptTokens: {m.PrefillTime, m.PromptTPS, m.KVCacheUsage, m.ErrorRate},
	m.KVCacheHitRate:   {m.PrefillTime},
	m.KVCacheUsage:     {m.PreemptionRate},
	m.PreemptionRate:   {m.TTFT, m.PrefillTime, m.QueueDepth, m.KVCacheHitRate},
	m.RunningSeqs:      {m.KVCacheUsage, m.TPOT, m.SMUtil, m.DRAMActive},
	m.SMUtil:           {m.TensorActive},
	m.QueueDepth:       {m.QueueTime},
	m.QueueTime:        {m.TTFT, m.ErrorRate},
	m.PrefillTime:      {m.TTFT, m.QueueTime, m.TPOT},
	m.TTFT:             {m.E2E, m.TTFTP99},
	m.TPOT:             {m.DecodeTime, m.TPOTP99, m.GenerationTPS, m.ThroughputRPS, m.QueueDepth},
	m.DecodeTime:       {m.E2E},
	m.E2E:              {m.GatewayE2E, m.E2EP99},
	m.ThroughputRPS:    {m.QueueDepth},
}

// causeRoots are the metrics where each root cause enters the graph, most
// specific first.
var causeRoots = map[string][]string{
	m.CauseKVCacheEviction:       {m.KVCacheUsage, m.PreemptionRate},
	m.CauseQueueBacklog:          {m.ArrivalRPS, m.QueueDepth},
	m.CauseGPUUnderutilized:      {m.RunningSeqs, m.SMUtil},
	m.CauseSpecDecodeDegradation: {m.RejectionRate},
	// Longer contexts served from the prefix cache enter where the
	// prompts do (the bandwidth rule cites them only then).
	m.CauseMemoryBandwidthBound: {m.DRAMActive, m.MemClock, m.MeanPromptTokens},
	m.CauseLongPromptPrefill:    {m.MeanPromptTokens},
	m.CausePrefixCacheMiss:      {m.KVCacheHitRate},
	m.CauseGPUThrottling:        {m.GPUTemp, m.Power, m.SMClock},
	m.CauseTransportLatency:     {m.GatewayE2E},
	m.CauseEngineErrors:         {m.ErrorRate},
	// Host overhead has no metric of its own: it shows as slower steps the
	// GPU does not account for, or as time to first token the engine's
	// queue and prefill do not, so it enters where those do and yields to
	// any firing cause upstream of them.
	m.CauseHostOverhead: {m.TPOT, m.DecodeTime, m.SMUtil, m.TTFT},
}

// descendants is the transitive closure of the graph from each metric,
// computed once.
var descendants = func() map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(m.Catalog))
	for _, mt := range m.Catalog {
		seen := map[string]bool{}
		stack := append([]string(nil), causalEdges[mt.ID]...)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[n] {
				continue
			}
			seen[n] = true
			stack = append(stack, causalEdges[n]...)
		}
		out[mt.ID] = seen
	}
	return out
}()

// badZ is the z of a deviation measured in the metric's bad direction
// (positive = worse); two-sided metrics use |z|.
func badZ(id string, d Deviation) float64 {
	mt, ok := m.Lookup(id)
	if !ok {
		return 0
	}
	switch mt.Bad {
	case m.Up:
		return d.Z
	case m.Down:
		return -d.Z
	default:
		return math.Abs(d.Z)
	}
}

// primaryRoot is the root through which a cause entered this snapshot: the
// first of its roots that the rule cited as evidence and that is anomalous,
// else the first cited, else the first present, else the first. Citing
// matters for two-sided metrics: a batch that grew is no evidence of a
// batch that is too small.
func primaryRoot(f Finding, base map[string]Deviation) string {
	roots := causeRoots[f.RootCause]
	if len(roots) == 0 {
		return ""
	}
	cited := func(id string) bool {
		for _, e := range f.Evidence {
			if e.Metric == id {
				return true
			}
		}
		return false
	}
	for _, id := range roots {
		if d, ok := base[id]; ok && d.Anomalous && cited(id) {
			return id
		}
	}
	for _, id := range roots {
		if cited(id) {
			return id
		}
	}
	for _, id := range roots {
		if _, ok := base[id]; ok {
			return id
		}
	}
	return roots[0]
}

// explains reports which anomalous metrics lie at or downstream of a
// cause's roots.
func explains(cause string, anomalous []string) int {
	n := 0
	for _, a := range anomalous {
		for _, root := range causeRoots[cause] {
			if a == root || descendants[root][a] {
				n++
				break
			}
		}
	}
	return n
}

// ranked is one candidate after causal ranking.
type ranked struct {
	finding Finding
	score   float64
	root    string
}

// Causal-ranking constants. A cause that explains every anomaly keeps its
// rule score; one that explains none keeps coverageFloor of it. A cause
// whose entry point lies downstream of another firing cause (and not the
// other way round) is a symptom and keeps symptomFactor of its score.
const (
	coverageFloor = 0.8
	symptomFactor = 0.55
	// upstreamMin is the rule score an upstream cause needs before it can
	// demote its symptoms.
	upstreamMin = 0.35
)

// rankCauses orders findings: rule score, weighted by how many of the
// anomalies the cause explains, with the share of each cause's anomaly
// that another firing cause explains taken off (see residual.go). The
// result is sorted best first.
func rankCauses(findings []Finding, in Input, anomalous []string) []ranked {
	base := in.Baseline
	out := make([]ranked, 0, len(findings))
	for _, f := range findings {
		if f.Score <= 0 {
			continue
		}
		// With nothing anomalous (no baseline, or a finding from absolute
		// limits alone) there is nothing to explain, and no penalty.
		cov := 1.0
		if len(anomalous) > 0 {
			cov = float64(explains(f.RootCause, anomalous)) / float64(len(anomalous))
		}
		out = append(out, ranked{
			finding: f,
			score:   f.Score * (coverageFloor + (1-coverageFloor)*cov),
			root:    primaryRoot(f, base),
		})
	}
	r := &reader{in: in}
	explained := make([]float64, len(out))
	for i, c := range out {
		if c.finding.beyondUpstream {
			continue
		}
		for j, d := range out {
			if i == j || d.finding.Score < upstreamMin {
				continue
			}
			explained[i] = math.Max(explained[i], netExplained(c, d, base, r))
		}
	}
	for i := range out {
		out[i].score *= 1 - (1-symptomFactor)*explained[i]
	}
	sortRanked(out)
	return out
}

// netExplained is the share of c's anomaly that d explains beyond what c
// explains of d's: of two causes that each account for part of the
// other, the one that accounts for more is upstream.
func netExplained(c, d ranked, base map[string]Deviation, r *reader) float64 {
	return math.Max(0, pairExplained(c, d, base, r)-pairExplained(d, c, base, r))
}

// pairExplained is the share of c's anomaly that d explains: the graph's
// verdict (a cause entering downstream of another's anomalous entry
// point, and not upstream of it too, is wholly its symptom), weighed by
// the physics of the pair where a model exists (explainedBy).
func pairExplained(c, d ranked, base map[string]Deviation, r *reader) float64 {
	return explainedBy(c.finding.RootCause, d.finding.RootCause, graphExplained(c, d, base), r)
}

func graphExplained(c, d ranked, base map[string]Deviation) float64 {
	if c.root == "" || d.root == "" || c.root == d.root {
		return 0
	}
	if dd, ok := base[d.root]; !ok || !dd.Anomalous {
		return 0
	}
	if descendants[d.root][c.root] && !descendants[c.root][d.root] {
		return 1
	}
	return 0
}

func sortRanked(rs []ranked) {
	// Insertion sort: at most a dozen entries, and stable on ties so the
	// rule table order breaks them deterministically.
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].score > rs[j-1].score; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// chain returns the causal chain of a cause: its roots that are present and
// moved, then the anomalous metrics reachable from them, breadth first.
func chain(cause string, base map[string]Deviation, isAnomalous func(string) bool) []string {
	out := []string{}
	seen := map[string]bool{}
	var queue []string
	for _, root := range causeRoots[cause] {
		d, ok := base[root]
		if !ok || badZ(root, d) < 2 {
			continue
		}
		seen[root] = true
		out = append(out, root)
		queue = append(queue, root)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, next := range causalEdges[n] {
			if seen[next] {
				continue
			}
			seen[next] = true
			if isAnomalous(next) {
				out = append(out, next)
				queue = append(queue, next)
			}
		}
	}
	return out
}
