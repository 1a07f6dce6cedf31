package handlers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func TestPostmortemMarkdown(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	d := handlerstest.EvictionDiagnosis()
	d.Actions[0].Knob = "gpu_memory_utilization`|x"
	body, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p := store.Page{
		Incident: store.Incident{Summary: store.Summary{ID: 7, Title: "*bold* [link](javascript:x) <img src=x> | pipe", Scope: metrics.Scope{Model: "llama-70b"},
			Trigger: store.TriggerManual, OpenedAt: at, Severity: "critical", Verdict: store.VerdictWrong, TrueCause: "custom_nccl_stall"}},
		Diagnoses: []store.Diagnosis{{ID: 1, DiagnosisRecord: store.DiagnosisRecord{RootCause: d.RootCause, EngineVersion: "v1", CreatedAt: at, Body: body}}},
		Notes:     []store.Note{{Author: "ana`", At: at.Add(time.Minute), Body: "line one\n# not a heading\n- not a list"}},
	}
	md := handlers.PostmortemMarkdown(p, func(id string) string {
		if id == "custom_nccl_stall" {
			return "NCCL stall"
		}
		return id
	})
	tests := []struct {
		name string
		want string
	}{
		{"title escaped", `# Incident 7: \*bold\* \[link\](javascript:x) \<img src=x\> \| pipe`},
		{"custom cause titled", "true cause NCCL stall (`custom_nccl_stall`)"},
		{"code spans unescaped", "(`kv_cache_eviction`)"},
		{"backtick and pipe in a code span", "(`gpu_memory_utilization'\\|x` → `0.95`)"},
		{"newlines flattened", "line one # not a heading - not a list"},
		{"author escaped", "(ana\\`)"},
		{"evidence table", "| Prefix hit rate | 35% | 82% |"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(md, tc.want) {
				t.Errorf("markdown lacks %q:\n%s", tc.want, md)
			}
		})
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "# not") || strings.HasPrefix(line, "- not") {
			t.Errorf("user text started a Markdown line: %q", line)
		}
	}
}

// TestPostmortemMarkdownChinese renders the same postmortem in English and
// Chinese: the Markdown has the same structure (headings, table rows,
// list items, in order) and the Chinese one's words are Chinese.
func TestPostmortemMarkdownChinese(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	body, err := json.Marshal(handlerstest.EvictionDiagnosis())
	if err != nil {
		t.Fatal(err)
	}
	p := store.Page{
		Incident: store.Incident{Summary: store.Summary{ID: 7, Title: "TTFT spike", Scope: metrics.Scope{Model: "llama-70b"},
			Trigger: store.TriggerManual, OpenedAt: at, Severity: "critical", Verdict: store.VerdictCorrect}},
		Diagnoses: []store.Diagnosis{{ID: 1, DiagnosisRecord: store.DiagnosisRecord{RootCause: "kv_cache_eviction", EngineVersion: "v1", CreatedAt: at, Body: body}}},
		Notes:     []store.Note{{Author: "ana", At: at.Add(time.Minute), Body: "raised gpu_memory_utilization"}},
	}
	en := handlers.PostmortemMarkdown(p, nil)
	zh := handlers.PostmortemMarkdownIn(i18n.With(context.Background(), i18n.New(i18n.Chinese)), p, nil)
	shape := func(md string) []string {
		var out []string
		for _, l := range strings.Split(md, "\n") {
			switch {
			case strings.HasPrefix(l, "#"):
				out = append(out, strings.Repeat("#", strings.IndexFunc(l, func(r rune) bool { return r != '#' })))
			case strings.HasPrefix(l, "|"):
				out = append(out, "|"+strings.Repeat("|", strings.Count(l, " | ")))
			case strings.HasPrefix(strings.TrimSpace(l), "- "):
				out = append(out, "-")
			case l != "" && l[0] >= '0' && l[0] <= '9':
				out = append(out, "1.")
			}
		}
		return out
	}
	if s1, s2 := shape(en), shape(zh); strings.Join(s1, " ") != strings.Join(s2, " ") {
		t.Errorf("structure differs:\nen %v\nzh %v\n%s", s1, s2, zh)
	}
	for _, want := range []string{"# 事件 7：TTFT spike", "## 诊断", "KV Cache 驱逐风暴", "### 处置建议", "   - 风险：", "## 时间线", "## 后续事项", "| 严重程度 | 严重 |", "诊断已确认正确"} {
		if !strings.Contains(zh, want) {
			t.Errorf("Chinese postmortem lacks %q:\n%s", want, zh)
		}
	}
	for _, english := range []string{"Recommended actions", "Why:", "Timeline", "confidence"} {
		if strings.Contains(zh, english) {
			t.Errorf("Chinese postmortem still says %q:\n%s", english, zh)
		}
	}
}
