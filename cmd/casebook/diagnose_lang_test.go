package main

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

func hasHan(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// TestDiagnoseLangChinese runs `casebook diagnose --lang zh-CN` on the
// golden inputs and checks the output has the English output's structure
// (fields, ids, numbers, as many evidence lines, actions and notes) with
// Chinese texts.
func TestDiagnoseLangChinese(t *testing.T) {
	var input strings.Builder
	causes := []string{"kv_cache_eviction", "queue_backlog", "gpu_throttling", "engine_errors.nohistory", "none",
		"spec_decode_degradation", "memory_bandwidth_bound", "host_overhead", "transport_latency", "unknown", "prefix_cache_miss", "long_prompt_prefill", "gpu_underutilized"}
	for _, c := range causes {
		input.Write(snapshotLine(t, c))
		input.WriteByte('\n')
	}
	en, _, err := runDiagnose(t, input.String())
	if err != nil {
		t.Fatal(err)
	}
	zh, _, err := runDiagnose(t, input.String(), "--lang", "zh-CN")
	if err != nil {
		t.Fatal(err)
	}
	if len(en) != len(causes) || len(zh) != len(en) {
		t.Fatalf("%d English and %d Chinese diagnoses for %d inputs", len(en), len(zh), len(causes))
	}
	texts := map[string]bool{"title": true, "text": true, "why": true, "risk": true, "rollback": true}
	for i := range en {
		if en[i]["error"] != nil || zh[i]["error"] != nil {
			t.Fatalf("%s: %v / %v", causes[i], en[i]["error"], zh[i]["error"])
		}
		var han, english int
		sameShape(t, causes[i], "", en[i], zh[i], texts, &han, &english)
		if han == 0 || han < english {
			t.Errorf("%s: %d Chinese texts and %d left in English", causes[i], han, english)
		}
	}
}

// sameShape walks the English and Chinese values together: everything
// but the human texts (texts' keys and the notes) must be equal.
func sameShape(t *testing.T, where, key string, en, zh any, texts map[string]bool, han, english *int) {
	t.Helper()
	switch e := en.(type) {
	case map[string]any:
		z, ok := zh.(map[string]any)
		if !ok || len(z) != len(e) {
			t.Errorf("%s%s: fields differ: %v vs %v", where, key, keysOf(e), zh)
			return
		}
		for k, v := range e {
			sameShape(t, where, key+"."+k, v, z[k], texts, han, english)
		}
	case []any:
		z, ok := zh.([]any)
		if !ok || len(z) != len(e) {
			t.Errorf("%s%s: %d English items, Chinese %v", where, key, len(e), zh)
			return
		}
		for i := range e {
			sameShape(t, where, key, e[i], z[i], texts, han, english)
		}
	case string:
		last := key[strings.LastIndex(key, ".")+1:]
		if texts[last] || last == "notes" {
			z, _ := zh.(string)
			if e != "" && hasHan(z) {
				*han++
			} else if e != "" {
				*english++
				t.Logf("%s%s: still English: %q", where, key, z)
			}
			return
		}
		if !reflect.DeepEqual(en, zh) {
			t.Errorf("%s%s: %v became %v", where, key, en, zh)
		}
	default:
		if !reflect.DeepEqual(en, zh) {
			t.Errorf("%s%s: %v became %v", where, key, en, zh)
		}
	}
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDiagnoseLangRejectsUnknown: an unsupported language is a usage
// error naming the flag.
func TestDiagnoseLangRejectsUnknown(t *testing.T) {
	_, _, err := runDiagnose(t, smallLine(nil), "--lang", "fr")
	if err == nil || !strings.Contains(err.Error(), "--lang") {
		t.Fatalf("got %v", err)
	}
}
