package change

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

func TestBuildRendersDiffHelmAndWindow(t *testing.T) {
	a := diagnose.ActionsFor(metrics.CauseKVCacheEviction)[0]
	p, err := Propose(a, map[string]string{"gpu_memory_utilization": "0.9"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSchedule("Tue 10:00-12:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	d := diagnose.Diagnosis{RootCause: metrics.CauseKVCacheEviction, Title: "KV-cache eviction storm", Confidence: 0.8, Severity: "critical",
		Evidence: []diagnose.Evidence{{Text: "KV-cache usage is 100%."}}}
	r, err := Build(BuildInput{IncidentID: 7, IncidentURL: "https://cb.example/incidents/7", Scope: metrics.Scope{Model: "llama"},
		Diagnosis: d, Action: a, Proposal: &p, Schedule: &s, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "cr-") || len(r.ID) != 27 {
		t.Errorf("id %q", r.ID)
	}
	if r.VLLMArgs != "- --gpu-memory-utilization 0.9\n+ --gpu-memory-utilization 0.95\n" {
		t.Errorf("arg diff %q", r.VLLMArgs)
	}
	// No chart preset: no Helm fragment, the vLLM arguments only.
	if r.HelmValues != "" || r.Change.HelmPath != "" {
		t.Errorf("helm without a chart %q %q", r.HelmValues, r.Change.HelmPath)
	}
	if r.Window == nil || !r.Window.Start.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("window %+v", r.Window)
	}
	md := r.Markdown()
	for _, want := range []string{"# Change request " + r.ID, "[#7](https://cb.example/incidents/7)", "| gpu_memory_utilization | 0.9 | 0.95 |",
		"```diff\n- --gpu-memory-utilization 0.9", "## Risk", "## Rollback", "Deployment window (next): Tue 2026-12-01 10:00 to 12:00 UTC",
		"| ttft_ms | latency | down |", "KV-cache usage is 100%."} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Request
	if err := json.Unmarshal(js, &back); err != nil || back.ID != r.ID || back.Change.Proposed != "0.95" {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}

	// An operational step has no diff; a flag-less knob has Helm only.
	op := diagnose.ActionsFor(metrics.CauseGPUThrottling)[0]
	r2, err := Build(BuildInput{IncidentID: 7, Action: op, Now: now})
	if err != nil || r2.Change != nil || r2.VLLMArgs != "" || !strings.Contains(r2.Markdown(), "An operational step") {
		t.Errorf("operational: %v %+v", err, r2)
	}
	rep := diagnose.Action{ID: "add_replicas", Knob: "replicas", Proposed: "+1"}
	pr, _ := Propose(rep, map[string]string{"replicas": "2"}, nil, "")
	llmd, _ := LookupHelmChart("llm-d")
	r3, err := Build(BuildInput{IncidentID: 7, Action: rep, Proposal: &pr, Chart: llmd, Now: now})
	if err != nil || r3.VLLMArgs != "" || r3.HelmValues != "decode:\n  replicas: 3  # was 2\n" {
		t.Errorf("replicas: %v %q %q", err, r3.VLLMArgs, r3.HelmValues)
	}
	full := diagnose.Diagnosis{RootCause: metrics.CauseKVCacheEviction, Actions: diagnose.ActionsFor(metrics.CauseKVCacheEviction)}
	none := CheckCapacity([]GPU{{Host: "n1", GPU: "0", Engine: "llama-0", MaxUtil: 0.9, Samples: 5}}, 15*time.Minute, 2)
	r4, err := Build(BuildInput{IncidentID: 7, Diagnosis: full, Action: rep, Proposal: &pr, Capacity: &none, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Give the KV cache more memory", "Cap the context length"}
	if len(r4.Alternatives) != len(want) || r4.Alternatives[0] != want[0] || r4.Alternatives[1] != want[1] {
		t.Errorf("in-place alternatives %q, want %q", r4.Alternatives, want)
	}
	if md := r4.Markdown(); !strings.Contains(md, "In-place alternatives to try first:\n\n- Give the KV cache more memory") || !strings.Contains(md, "No idle GPU") {
		t.Errorf("markdown lacks the alternatives:\n%s", md)
	}
	if _, err := Build(BuildInput{Action: rep, Now: now}); err == nil {
		t.Error("a knob action without a proposal was built")
	}
	b := diagnose.Action{ID: "pc", Knob: "enable_prefix_caching", Proposed: "false"}
	pb, _ := Propose(b, map[string]string{"enable_prefix_caching": "True"}, nil, "")
	if got := argDiff(pb); got != "- --enable-prefix-caching\n+ --no-enable-prefix-caching\n" {
		t.Errorf("bool diff %q", got)
	}
}

func TestCheckCapacity(t *testing.T) {
	gpus := []GPU{
		{Host: "n1", GPU: "0", Engine: "llama-0", MaxUtil: 0.8, Samples: 10},
		{Host: "n2", GPU: "0", MaxUtil: 0.01, Samples: 10},
		{Host: "n2", GPU: "1", MaxUtil: 0.0, Samples: 10},
		{Host: "n3", GPU: "0", MaxUtil: 0.02, Samples: 10},
		{Host: "n3", GPU: "1", MaxUtil: 0.4, Samples: 10}, // busy without an engine label
		{Host: "n4", GPU: "0", Samples: 0},                // no data is not idle
	}
	c := CheckCapacity(gpus, 15*time.Minute, 2)
	if len(c.Idle) != 3 || c.Replicas != 1 || c.Checked != 6 {
		t.Errorf("idle %d, replicas %d, checked %d: %+v", len(c.Idle), c.Replicas, c.Checked, c)
	}
	if !strings.Contains(c.Summary, "n2 (2), n3 (1)") || !strings.Contains(c.Summary, "room for 1 more replica") {
		t.Errorf("summary %q", c.Summary)
	}
	if c := CheckCapacity(gpus[:1], 15*time.Minute, 1); len(c.Idle) != 0 || !strings.Contains(c.Summary, "in-place actions first") {
		t.Errorf("none idle: %+v", c)
	}
	if c := CheckCapacity(gpus[1:4], 15*time.Minute, 4); c.Replicas != 0 || !strings.Contains(c.Summary, "no host has the 4") {
		t.Errorf("too few per host: %+v", c)
	}
	if !ScaleOut(diagnose.Action{Knob: "replicas", Proposed: "+1"}) || ScaleOut(diagnose.Action{Knob: "replicas", Proposed: "-1"}) ||
		!ScaleOut(diagnose.Action{ID: "drain_node"}) || ScaleOut(diagnose.Action{Knob: "max_num_seqs", Proposed: "current x 2"}) {
		t.Error("ScaleOut misclassifies")
	}
}

func TestEvaluate(t *testing.T) {
	pts := func(rate, ttft float64, n int) []metrics.Point {
		var out []metrics.Point
		for i := range n {
			j := float64(i%3-1) * 0.01 // small, deterministic spread
			out = append(out, metrics.Point{Values: metrics.Values{metrics.ArrivalRPS: rate * (1 + j), metrics.ThroughputRPS: rate * (1 + j), metrics.TTFT: ttft * (1 - j)}})
		}
		return out
	}
	effects := []ExpectedEffect{{Metric: metrics.TTFT, Direction: "down"}, {Metric: metrics.ThroughputRPS, Direction: "up"}}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		before, after []metrics.Point
		want          []string
		overall       string
	}{
		{"ttft fell, throughput per load flat", pts(10, 500, 20), pts(10, 200, 20), []string{VerdictExpected, VerdictNotExpected}, VerdictNotExpected},
		{"load doubled: latency inconclusive, throughput normalised", pts(10, 500, 20), pts(20, 200, 20), []string{VerdictInconclusive, VerdictNotExpected}, VerdictNotExpected},
		{"ttft rose", pts(10, 200, 20), pts(10, 500, 20), []string{VerdictNotExpected, VerdictNotExpected}, VerdictNotExpected},
		{"too little data", pts(10, 500, 2), pts(10, 200, 2), []string{VerdictInconclusive, VerdictInconclusive}, VerdictInconclusive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := Evaluate(effects, tc.before, tc.after, at, time.Hour)
			for i, e := range o.Effects {
				if e.Verdict != tc.want[i] {
					t.Errorf("%s: %s (%s), want %s", e.Metric, e.Verdict, e.Why, tc.want[i])
				}
			}
			if o.Verdict != tc.overall {
				t.Errorf("overall %s, want %s", o.Verdict, tc.overall)
			}
		})
	}
	o := Evaluate(effects[:1], pts(10, 500, 20), pts(10, 200, 20), at, time.Hour)
	if o.Verdict != VerdictExpected {
		t.Errorf("TTFT alone: %s", o.Verdict)
	}
}

// Chart presets put a knob at the chart's own value, or in the chart's
// engine argument list; vLLM's current flag for speculative tokens is
// --speculative-config with a JSON object.
func TestHelmChartsAndCurrentFlags(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	seqs := Proposal{Knob: "max_num_seqs", Flag: "--max-num-seqs", Current: "128", Proposed: "256"}
	spec := Proposal{Knob: "num_speculative_tokens", Flag: "--speculative-config", Current: "5", Proposed: "3"}
	tests := []struct {
		chart    string
		p        Proposal
		wantHelm string
		wantPath string
		wantArgs string
	}{
		{"production-stack", seqs,
			"servingEngineSpec:\n  modelSpec:\n    - name: llama\n      vllmConfig:\n        maxNumSeqs: 256  # was 128\n",
			"servingEngineSpec.modelSpec[name=MODEL].vllmConfig.maxNumSeqs", "- --max-num-seqs 128\n+ --max-num-seqs 256\n"},
		{"production-stack", spec,
			"servingEngineSpec:\n  modelSpec:\n    - name: llama\n      vllmConfig:\n        extraArgs:\n          - \"--speculative-config={\\\"num_speculative_tokens\\\": 3}\"  # merge into the list; replaces --speculative-config={\"num_speculative_tokens\": 5}\n",
			"servingEngineSpec.modelSpec[name=MODEL].vllmConfig.extraArgs",
			"- --speculative-config '{\"num_speculative_tokens\": 5}'\n+ --speculative-config '{\"num_speculative_tokens\": 3}'\n"},
		{"llm-d", seqs,
			"decode:\n  containers:\n    - name: vllm\n      args:\n        - \"--max-num-seqs=256\"  # merge into the list; replaces --max-num-seqs=128\n",
			"decode.containers[name=vllm].args", "- --max-num-seqs 128\n+ --max-num-seqs 256\n"},
		{"kserve", seqs,
			"spec:\n  predictor:\n    model:\n      args:\n        - \"--max-num-seqs=256\"  # merge into the list; replaces --max-num-seqs=128\n",
			"spec.predictor.model.args", "- --max-num-seqs 128\n+ --max-num-seqs 256\n"},
		{"none", seqs, "", "", "- --max-num-seqs 128\n+ --max-num-seqs 256\n"},
	}
	for _, tc := range tests {
		t.Run(tc.chart+"/"+tc.p.Knob, func(t *testing.T) {
			chart, ok := LookupHelmChart(tc.chart)
			if !ok {
				t.Fatalf("no chart %q", tc.chart)
			}
			a := diagnose.Action{ID: "x", Title: "x", Knob: tc.p.Knob}
			p := tc.p
			r, err := Build(BuildInput{IncidentID: 1, Scope: metrics.Scope{Model: "llama"}, Action: a, Proposal: &p, Chart: chart, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if r.HelmValues != tc.wantHelm {
				t.Errorf("helm\n%s\nwant\n%s", r.HelmValues, tc.wantHelm)
			}
			if r.Change.HelmPath != tc.wantPath {
				t.Errorf("helm path %q, want %q", r.Change.HelmPath, tc.wantPath)
			}
			if r.VLLMArgs != tc.wantArgs {
				t.Errorf("args %q, want %q", r.VLLMArgs, tc.wantArgs)
			}
		})
	}
	if _, ok := LookupHelmChart("vllm"); ok {
		t.Error("an unknown chart preset was accepted")
	}
}

func TestParseConfigReadsTheSpeculativeConfig(t *testing.T) {
	tests := []struct{ in, want string }{
		{`--model m --speculative-config '{"method": "eagle", "num_speculative_tokens": 4}' --max-num-seqs 64`, "4"},
		{`--speculative-config={"num_speculative_tokens":2}`, "2"},
		{`{"speculative_config": {"model": "d", "num_speculative_tokens": 6}}`, "6"},
		{`--num-speculative-tokens 5`, "5"}, // configurations written for vLLM before --speculative-config
	}
	for _, tc := range tests {
		got, err := ParseConfig([]byte(tc.in))
		if err != nil || got["num_speculative_tokens"] != tc.want {
			t.Errorf("ParseConfig(%s) = %v, %v; want num_speculative_tokens %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseConfig([]byte(`--speculative-config '{"num_speculative_tokens": 99}'`)); err == nil {
		t.Error("99 speculative tokens accepted")
	}
	if _, err := ParseConfig([]byte(`--speculative-config {not json}`)); err == nil {
		t.Error("a malformed speculative config accepted")
	}
}

// TestBuildInChinese writes the same request in English and in Chinese:
// the Chinese Markdown has the English one's structure (the same headings
// and table rows in the same places), its human texts are Chinese, and
// ids, knobs and JSON field names stay as they are.
func TestBuildInChinese(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "diagnose", "testdata", "kv_cache_eviction.input.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := diagnose.ParseSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	d := diagnose.New(diagnose.Options{}).Diagnose(snap)
	a := d.Actions[0]
	s, err := ParseSchedule("Tue 10:00-12:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	build := func(lang string) (Request, string) {
		t.Helper()
		var prop *Proposal
		if a.Knob != "" {
			p, err := ProposeIn(lang, a, map[string]string{a.Knob: "0.9"}, snap.Current, "")
			if err != nil {
				t.Fatal(err)
			}
			prop = &p
		}
		capacity := CheckCapacityIn(lang, nil, 15*time.Minute, 1)
		r, err := Build(BuildInput{IncidentID: 7, IncidentURL: "https://cb.example/incidents/7", Scope: metrics.Scope{Model: "llama"},
			Diagnosis: d, Action: a, Proposal: prop, Schedule: &s, Capacity: &capacity, Now: now, By: "ana", Lang: lang})
		if err != nil {
			t.Fatal(err)
		}
		return r, r.Markdown()
	}
	en, enMD := build("en")
	zh, zhMD := build("zh-CN")
	if en.Lang != "" || zh.Lang != "zh-CN" {
		t.Errorf("lang: en %q, zh %q", en.Lang, zh.Lang)
	}
	shape := func(md string) []string {
		var out []string
		for _, line := range strings.Split(md, "\n") {
			switch {
			case strings.HasPrefix(line, "#"), strings.HasPrefix(line, "|"), strings.HasPrefix(line, "- "), strings.HasPrefix(line, "```"):
				out = append(out, line[:1])
			case line == "":
				out = append(out, "")
			default:
				out = append(out, "text")
			}
		}
		return out
	}
	if s1, s2 := shape(enMD), shape(zhMD); strings.Join(s1, ",") != strings.Join(s2, ",") {
		t.Errorf("structures differ:\n%s\n---\n%s", enMD, zhMD)
	}
	for _, want := range []string{"# 变更请求 ", "## 诊断", "## 预期效果", "## 风险", "## 回滚", "| 指标 | 维度 | 方向 | 幅度 |",
		"发布窗口（下一个）：2026-12-01 10:00 至 12:00 UTC", "，创建者 ana", "没有 GPU 数据", diagnose.CauseTitleIn("zh-CN", d.RootCause)} {
		if !strings.Contains(zhMD, want) {
			t.Errorf("Chinese Markdown lacks %q:\n%s", want, zhMD)
		}
	}
	for _, not := range []string{"Change request", "Diagnosis", "Expected effect", "Risk", "Rollback", "confidence", "Why this value", "Deployment window"} {
		if strings.Contains(zhMD, not) {
			t.Errorf("Chinese Markdown shows %q", not)
		}
	}
	if zh.Action.ID != en.Action.ID || zh.Diagnosis.RootCause != en.Diagnosis.RootCause || zh.Action.Title == en.Action.Title || zh.Risk == en.Risk {
		t.Errorf("ids must stay and texts change: en %+v, zh %+v", en.Action, zh.Action)
	}
	js, err := zh.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"root_cause": "kv_cache_eviction"`, `"expected_effects"`, `"rollback"`, `"lang": "zh-CN"`} {
		if !strings.Contains(string(js), field) {
			t.Errorf("Chinese JSON lacks %s", field)
		}
	}
}
