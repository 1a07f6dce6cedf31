package diagnose

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	m "github.com/casebook/casebook/metrics"
)

// hasHan reports whether s holds Chinese characters.
func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestChineseTablesComplete fails when a cause, metric, remark, action or
// worded proposal of the English tables has no Chinese text.
func TestChineseTablesComplete(t *testing.T) {
	for _, c := range m.Causes {
		if z := zhCauses[c.ID]; !hasHan(z.Title) || !hasHan(z.What) || z.Signature == "" {
			t.Errorf("cause %s: no Chinese title or explanation", c.ID)
		}
	}
	for _, mt := range m.Catalog {
		if z, ok := zhMetrics[mt.ID]; !ok || z.Label == "" || !hasHan(z.Name) && z.Name == mt.Name && !strings.ContainsAny(mt.Name, "0123456789") {
			t.Errorf("metric %s: no Chinese label or name", mt.ID)
		}
	}
	for k := range remarks {
		if !hasHan(zhRemarks[k]) {
			t.Errorf("remark %s: no Chinese text", k)
		}
	}
	for cause, acts := range causeActions {
		for _, a := range acts {
			z, ok := zhActions[cause][a.ID]
			if !ok {
				t.Errorf("action %s/%s: no Chinese text", cause, a.ID)
				continue
			}
			for _, f := range [][2]string{{a.Title, z.Title}, {a.Why, z.Why}, {a.Risk, z.Risk}, {a.Rollback, z.Rollback}} {
				if f[0] != "" && !hasHan(f[1]) {
					t.Errorf("action %s/%s: %q has no Chinese text", cause, a.ID, f[0])
				}
			}
			if strings.ContainsAny(a.Proposed, "abcdefghijklmnopqrstuvwxyz") && a.Proposed != "true" && !hasHan(ProposedIn(LangZH, a.Proposed)) {
				t.Errorf("action %s/%s: proposal %q untranslated", cause, a.ID, a.Proposed)
			}
			for _, e := range a.Effects {
				if s := EffectSizeIn(LangZH, e.Size); strings.ContainsAny(strings.ReplaceAll(s, "pt", ""), "abcdefghijklmnopqrstuvwxyz") {
					t.Errorf("action %s/%s: effect size %q untranslated: %q", cause, a.ID, e.Size, s)
				}
			}
		}
	}
	for cause, acts := range zhActions {
		for id := range acts {
			if !containsAction(causeActions[cause], id) {
				t.Errorf("Chinese action %s/%s has no English action", cause, id)
			}
		}
	}
}

func containsAction(as []Action, id string) bool {
	for _, a := range as {
		if a.ID == id {
			return true
		}
	}
	return false
}

// TestNoteShapesTranslate writes every note shape in English with sample
// arguments and checks the translation recognised it and kept its numbers.
func TestNoteShapesTranslate(t *testing.T) {
	for _, sh := range zhNotes {
		var args []any
		for i, v := range formatVerbs(sh.en) {
			switch v {
			case "%s":
				args = append(args, causeTitle(m.Causes[i%len(m.Causes)].ID))
			case "%d":
				args = append(args, 10+i)
			default:
				args = append(args, float64(40+i))
			}
		}
		en := sh.en
		if !sh.literal {
			en = fmt.Sprintf(sh.en, args...)
		}
		zh := NoteIn(LangZH, en)
		if zh == en || !hasHan(zh) || strings.Contains(zh, "%!") {
			t.Errorf("note %q: translation %q", en, zh)
			continue
		}
		for _, a := range args {
			if n, ok := a.(int); ok && !strings.Contains(zh, fmt.Sprint(n)) {
				t.Errorf("note %q: translation %q lost %d", en, zh, n)
			}
			if f, ok := a.(float64); ok && !strings.Contains(zh, fmt.Sprintf("%.0f", f)) {
				t.Errorf("note %q: translation %q lost %.0f", en, zh, f)
			}
		}
	}
	if got := NoteIn(LangZH, "A note of no known shape."); got != "A note of no known shape." {
		t.Errorf("unknown note changed: %q", got)
	}
}

// TestLocalizeKeepsStructure checks that a Chinese diagnosis has the same
// ids, numbers, evidence, actions and notes as the English one.
func TestLocalizeKeepsStructure(t *testing.T) {
	d := Diagnosis{
		RootCause: m.CauseKVCacheEviction, Title: causeTitle(m.CauseKVCacheEviction),
		Evidence: []Evidence{
			{Metric: m.KVCacheUsage, Value: 0.97, BaselineMean: 0.5, Z: 8, Text: evidenceText(m.KVCacheUsage, 0.97, Deviation{Mean: 0.5, Std: 0.05, Z: 8}, remarkKVFull)},
			{Metric: m.TTFT, Value: 300, BaselineMean: 290, Z: 0.5, Text: evidenceText(m.TTFT, 300, Deviation{Mean: 290, Std: 20, Z: 0.5}, "")},
			{Metric: m.TPOT, Value: 30, Text: evidenceText(m.TPOT, 30, Deviation{}, "")},
		},
		Actions: actionsFor(m.CauseKVCacheEviction),
		Notes:   []string{noteNoBaseline, fmt.Sprintf(noteShortBaseline, 50.0)},
	}
	zh := Localize(d, LangZH)
	if zh.RootCause != d.RootCause || zh.Confidence != d.Confidence || zh.Title != "KV Cache 驱逐风暴" {
		t.Errorf("head: %q %q", zh.RootCause, zh.Title)
	}
	if len(zh.Evidence) != len(d.Evidence) || len(zh.Actions) != len(d.Actions) || len(zh.Notes) != len(d.Notes) {
		t.Fatalf("structure changed: %d/%d evidence, %d/%d actions, %d/%d notes",
			len(zh.Evidence), len(d.Evidence), len(zh.Actions), len(d.Actions), len(zh.Notes), len(d.Notes))
	}
	want := []string{
		"KV Cache 使用率 为 97.0%，是基线 50.0% 的 1.9 倍（z +8.0）。超过约 90% 的拐点后，每个新序列都会触发一次抢占。",
		"首 Token 延迟 TTFT 为 300 ms，处于基线 290 ms 之内（z +0.5）。",
		"每 Token 输出延迟 TPOT 为 30 ms（无基线）。",
	}
	for i, e := range zh.Evidence {
		if e.Text != want[i] {
			t.Errorf("evidence %d: got %q, want %q", i, e.Text, want[i])
		}
		if e.Metric != d.Evidence[i].Metric || e.Value != d.Evidence[i].Value || e.Z != d.Evidence[i].Z {
			t.Errorf("evidence %d: numbers changed", i)
		}
	}
	for i, a := range zh.Actions {
		if a.ID != d.Actions[i].ID || a.Knob != d.Actions[i].Knob || a.Proposed != d.Actions[i].Proposed || !hasHan(a.Title) {
			t.Errorf("action %d: %+v", i, a)
		}
	}
	if zh.Notes[1] != "只有部分指标有基线（50%），置信度相应下调。" {
		t.Errorf("note: %q", zh.Notes[1])
	}
	if en := Localize(d, "en"); en.Evidence[0].Text != d.Evidence[0].Text || en.Actions[0].Title != d.Actions[0].Title {
		t.Error("English changed")
	}
	if d.Actions[0].Title == zh.Actions[0].Title || d.Evidence[0].Text == zh.Evidence[0].Text {
		t.Error("Localize changed its input")
	}
}
