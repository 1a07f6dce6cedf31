package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
)

// fieldDir is the corpus of telemetry as people posted it publicly.
const fieldDir = "../testdata/field"

// readField reads a corpus file without its "##" header lines, checking
// that the header names a source.
func readField(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fieldDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	source := false
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, "##") {
			source = source || strings.HasPrefix(line, "## source: ")
			continue
		}
		body.WriteString(line)
	}
	if !source {
		t.Fatalf("%s: no \"## source:\" header line", name)
	}
	return body.Bytes()
}

// parseFieldSeries returns the label sets (with __name__) of a corpus file
// in any of its formats.
func parseFieldSeries(t *testing.T, name string) []map[string]string {
	t.Helper()
	body := readField(t, name)
	var out []map[string]string
	switch {
	case strings.HasSuffix(name, ".prom"):
		p := textparse.NewPromParser(body, labels.NewSymbolTable(), false)
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if et != textparse.EntrySeries {
				continue
			}
			var ls labels.Labels
			p.Labels(&ls)
			out = append(out, ls.Map())
		}
	case strings.HasSuffix(name, ".txt"):
		// One series per line, as the Prometheus UI lists an answer.
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(line)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			l := map[string]string{}
			for _, m := range ms {
				l[m.Name] = m.Value
			}
			out = append(out, l)
		}
	case strings.HasPrefix(name, "prometheus-") && strings.HasSuffix(name, ".json"):
		// The answer as a Python dict: single quotes, no quotes inside
		// values.
		var ans struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(body), "'", `"`)), &ans); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ans.Status != "success" {
			t.Fatalf("%s: status %q", name, ans.Status)
		}
		for _, r := range ans.Data.Result {
			out = append(out, r.Metric)
		}
	default:
		t.Fatalf("%s: no parser for this file", name)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no series", name)
	}
	return out
}

// The corpus itself: enough files from enough sources, each with its
// source, version and date, each parsing in its format.
func TestFieldCorpusIsCitedAndParses(t *testing.T) {
	entries, err := os.ReadDir(fieldDir)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]bool{}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if name == "README.md" {
			continue
		}
		files++
		b, err := os.ReadFile(filepath.Join(fieldDir, name))
		if err != nil {
			t.Fatal(err)
		}
		head := string(b)
		for _, key := range []string{"## source: https://github.com/"} {
			i := strings.Index(head, key)
			if i < 0 {
				t.Errorf("%s: header lacks %q", name, key)
				continue
			}
			parts := strings.SplitN(head[i+len(key):], "/", 3)
			sources[parts[0]+"/"+parts[1]] = true
		}
		if !strings.Contains(head, "## posted: ") && !strings.Contains(head, "## date: ") {
			t.Errorf("%s: header names no date", name)
		}
		if strings.HasPrefix(name, "alertmanager-") {
			var body map[string]any
			if err := json.Unmarshal(readField(t, name), &body); err != nil {
				t.Errorf("%s: %v", name, err)
			} else if body["version"] != "4" || body["alerts"] == nil {
				t.Errorf("%s: not an Alertmanager webhook body", name)
			}
			continue
		}
		parseFieldSeries(t, name)
	}
	if files < 12 || len(sources) < 4 {
		t.Errorf("%d files from %d sources; want at least 12 from 4", files, len(sources))
	}
}

// fieldCase is what the console makes of one corpus file.
type fieldCase struct {
	file string
	// engines are the engine instances the GPU series should join (for
	// GPU-only files, the workloads the post names).
	engines []EngineRef
	// resolved are exactly the catalog metrics the file resolves, with the
	// series each uses first.
	resolved map[string]string
	// missing maps some unresolved metrics to words their reason must hold.
	missing map[string]string
	// joinLabel is the GPU label detected ("" when nothing joins), joined
	// the engine instances with GPUs, and why words of the reason when
	// nothing joins.
	// scopes are the engine scopes ("model/pod") the file's named engine
	// series make, when their labels name them.
	scopes []string
	// engine is the engine the file's series name (DetectEngine), or the
	// one set for it (a target's __engine__) when set is true; every
	// catalog id then resolves through that engine or is missing with a
	// reason naming it.
	engine    metrics.Engine
	set       bool
	joinLabel string
	joined    []string
	why       string
}

var fieldCases = []fieldCase{
	{file: "vllm-v0-qwen3vl-issue55.prom", engine: metrics.EngineVLLM,
		resolved: map[string]string{
			metrics.RunningSeqs: "vllm:num_requests_running", metrics.QueueDepth: "vllm:num_requests_waiting",
			metrics.KVCacheUsage: "vllm:gpu_cache_usage_perc"},
		missing: map[string]string{metrics.TTFT: "vllm:time_to_first_token_seconds_sum", metrics.TensorActive: "default-counters.csv",
			metrics.RejectionRate: "speculative config"}},
	{file: "vllm-v0-opt125m-issue8819.prom", engine: metrics.EngineVLLM, resolved: map[string]string{},
		missing: map[string]string{metrics.ErrorRate: `finished_reason="error"`}},
	{file: "vllm-0.8-production-stack-318.prom", engine: metrics.EngineVLLM,
		resolved: map[string]string{
			metrics.RunningSeqs: "vllm:num_requests_running", metrics.QueueDepth: "vllm:num_requests_waiting",
			metrics.KVCacheUsage: "vllm:gpu_cache_usage_perc"},
		// The queries counter's samples were cut off the post; the prompt
		// histogram has buckets but no _sum and _count.
		missing: map[string]string{metrics.KVCacheHitRate: "vllm:gpu_prefix_cache_hits_total", metrics.MeanPromptTokens: "vllm:request_prompt_tokens_sum"}},
	{file: "vllm-0.10.0-production-stack-617.prom", engine: metrics.EngineVLLM,
		resolved: map[string]string{metrics.KVCacheUsage: "vllm:kv_cache_usage_perc"},
		// Only one half of each prefix-cache pair made it into the post.
		missing: map[string]string{metrics.KVCacheHitRate: "none of vllm:prefix_cache_hits_total + vllm:prefix_cache_queries_total"}},
	{file: "vllm-0.22.1rc1-dgx-manager-fixture.prom", engine: metrics.EngineVLLM,
		resolved: map[string]string{metrics.KVCacheUsage: "vllm:kv_cache_usage_perc", metrics.QueueDepth: "vllm:num_requests_waiting",
			metrics.RunningSeqs: "vllm:num_requests_running", metrics.PreemptionRate: "vllm:num_preemptions_total",
			metrics.QueueCapacity: `vllm:num_requests_waiting_by_reason{reason="capacity"}`},
		// The kept lines are the gauges and one counter: every latency
		// histogram and token counter is absent, and the console says which.
		missing: map[string]string{metrics.TTFT: "vllm:time_to_first_token_seconds_sum", metrics.KVCacheHitRate: "vllm:prefix_cache_hits_total"}},
	{file: "vllm-0.10-dp-pr22227.prom", engine: metrics.EngineVLLM, resolved: map[string]string{},
		missing: map[string]string{metrics.DecodeTime: "vllm:request_decode_time_seconds_sum"}},
	{file: "dcgm-default-gpu-monitoring-tools-138.prom",
		engines: []EngineRef{{Model: "m", Instance: "vllm-0"}},
		resolved: map[string]string{metrics.SMUtil: "DCGM_FI_DEV_GPU_UTIL", metrics.SMClock: "DCGM_FI_DEV_SM_CLOCK",
			metrics.MemClock: "DCGM_FI_DEV_MEM_CLOCK", metrics.Power: "DCGM_FI_DEV_POWER_USAGE", metrics.GPUTemp: "DCGM_FI_DEV_GPU_TEMP"},
		missing: map[string]string{metrics.TensorActive: "profiling field", metrics.DRAMActive: "dcp-metrics-included.csv",
			metrics.XIDErrors: "DCGM_FI_DEV_XID_ERRORS"},
		why: "no pod label (pod, exported_pod or pod_name) with a value"},
	{file: "dcgm-default-dcgm-exporter-363.prom",
		engines:  []EngineRef{{Model: "m", Instance: "vllm-0"}},
		resolved: map[string]string{metrics.SMUtil: "DCGM_FI_DEV_GPU_UTIL"},
		missing:  map[string]string{metrics.GPUMemUsedFrac: "DCGM_FI_DEV_FB_FREE", metrics.TensorActive: "commented out"},
		why:      "no pod label"},
	{file: "dcgm-default-fake-gpu-operator-93.prom",
		engines:  []EngineRef{{Model: "m", Instance: "vllm-0"}},
		resolved: map[string]string{},
		missing:  map[string]string{metrics.SMUtil: "none of DCGM_FI_PROF_SM_ACTIVE, or DCGM_FI_DEV_GPU_UTIL"},
		why:      "no pod label"},
	{file: "dcgm-profiling-dcgm-exporter-68.prom",
		engines:  []EngineRef{{Model: "m", Instance: "tf-benchmark"}},
		resolved: map[string]string{metrics.TensorActive: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"},
		missing:  map[string]string{metrics.DRAMActive: "DCGM_FI_PROF_DRAM_ACTIVE is not exported"},
		why:      "no pod label"},
	{file: "dcgm-profiling-gpu-monitoring-tools-189.prom",
		engines: []EngineRef{{Model: "m", Instance: "vllm-0"}},
		resolved: map[string]string{metrics.DRAMActive: "DCGM_FI_PROF_DRAM_ACTIVE", metrics.SMClock: "DCGM_FI_DEV_SM_CLOCK",
			metrics.MemClock: "DCGM_FI_DEV_MEM_CLOCK", metrics.Power: "DCGM_FI_DEV_POWER_USAGE", metrics.GPUTemp: "DCGM_FI_DEV_GPU_TEMP"},
		missing: map[string]string{metrics.SMUtil: "DCGM_FI_PROF_SM_ACTIVE"},
		why:     "no pod label"},
	// KServe predictors attributed through pod and namespace: each GPU
	// joins its predictor, the namespace part of the join.
	{file: "dcgm-profiling-kserve-dcgm-exporter-512.prom",
		engines: []EngineRef{
			{Model: "embed", Instance: "text-embedding-predictor-00008-deployment-57946f6c67-vdtjl", Namespace: "model-playground-stg"},
			{Model: "tts", Instance: "tts-predictor-00011-deployment-5554f75554-8j8pl", Namespace: "model-playground-stg"},
			// The same pod name in another namespace must not join.
			{Model: "tts", Instance: "tts-predictor-00011-deployment-5554f75554-8j8pl", Namespace: "prod"},
		},
		resolved:  map[string]string{},
		missing:   map[string]string{metrics.SMUtil: "DCGM_FI_PROF_SM_ACTIVE"},
		joinLabel: "pod",
		joined:    []string{"model-playground-stg/text-embedding-predictor-00008-deployment-57946f6c67-vdtjl", "model-playground-stg/tts-predictor-00011-deployment-5554f75554-8j8pl"}},
	// Behind a ServiceMonitor the workload is exported_pod; pod is the
	// exporter and would join nothing.
	{file: "prometheus-exported-pod-dcgm-exporter-340.txt",
		engines:   []EngineRef{{Model: "a", Instance: "pod1", Namespace: "default"}, {Model: "b", Instance: "pod2", Namespace: "default"}, {Model: "c", Instance: "pod3", Namespace: "default"}},
		resolved:  map[string]string{metrics.GPUTemp: "DCGM_FI_DEV_GPU_TEMP"},
		missing:   map[string]string{metrics.SMUtil: "DCGM_FI_DEV_GPU_UTIL"},
		joinLabel: "exported_pod",
		joined:    []string{"default/pod1", "default/pod2"}},
	{file: "prometheus-no-pod-gpu-operator-472.txt",
		engines:  []EngineRef{{Model: "m", Instance: "vllm-0", Namespace: "default"}},
		resolved: map[string]string{metrics.SMUtil: "DCGM_FI_DEV_GPU_UTIL"},
		why:      "no pod label"},
	// A query answer of an expression: the series are unnamed (the
	// function dropped __name__), so nothing resolves, but each names its
	// engine scope through model_name and the PodMonitoring's pod.
	{file: "prometheus-vector-vllm-ai-on-gke-937.json", resolved: map[string]string{},
		scopes: []string{"meta-llama/Meta-Llama-3-8B/llama3-8b-vllm-deployment-xxxxxxxxxx-xxxxx",
			"mistralai/Mixtral-8x22B-v0.1/mixtral-8x22b-instruct-vllm-deployment-xxxxxxxxxx-xxxxx"}},
	// Other engines: each file resolves through its own engine's
	// alternatives, and every metric it lacks is missing with the reason.
	{file: "sglang-0.5.1-issue13485.prom", engine: metrics.EngineSGLang,
		resolved: map[string]string{metrics.RunningSeqs: "sglang:num_running_reqs", metrics.KVCacheUsage: "sglang:token_usage"},
		missing: map[string]string{metrics.TTFT: "sglang:time_to_first_token_seconds_sum", metrics.PrefillTime: "SGLang exports no equivalent: SGLang times prefill only per stage",
			metrics.ErrorRate: "without telling an engine failure from a client abort"}},
	// The first SGLang metrics labelled the model "name": nothing joins a
	// scope by model_name, but the names resolve.
	{file: "sglang-early-pr1853.prom", engine: metrics.EngineSGLang,
		resolved: map[string]string{metrics.PromptTPS: "sglang:prompt_tokens_total"},
		missing:  map[string]string{metrics.GenerationTPS: "sglang:generation_tokens_total is not exported"}},
	{file: "sglang-0.4-docs-production-metrics.prom", engine: metrics.EngineSGLang,
		resolved: map[string]string{
			metrics.E2E: "sglang:e2e_request_latency_seconds_sum", metrics.E2EP99: "sglang:e2e_request_latency_seconds_bucket",
			metrics.TTFT: "sglang:time_to_first_token_seconds_sum", metrics.TTFTP99: "sglang:time_to_first_token_seconds_bucket",
			metrics.TPOT: "sglang:time_per_output_token_seconds_sum", metrics.TPOTP99: "sglang:time_per_output_token_seconds_bucket",
			metrics.PromptTPS: "sglang:prompt_tokens_total", metrics.GenerationTPS: "sglang:generation_tokens_total",
			metrics.RunningSeqs: "sglang:num_running_reqs", metrics.QueueDepth: "sglang:num_queue_reqs",
			metrics.KVCacheUsage: "sglang:token_usage", metrics.KVCacheHitRate: "sglang:cache_hit_rate"},
		missing: map[string]string{metrics.ThroughputRPS: "sglang:num_requests_total is not exported", metrics.DecodeTime: "SGLang times decode only per stage",
			metrics.RejectionRate: "speculative", metrics.QueueCapacity: "SGLang does not split its queue"}},
	// trtllm-serve's first names carry no prefix: only a scope set to
	// TensorRT-LLM reads them (the post cut the histogram's _sum).
	{file: "trtllm-serve-pr5785.prom", engine: metrics.EngineTRTLLM, set: true,
		resolved: map[string]string{metrics.TTFTP99: "time_to_first_token_seconds_bucket"},
		missing:  map[string]string{metrics.TTFT: "trtllm_time_to_first_token_seconds_sum", metrics.PreemptionRate: "trtllm_num_paused_requests"}},
	{file: "trtllm-1.1.0rc5-dynamo-docs.prom", engine: metrics.EngineTRTLLM,
		resolved: map[string]string{
			metrics.E2E: "trtllm_e2e_request_latency_seconds_sum", metrics.E2EP99: "trtllm_e2e_request_latency_seconds_bucket",
			metrics.TTFT: "trtllm_time_to_first_token_seconds_sum", metrics.TTFTP99: "trtllm_time_to_first_token_seconds_bucket",
			metrics.TPOT: "trtllm_time_per_output_token_seconds_sum", metrics.TPOTP99: "trtllm_time_per_output_token_seconds_bucket",
			metrics.QueueTime: "trtllm_request_queue_time_seconds_sum", metrics.ThroughputRPS: "trtllm_request_success_total"},
		missing: map[string]string{metrics.KVCacheUsage: "trtllm_kv_cache_utilization", metrics.PrefillTime: "trtllm_request_prefill_time_seconds_sum"}},
	{file: "llamacpp-ik-llama-pr695.prom", engine: metrics.EngineLlamaCpp,
		resolved: map[string]string{metrics.PromptTPS: "llamacpp:prompt_tokens_total", metrics.GenerationTPS: "llamacpp:tokens_predicted_total",
			metrics.TPOT: "llamacpp:tokens_predicted_seconds_total"},
		missing: map[string]string{metrics.ThroughputRPS: "no request counter", metrics.TTFTP99: "no histograms",
			metrics.RunningSeqs: "llamacpp:requests_processing is not exported"}},
}

func TestFieldCorpusCoverageAndJoin(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range fieldCases {
		covered[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			series := parseFieldSeries(t, tc.file)
			var gpus []map[string]string
			for _, l := range series {
				if strings.HasPrefix(l["__name__"], "DCGM_") {
					gpus = append(gpus, l)
				}
			}
			join := DetectGPUJoin(tc.engines, gpus, JoinOptions{})
			var names []string
			for _, l := range series {
				names = append(names, l["__name__"])
			}
			es := EngineStatus{Engine: tc.engine, Overridden: tc.set}
			if detected, err := metrics.DetectEngine(names); !tc.set && (err != nil) != (tc.engine == "") || err == nil && detected != tc.engine {
				t.Errorf("detected engine %q (%v), want %q", detected, err, tc.engine)
			}
			c := CoverageFor(NewSeriesSet(series), join, true, es)
			if tc.engine != "" {
				// Every catalog id resolves through the engine or says why not.
				for _, r := range c.Resolutions {
					if !r.OK && r.Why == "" || r.OK && len(r.Using) == 0 {
						t.Errorf("%s: %+v", r.ID, r)
					}
				}
				if len(c.Resolutions) != len(metrics.Catalog) {
					t.Errorf("%d resolutions for %d catalog ids", len(c.Resolutions), len(metrics.Catalog))
				}
			}

			got := map[string]string{}
			for _, r := range c.Resolved() {
				got[r.ID] = r.Using[0]
			}
			if !mapsEqual(got, tc.resolved) {
				t.Errorf("resolved %v, want %v", got, tc.resolved)
			}
			missing := map[string]metrics.Resolution{}
			for _, r := range c.Missing() {
				missing[r.ID] = r
				if r.Why == "" {
					t.Errorf("%s missing without a reason", r.ID)
				}
			}
			for id, words := range tc.missing {
				r, ok := missing[id]
				if !ok {
					t.Errorf("%s resolved, want it missing", id)
					continue
				}
				if !strings.Contains(r.Why+" "+strings.Join(r.Missing, " "), words) {
					t.Errorf("%s missing because %q (lacks %v); want it to say %q", id, r.Why, r.Missing, words)
				}
			}

			var scopes []string
			for _, l := range series {
				if l["model_name"] != "" && l[GPUInstanceLabel] != "" {
					scopes = append(scopes, metrics.Scope{Model: l["model_name"], Instance: l[GPUInstanceLabel]}.String())
				}
			}
			sort.Strings(scopes)
			if !slices.Equal(slices.Compact(scopes), tc.scopes) {
				t.Errorf("scopes %v, want %v", scopes, tc.scopes)
			}
			if len(gpus) == 0 {
				return
			}
			if join.InstanceLabel != tc.joinLabel {
				t.Errorf("join label %q, want %q (%s)", join.InstanceLabel, tc.joinLabel, join.Summary())
			}
			var joined []string
			for k := range join.Joined {
				joined = append(joined, k)
			}
			sort.Strings(joined)
			if !slices.Equal(joined, tc.joined) {
				t.Errorf("joined %v, want %v", joined, tc.joined)
			}
			if tc.why != "" && !strings.Contains(join.Why, tc.why) {
				t.Errorf("join reason %q, want it to say %q", join.Why, tc.why)
			}
			if len(join.Unjoined) != len(tc.engines)-len(tc.joined) {
				t.Errorf("unjoined %v for %d engines and %d joined", join.Unjoined, len(tc.engines), len(tc.joined))
			}
			// A scope whose GPUs did not join reports its GPU metrics
			// missing for that reason, whatever the exporter exports.
			if len(join.Unjoined) > 0 {
				for _, r := range CoverageOf(NewSeriesSet(series), join, false).Resolutions {
					m, _ := metrics.Lookup(r.ID)
					if m.Source != metrics.SourceGPU {
						continue
					}
					if r.OK || (got[r.ID] != "" && !strings.Contains(r.Why, "did not join")) {
						t.Errorf("%s of an unjoined scope: %+v", r.ID, r)
					}
				}
			}
		})
	}
	entries, _ := os.ReadDir(fieldDir)
	for _, e := range entries {
		n := e.Name()
		if n != "README.md" && !strings.HasPrefix(n, "alertmanager-") && !covered[n] {
			t.Errorf("%s has no case in fieldCases", n)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A configured label wins over detection; a namespace label "none" keeps
// namespaces out, so same-named pods in two namespaces both join.
func TestConfiguredGPUJoin(t *testing.T) {
	gpus := []map[string]string{
		{"UUID": "GPU-1", "exported_pod": "p", "exported_namespace": "a", "pod": "exporter-x", "namespace": "monitoring", "hostname": "n1"},
	}
	engines := []EngineRef{{Model: "m", Instance: "p", Namespace: "a"}, {Model: "m2", Instance: "p", Namespace: "b"}}
	j := DetectGPUJoin(engines, gpus, JoinOptions{})
	if j.InstanceLabel != "exported_pod" || j.NamespaceLabel != "exported_namespace" || !slices.Equal(j.Unjoined, []string{"b/p"}) || j.HostLabel != "hostname" || !j.Detected {
		t.Errorf("detected %+v", j)
	}
	j = DetectGPUJoin(engines, gpus, JoinOptions{InstanceLabel: "exported_pod", NamespaceLabel: "none"})
	if j.NamespaceLabel != "" || len(j.Unjoined) != 0 || j.Detected || j.Joined["a/p"] != 1 || j.Joined["b/p"] != 1 {
		t.Errorf("without namespaces %+v", j)
	}
	j = DetectGPUJoin(engines, gpus, JoinOptions{InstanceLabel: "pod"})
	if j.InstanceLabel != "" || !strings.Contains(j.Why, "configured label pod (e.g. exporter-x) names no engine instance (e.g. a/p), but exported_pod does") ||
		!strings.Contains(j.Summary(), "--gpu-instance-label exported_pod") {
		t.Errorf("configured pod on a ServiceMonitor scrape: %+v", j)
	}
}
