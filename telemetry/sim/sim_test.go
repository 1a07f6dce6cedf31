package sim

import (
	"bytes"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"

	"github.com/casebook/casebook/metrics"
)

// monday is a weekday afternoon near the daily peak.
var monday = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

func parsePage(t *testing.T, c *Cluster, path string) map[string]*dto.MetricFamily {
	t.Helper()
	var b bytes.Buffer
	if !c.Render(path, &b) {
		t.Fatalf("no page at %s", path)
	}
	p := expfmt.NewTextParser(prommodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", path, err, b.String())
	}
	return fams
}

func TestExpositionNamesTypesAndBuckets(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	c.Advance(monday.Add(10 * time.Minute))
	tg := c.Targets()[0]
	engine := parsePage(t, c, tg.EnginePath)
	wantEngine := map[string]dto.MetricType{
		"vllm:num_requests_running": dto.MetricType_GAUGE, "vllm:num_requests_waiting": dto.MetricType_GAUGE,
		"vllm:kv_cache_usage_perc": dto.MetricType_GAUGE, "vllm:cache_config_info": dto.MetricType_GAUGE,
		"vllm:prompt_tokens_total": dto.MetricType_COUNTER, "vllm:generation_tokens_total": dto.MetricType_COUNTER,
		"vllm:num_preemptions_total": dto.MetricType_COUNTER, "vllm:request_success_total": dto.MetricType_COUNTER,
		"vllm:prefix_cache_queries_total": dto.MetricType_COUNTER, "vllm:prefix_cache_hits_total": dto.MetricType_COUNTER,
		"vllm:spec_decode_num_drafts_total": dto.MetricType_COUNTER, "vllm:spec_decode_num_draft_tokens_total": dto.MetricType_COUNTER,
		"vllm:spec_decode_num_accepted_tokens_total":         dto.MetricType_COUNTER,
		"vllm:spec_decode_num_accepted_tokens_per_pos_total": dto.MetricType_COUNTER,
		"vllm:num_requests_waiting_by_reason":                dto.MetricType_GAUGE,
		"vllm:prompt_tokens_cached_total":                    dto.MetricType_COUNTER,
		"http_requests_total":                                dto.MetricType_COUNTER,
	}
	b125 := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
	wantBuckets := map[string][]float64{
		"vllm:time_to_first_token_seconds":           {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
		"vllm:inter_token_latency_seconds":           {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
		"vllm:request_time_per_output_token_seconds": {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
		"vllm:e2e_request_latency_seconds":           {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0},
		"vllm:request_queue_time_seconds":            requestLatencyBuckets,
		"vllm:request_prefill_time_seconds":          requestLatencyBuckets,
		"vllm:request_decode_time_seconds":           requestLatencyBuckets,
		"vllm:request_inference_time_seconds":        requestLatencyBuckets,
		"vllm:request_prompt_tokens":                 b125,
		"vllm:request_generation_tokens":             b125,
		"vllm:iteration_tokens_total":                {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
	}
	for name := range wantBuckets {
		wantEngine[name] = dto.MetricType_HISTOGRAM
	}
	checkFamilies(t, engine, wantEngine)
	for name, want := range wantBuckets {
		for _, m := range engine[name].Metric {
			checkHistogram(t, name, m.GetHistogram(), want)
			checkLabels(t, name, m, "engine", "model_name")
		}
	}
	for _, m := range engine["vllm:request_success_total"].Metric {
		checkLabels(t, "vllm:request_success_total", m, "engine", "finished_reason", "model_name")
	}
	info := engine["vllm:cache_config_info"].Metric[0]
	if got := labelValue(info, "gpu_memory_utilization"); got != "0.9" {
		t.Errorf("cache_config_info gpu_memory_utilization = %q, want 0.9", got)
	}

	gpu := parsePage(t, c, tg.GPUPath)
	wantGPU := map[string]dto.MetricType{}
	for _, n := range []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_XID_ERRORS",
		"DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
		"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
		"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_POWER_MGMT_LIMIT"} {
		wantGPU[n] = dto.MetricType_GAUGE
	}
	wantGPU["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] = dto.MetricType_COUNTER
	wantGPU["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] = dto.MetricType_COUNTER
	checkFamilies(t, gpu, wantGPU)
	for name, f := range gpu {
		if len(f.Metric) != 2 {
			t.Errorf("%s has %d series, want one per GPU of the TP group (2)", name, len(f.Metric))
		}
		for _, m := range f.Metric {
			checkLabels(t, name, m, "DCGM_FI_DRIVER_VERSION", "Hostname", "UUID", "container", "device", "gpu", "modelName", "namespace", "pci_bus_id", "pod")
			if got := labelValue(m, "pod"); got != tg.Instance {
				t.Errorf("%s pod = %q, want %q", name, got, tg.Instance)
			}
		}
	}

	gw := parsePage(t, c, GatewayPath)
	checkFamilies(t, gw, map[string]dto.MetricType{
		metrics.GatewayDurationMetric: dto.MetricType_HISTOGRAM, metrics.GatewayRequestsMetric: dto.MetricType_COUNTER})
	for _, m := range gw[metrics.GatewayDurationMetric].Metric {
		checkHistogram(t, metrics.GatewayDurationMetric, m.GetHistogram(), gatewayBuckets)
		checkLabels(t, metrics.GatewayDurationMetric, m, "model_name", "pod")
	}
}

func checkFamilies(t *testing.T, got map[string]*dto.MetricFamily, want map[string]dto.MetricType) {
	t.Helper()
	for name, typ := range want {
		f, ok := got[name]
		if !ok {
			t.Errorf("family %s is missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("family %s has type %v, want %v", name, f.GetType(), typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected family %s", name)
		}
	}
}

func checkHistogram(t *testing.T, name string, h *dto.Histogram, want []float64) {
	t.Helper()
	var bounds []float64
	prev := 0.0
	for _, b := range h.Bucket {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		bounds = append(bounds, b.GetUpperBound())
		if float64(b.GetCumulativeCount()) < prev {
			t.Errorf("%s: bucket le=%g count %d is below the previous bucket's %g", name, b.GetUpperBound(), b.GetCumulativeCount(), prev)
		}
		prev = float64(b.GetCumulativeCount())
	}
	if !slices.Equal(bounds, want) {
		t.Errorf("%s buckets = %v, want %v", name, bounds, want)
	}
	if prev > float64(h.GetSampleCount()) {
		t.Errorf("%s: last bucket %g exceeds _count %d", name, prev, h.GetSampleCount())
	}
}

func checkLabels(t *testing.T, name string, m *dto.Metric, want ...string) {
	t.Helper()
	var got []string
	for _, l := range m.Label {
		got = append(got, l.GetName())
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s labels = %v, want %v", name, got, want)
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestCountersMonotonicAcrossAdvance(t *testing.T) {
	c := New(Options{Seed: 2, Start: monday})
	prev := map[string]float64{}
	for step := 1; step <= 20; step++ {
		c.Advance(monday.Add(time.Duration(step) * 7 * time.Second))
		err := c.emitAllLocked(func(s Sample) error {
			name := s.Labels[0].Value
			cumulative := strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_bucket") ||
				strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_sum") || name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
			if !cumulative {
				return nil
			}
			if old, ok := prev[s.Key]; ok && s.V < old {
				t.Errorf("step %d: %s fell from %g to %g", step, s.Key, old, s.V)
			}
			prev[s.Key] = s.V
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(prev) < 100 {
		t.Fatalf("only %d cumulative series checked", len(prev))
	}
}

// emitAllLocked emits the current samples of every page.
func (c *Cluster) emitAllLocked(emit func(Sample) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.emitAll(c.now, emit)
}

func TestBackfillEqualsScrape(t *testing.T) {
	from, to := monday, monday.Add(30*time.Minute)
	a := New(Options{Seed: 3, Start: from})
	last := map[string]Sample{}
	err := a.Backfill(from, to, time.Minute, func(s Sample) error {
		if s.T.Equal(to) {
			s.Labels = slices.Clone(s.Labels)
			last[s.Key] = s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b := New(Options{Seed: 3, Start: from})
	for tt := from; !tt.After(to); tt = tt.Add(time.Minute) {
		b.Advance(tt)
	}
	scraped := map[string]float64{}
	addPage := func(path, pod string) {
		for name, f := range parsePage(t, b, path) {
			for _, m := range f.Metric {
				ls := map[string]string{}
				for _, l := range m.Label {
					ls[l.GetName()] = l.GetValue()
				}
				if pod != "" {
					ls["pod"] = pod
				}
				switch f.GetType() {
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					for _, bk := range h.Bucket {
						bl := maps.Clone(ls)
						bl["le"] = leString(path, bk.GetUpperBound())
						scraped[canon(name+"_bucket", bl)] = float64(bk.GetCumulativeCount())
					}
					scraped[canon(name+"_count", ls)] = float64(h.GetSampleCount())
					scraped[canon(name+"_sum", ls)] = h.GetSampleSum()
				case dto.MetricType_COUNTER:
					scraped[canon(name, ls)] = m.GetCounter().GetValue()
				default:
					scraped[canon(name, ls)] = m.GetGauge().GetValue()
				}
			}
		}
	}
	for _, tg := range b.Targets() {
		addPage(tg.EnginePath, tg.Instance)
		addPage(tg.GPUPath, "")
	}
	addPage(GatewayPath, "")
	if len(scraped) != len(last) {
		t.Errorf("scrape has %d series, back-fill %d", len(scraped), len(last))
	}
	for _, s := range last {
		ls := map[string]string{}
		for _, l := range s.Labels[1:] {
			ls[l.Name] = l.Value
		}
		k := canon(s.Labels[0].Value, ls)
		got, ok := scraped[k]
		if !ok {
			t.Errorf("back-filled series %s is not in the scrape", k)
			continue
		}
		if got != s.V {
			t.Errorf("%s: back-fill %v, scrape %v", k, s.V, got)
		}
	}
}

func leString(path string, b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	if path == GatewayPath {
		return goFloat(b)
	}
	return pyFloat(b)
}

func canon(name string, ls map[string]string) string {
	keys := slices.Sorted(maps.Keys(ls))
	var sb strings.Builder
	sb.WriteString(name)
	for _, k := range keys {
		sb.WriteString("," + k + "=" + ls[k])
	}
	return sb.String()
}

// runTwin advances a cluster with the fault and a fault-free twin of the
// same seed and returns the model's catalog values over the last minute.
func runTwin(t *testing.T, cause string, scope metrics.Scope, severity, loadScale float64) (faulty, twin metrics.Values) {
	t.Helper()
	onset := monday.Add(10 * time.Minute)
	end := monday.Add(20 * time.Minute)
	values := func(inject bool) metrics.Values {
		c := New(Options{Seed: 4, Start: monday})
		for _, m := range c.models {
			m.spec.PeakRPS *= loadScale
		}
		if inject {
			if _, err := c.Inject(Fault{Cause: cause, Scope: scope, Severity: severity, Start: onset}); err != nil {
				t.Fatal(err)
			}
		}
		c.Advance(end.Add(-time.Minute))
		ins, err := c.scopeInstances(scope)
		if err != nil {
			t.Fatal(err)
		}
		prev := capturesOf(ins)
		c.Advance(end)
		return catalogValues(prev, capturesOf(ins), true)
	}
	return values(true), values(false)
}

func capturesOf(ins []*instance) []capture {
	out := make([]capture, len(ins))
	for i, in := range ins {
		out[i] = captureOf(in)
	}
	return out
}

func TestFaultsMoveTheirPhysicalChain(t *testing.T) {
	llama := metrics.Scope{Model: Models[0].Name}
	type move struct {
		id    string
		ratio float64 // faulty/twin must be >= ratio (>1) or <= ratio (<1)
	}
	tests := []struct {
		name     string
		cause    string
		scope    metrics.Scope
		load     float64
		moves    []move
		unchange []string // within 15% of the twin
	}{
		{"bandwidth slows decode", metrics.CauseMemoryBandwidthBound, llama, 1,
			[]move{{metrics.TPOT, 1.3}, {metrics.DRAMActive, 1.3}, {metrics.RunningSeqs, 1.2}}, nil},
		{"bandwidth at high load builds a queue", metrics.CauseMemoryBandwidthBound, llama, 2.2,
			[]move{{metrics.TPOT, 1.3}, {metrics.QueueTime, 3}, {metrics.QueueDepth, 3}}, nil},
		{"throttling cuts clocks", metrics.CauseGPUThrottling, llama, 1,
			[]move{{metrics.SMClock, 0.85}, {metrics.GPUTemp, 1.15}, {metrics.TPOT, 1.1}, {metrics.TTFT, 1.1}, {metrics.PrefillTime, 1.1}}, nil},
		{"eviction fills the cache", metrics.CauseKVCacheEviction, llama, 1,
			[]move{{metrics.KVCacheUsage, 5}, {metrics.PreemptionRate, 10}, {metrics.KVCacheHitRate, 0.8}, {metrics.TTFT, 1.5}}, nil},
		{"long prompts slow prefill", metrics.CauseLongPromptPrefill, llama, 0.5,
			[]move{{metrics.MeanPromptTokens, 2}, {metrics.PrefillTime, 1.5}, {metrics.TTFT, 1.5}}, nil},
		{"prefix misses", metrics.CausePrefixCacheMiss, llama, 1,
			[]move{{metrics.KVCacheHitRate, 0.5}, {metrics.TTFT, 1.1}}, []string{metrics.MeanPromptTokens}},
		{"drafts rejected", metrics.CauseSpecDecodeDegradation, llama, 1,
			[]move{{metrics.RejectionRate, 1.5}, {metrics.DecodeTime, 1.3}, {metrics.TPOT, 1.3}}, []string{metrics.MeanPromptTokens}},
		{"arrivals beyond capacity", metrics.CauseQueueBacklog, llama, 1,
			[]move{{metrics.ArrivalRPS, 1.5}, {metrics.QueueDepth, 10}, {metrics.QueueTime, 10}, {metrics.SMUtil, 1.05}, {metrics.DRAMActive, 1.1}}, nil},
		{"router sends the model's traffic to another pool", metrics.CauseGPUUnderutilized, llama, 1,
			[]move{{metrics.RunningSeqs, 0.5}, {metrics.SMUtil, 0.85}, {metrics.ArrivalRPS, 0.5}, {metrics.ThroughputRPS, 0.5}}, nil},
		{"router starves one instance", metrics.CauseGPUUnderutilized, metrics.Scope{Model: Models[0].Name, Instance: "llama-8b-1"}, 1,
			[]move{{metrics.RunningSeqs, 0.5}, {metrics.SMUtil, 0.8}, {metrics.ArrivalRPS, 0.5}}, nil},
		{"slow transport", metrics.CauseTransportLatency, llama, 1,
			[]move{{metrics.GatewayE2E, 1.5}}, []string{metrics.E2E, metrics.TTFT}},
		{"engine errors", metrics.CauseEngineErrors, llama, 1,
			[]move{{metrics.ErrorRate, 10}, {metrics.APIErrorRate, 10}}, []string{metrics.TPOT}},
		{"host overhead", metrics.CauseHostOverhead, llama, 1,
			[]move{{metrics.SMUtil, 0.85}, {metrics.TPOT, 1.5}, {metrics.RunningSeqs, 1.2}}, nil},
	}
	covered := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			covered[tc.cause] = true
			faulty, twin := runTwin(t, tc.cause, tc.scope, 0.8, tc.load)
			for _, mv := range tc.moves {
				f, tw := faulty[mv.id], twin[mv.id]
				r := f / tw
				if tw == 0 {
					r = math.Inf(1)
				}
				if (mv.ratio > 1 && !(r >= mv.ratio)) || (mv.ratio < 1 && !(r <= mv.ratio)) {
					t.Errorf("%s: faulty %.4g vs twin %.4g (ratio %.3f), want ratio %s %.2f", mv.id, f, tw, r, map[bool]string{true: ">=", false: "<="}[mv.ratio > 1], mv.ratio)
				}
			}
			for _, id := range tc.unchange {
				f, tw := faulty[id], twin[id]
				if math.Abs(f/tw-1) > 0.15 {
					t.Errorf("%s should stay put: faulty %.4g vs twin %.4g", id, f, tw)
				}
			}
		})
	}
	for _, cause := range metrics.FaultCauses() {
		if !covered[cause] {
			t.Errorf("no chain test for %s", cause)
		}
	}
}

func TestQueueingKnee(t *testing.T) {
	for mi := range 2 {
		t.Run(Models[mi].Name, func(t *testing.T) {
			loads := []float64{0.2, 0.5, 0.8, 0.9, 0.95}
			var lat []float64
			for _, rho := range loads {
				sum := 0.0
				for seed := range int64(4) { // average out the arrival noise
					c := New(Options{Seed: seed, Start: monday})
					in := c.models[mi].instances[0]
					mu := 0.0
					for range 20 { // the capacity at a moderate load, averaged
						in.step(5, Models[mi].PeakRPS/2, neutral())
						mu += in.capacity / 20
					}
					for range 200 {
						sum += in.step(5, rho*mu, neutral()).e2e / 800
					}
				}
				lat = append(lat, sum)
			}
			slope := func(i int) float64 { return (lat[i] - lat[i-1]) / (loads[i] - loads[i-1]) }
			for i := 2; i < len(lat); i++ {
				if slope(i) < slope(i-1) {
					t.Errorf("E2E vs load is not convex between %.2f and %.3f: slopes %.4g then %.4g (E2E %v)", loads[i-1], loads[i], slope(i-1), slope(i), lat)
				}
			}
			if slope(len(lat)-1) < 5*slope(1) {
				t.Errorf("no knee: slope near capacity %.4g vs at light load %.4g (E2E %v)", slope(len(lat)-1), slope(1), lat)
			}
		})
	}
}

func TestStepSizeDoesNotChangeThePhysics(t *testing.T) {
	// Live serving steps every second or five, the corpus every fifteen:
	// the same cluster must show the same means either way.
	means := func(step time.Duration, start time.Time) metrics.Values {
		c := New(Options{Seed: 9, Start: start})
		c.step = step
		out := metrics.Values{}
		var prev []capture
		for i := 0; i <= 30; i++ {
			c.Advance(start.Add(time.Duration(i) * time.Minute))
			cur := capturesOf(c.models[0].instances)
			if i >= 10 {
				v := catalogValues(prev, cur, true)
				for _, id := range []string{metrics.E2E, metrics.TTFT, metrics.TPOT, metrics.RunningSeqs, metrics.SMUtil} {
					out[id] += v[id] / 21
				}
			}
			prev = cur
		}
		return out
	}
	for _, hour := range []int{4, 14} {
		start := time.Date(2026, 11, 23, hour, 0, 0, 0, time.UTC)
		fine, coarse := means(time.Second, start), means(scenarioStep, start)
		for id, f := range fine {
			if c := coarse[id]; math.Abs(c/f-1) > 0.2 {
				t.Errorf("%02d:00 %s: %.4g with 1 s steps, %.4g with %s steps", hour, id, f, c, scenarioStep)
			}
		}
	}
}
