package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/casebook/casebook/metrics"
)

// The contract ids in DESIGN.md order; outside tools depend on them.
var contractIDs = []string{
	"gateway_e2e_ms", "e2e_ms", "e2e_p99_ms", "ttft_ms", "ttft_p99_ms", "tpot_ms", "tpot_p99_ms",
	"queue_ms", "prefill_ms", "decode_ms", "throughput_rps", "arrival_rps", "prompt_tps",
	"generation_tps", "running_seqs", "queue_depth", "mean_prompt_tokens", "gpu_sm_util",
	"tensor_active", "dram_active", "gpu_mem_used_frac", "kv_cache_usage", "sm_clock_mhz",
	"mem_clock_mhz", "power_w", "gpu_temp_c", "kv_cache_hit_rate", "rejection_rate",
	"error_rate", "preemption_rate",
}

// The contract's ids come first and in order; later ids may follow.
func TestCatalogMatchesContract(t *testing.T) {
	got := metrics.IDs()
	if len(got) < len(contractIDs) {
		t.Fatalf("catalog has %d metrics, contract has %d", len(got), len(contractIDs))
	}
	for i, id := range contractIDs {
		if got[i] != id {
			t.Errorf("catalog[%d] = %q, contract says %q", i, got[i], id)
		}
		m, ok := metrics.Lookup(id)
		if !ok {
			t.Fatalf("Lookup(%q) failed", id)
		}
		if m.Help == "" || m.Unit == "" || m.Dimension == "" {
			t.Errorf("%s: help, unit and dimension are required", id)
		}
	}
}

// Every metric has its display names, and no two share a label.
func TestCatalogNames(t *testing.T) {
	seen := map[string]string{}
	for _, m := range metrics.Catalog {
		if m.Label == "" || m.Name == "" {
			t.Errorf("%s: label %q and name %q are required", m.ID, m.Label, m.Name)
		}
		if other, dup := seen[m.Label]; dup {
			t.Errorf("%s and %s are both labelled %q", other, m.ID, m.Label)
		}
		seen[m.Label] = m.ID
	}
}

func TestQueriesParse(t *testing.T) {
	sels := []struct {
		name string
		sel  metrics.Selectors
	}{
		{"empty", metrics.Selectors{}},
		{"model", metrics.Selectors{Engine: `model_name="m"`, GPU: `pod=~"a|b"`}},
		{"instance", metrics.Selectors{Engine: `model_name="m",pod="a"`, GPU: `pod="a"`}},
	}
	for _, s := range sels {
		for _, m := range metrics.Catalog {
			for _, q := range []string{
				m.Query(s.sel, 90*time.Second),
				m.QueryBy(s.sel, time.Minute, []string{"model_name", "pod"}),
			} {
				if strings.Contains(q, "$") {
					t.Errorf("%s/%s: unexpanded placeholder in %q", s.name, m.ID, q)
				}
				if _, err := parser.NewParser(parser.Options{}).ParseExpr(q); err != nil {
					t.Errorf("%s/%s: %q does not parse: %v", s.name, m.ID, q, err)
				}
			}
		}
	}
}

func TestQueryUsesRealMetricNames(t *testing.T) {
	tests := []struct {
		id, want string
	}{
		{metrics.TTFT, "vllm:time_to_first_token_seconds_sum"},
		{metrics.TPOT, "vllm:request_time_per_output_token_seconds_sum"},
		{metrics.KVCacheUsage, "vllm:kv_cache_usage_perc"},
		{metrics.KVCacheHitRate, "vllm:prefix_cache_hits_total"},
		{metrics.SMUtil, "DCGM_FI_PROF_SM_ACTIVE"},
		{metrics.DRAMActive, "DCGM_FI_PROF_DRAM_ACTIVE"},
		{metrics.SMClock, "DCGM_FI_DEV_SM_CLOCK"},
		{metrics.ErrorRate, `finished_reason="error"`},
		{metrics.AbortRate, `finished_reason="abort"`},
		{metrics.APIErrorRate, `http_requests_total{status=~"5.."}`},
		{metrics.XIDErrors, "DCGM_FI_DEV_XID_ERRORS"},
		{metrics.PreemptionRate, "vllm:num_preemptions_total"},
	}
	for _, tc := range tests {
		m, _ := metrics.Lookup(tc.id)
		if q := m.Query(metrics.Selectors{Engine: `model_name="x"`}, time.Minute); !strings.Contains(q, tc.want) {
			t.Errorf("%s: query %q lacks %q", tc.id, q, tc.want)
		}
	}
}

func TestQueryByGroupsPerScope(t *testing.T) {
	by := []string{"model_name", "pod"}
	tests := []struct {
		id, want, notWant string
	}{
		{metrics.TTFTP99, "sum by (le, model_name, pod) (rate(", ""},
		{metrics.ThroughputRPS, "sum by (model_name, pod) (rate(", ""},
		// GPU series carry no model_name, so they are grouped by pod alone.
		{metrics.SMClock, "min by (pod) (DCGM_FI_DEV_SM_CLOCK", "model_name"},
	}
	for _, tc := range tests {
		m, _ := metrics.Lookup(tc.id)
		q := m.QueryBy(metrics.Selectors{}, time.Minute, by)
		if !strings.Contains(q, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.id, q, tc.want)
		}
		if tc.notWant != "" && strings.Contains(q, tc.notWant) {
			t.Errorf("%s: %q should not mention %q", tc.id, q, tc.notWant)
		}
	}
	// One scope: no grouping except le for quantiles.
	m, _ := metrics.Lookup(metrics.TTFTP99)
	if q := m.Query(metrics.Selectors{}, time.Minute); !strings.Contains(q, "sum by (le) (rate(") {
		t.Errorf("single-scope p99 query %q", q)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Minute, "1m"}, {90 * time.Second, "90s"}, {2 * time.Hour, "2h"}, {1500 * time.Millisecond, "1500ms"}, {0, "1m"},
	}
	for _, tc := range tests {
		if got := metrics.FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// Every alternative reads the series it declares, so that Resolve and the
// PromQL agree on what a metric needs.
func TestAlternativesDeclareTheirSeries(t *testing.T) {
	for _, m := range metrics.Catalog {
		if len(m.Alts) == 0 {
			t.Errorf("%s has no alternatives", m.ID)
		}
		for i, a := range m.Alts {
			if len(a.Series) == 0 || a.Note == "" {
				t.Errorf("%s alternative %d: series and note are required", m.ID, i)
			}
			for _, s := range a.Series {
				name, label, value := metrics.SplitSeries(s)
				if !strings.Contains(a.PromQL, name) {
					t.Errorf("%s alternative %d: PromQL %q does not read %s", m.ID, i, a.PromQL, name)
				}
				if label != "" && !strings.Contains(a.PromQL, label+`="`+value+`"`) {
					t.Errorf("%s alternative %d: PromQL %q does not select %s", m.ID, i, a.PromQL, s)
				}
			}
			if !strings.Contains(m.PromQL, a.PromQL) {
				t.Errorf("%s: alternative %d is not part of the metric's PromQL", m.ID, i)
			}
		}
	}
}

func TestResolvePicksTheFirstAlternativePresent(t *testing.T) {
	tests := []struct {
		name    string
		present []string
		id      string
		ok      bool
		using   string
		missing string
		why     string
	}{
		{"current name", []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, metrics.KVCacheUsage, true, "vllm:kv_cache_usage_perc", "", ""},
		{"deprecated name", []string{"vllm:gpu_cache_usage_perc"}, metrics.KVCacheUsage, true, "vllm:gpu_cache_usage_perc", "", ""},
		{"V0 hit rate gauge", []string{"vllm:gpu_prefix_cache_hit_rate"}, metrics.KVCacheHitRate, true, "vllm:gpu_prefix_cache_hit_rate", "", ""},
		{"half a pair does not resolve", []string{"vllm:prefix_cache_hits_total"}, metrics.KVCacheHitRate, false, "", "vllm:prefix_cache_queries_total", "none of"},
		{"profiling field off", []string{"DCGM_FI_DEV_GPU_UTIL"}, metrics.TensorActive, false, "", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "default-counters.csv"},
		{"GPU util stands in for SM activity", []string{"DCGM_FI_DEV_GPU_UTIL"}, metrics.SMUtil, true, "DCGM_FI_DEV_GPU_UTIL", "", ""},
		{"error reason needs its label", []string{"vllm:request_success_total"}, metrics.ErrorRate, false, "", `vllm:request_success_total{finished_reason="error"}`, "is not exported"},
		{"error reason present", []string{`vllm:request_success_total{finished_reason="error"}`}, metrics.ErrorRate, true, `vllm:request_success_total{finished_reason="error"}`, "", ""},
		{"ITL stands in for per-request TPOT", []string{"vllm:inter_token_latency_seconds_sum", "vllm:inter_token_latency_seconds_count"}, metrics.TPOT, true, "vllm:inter_token_latency_seconds_sum", "", ""},
		{"oldest TPOT name", []string{"vllm:time_per_output_token_seconds_bucket"}, metrics.TPOTP99, true, "vllm:time_per_output_token_seconds_bucket", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			has := func(s string) bool {
				for _, p := range tc.present {
					if p == s {
						return true
					}
				}
				return false
			}
			m, _ := metrics.Lookup(tc.id)
			r := m.Resolve(has)
			if r.OK != tc.ok {
				t.Fatalf("OK = %v, want %v (%+v)", r.OK, tc.ok, r)
			}
			if tc.ok && (len(r.Using) == 0 || r.Using[0] != tc.using) {
				t.Errorf("Using = %v, want %s first", r.Using, tc.using)
			}
			if !tc.ok {
				if !strings.Contains(strings.Join(r.Missing, " "), tc.missing) {
					t.Errorf("Missing = %v, want %s", r.Missing, tc.missing)
				}
				if !strings.Contains(r.Why, tc.why) {
					t.Errorf("Why = %q, want it to mention %q", r.Why, tc.why)
				}
			}
		})
	}
}

func TestSplitSeries(t *testing.T) {
	tests := []struct{ in, name, label, value string }{
		{"vllm:x", "vllm:x", "", ""},
		{`vllm:x{reason="capacity"}`, "vllm:x", "reason", "capacity"},
		{`vllm:x{reason=capacity}`, `vllm:x{reason=capacity}`, "", ""},
		{`vllm:x{`, `vllm:x{`, "", ""},
	}
	for _, tc := range tests {
		n, l, v := metrics.SplitSeries(tc.in)
		if n != tc.name || l != tc.label || v != tc.value {
			t.Errorf("SplitSeries(%q) = %q %q %q", tc.in, n, l, v)
		}
	}
}
