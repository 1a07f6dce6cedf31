package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// snapshotLine returns one valid snapshot as compact JSON, built from the
// diagnose package's golden input for cause.
func snapshotLine(t testing.TB, cause string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "diagnose", "testdata", cause+".input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// smallLine is a valid snapshot with a short history, edited by fn.
func smallLine(fn func(s map[string]any)) string {
	s := map[string]any{
		"at":      "2026-03-02T14:00:00Z",
		"scope":   map[string]any{"model": "m"},
		"current": map[string]any{"ttft_ms": 200.0, "error_rate": 0.001},
		"history": []any{
			map[string]any{"at": "2026-03-02T13:00:00Z", "values": map[string]any{"ttft_ms": 190.0}},
			map[string]any{"at": "2026-03-02T13:01:00Z", "values": map[string]any{"ttft_ms": 210.0}},
			map[string]any{"at": "2026-03-02T13:02:00Z", "values": map[string]any{"ttft_ms": 200.0}},
		},
	}
	if fn != nil {
		fn(s)
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func runDiagnose(t *testing.T, input string, args ...string) ([]map[string]any, string, error) {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := diagnoseCmd(context.Background(), append(args, in), func(string) string { return "" }, &stdout, &stderr)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("output line is not JSON: %q", line)
		}
		out = append(out, v)
	}
	return out, stderr.String(), err
}

func TestDiagnoseCmdBadInput(t *testing.T) {
	good := smallLine(nil)
	tests := []struct {
		name    string
		line    string
		wantErr string // substring of the error line; "" = a diagnosis
	}{
		{"valid short snapshot", good, ""},
		{"malformed JSON", `{"at": "2026-03-02T14:00:00Z", "scope": {`, "malformed JSON"},
		{"not an object", `[1,2,3]`, "should be"},
		{"NaN literal", strings.Replace(good, "200", "NaN", 1), "malformed JSON"},
		{"negative rate", smallLine(func(s map[string]any) { s["current"].(map[string]any)["throughput_rps"] = -3.0 }), "throughput_rps"},
		{"fraction above 1", smallLine(func(s map[string]any) { s["current"].(map[string]any)["kv_cache_usage"] = 1.7 }), "kv_cache_usage"},
		{"fraction below 0", smallLine(func(s map[string]any) { s["current"].(map[string]any)["error_rate"] = -0.1 }), "error_rate"},
		{"missing at", smallLine(func(s map[string]any) { delete(s, "at") }), `"at" is missing`},
		{"missing model", smallLine(func(s map[string]any) { s["scope"] = map[string]any{} }), "scope.model"},
		{"unknown fields are ignored", smallLine(func(s map[string]any) {
			s["extra"] = true
			s["current"].(map[string]any)["made_up_metric"] = 5.0
		}), ""},
		{"empty history", smallLine(func(s map[string]any) { s["history"] = []any{} }), ""},
		{"wrong type", smallLine(func(s map[string]any) { s["current"].(map[string]any)["ttft_ms"] = "fast" }), "should be float64"},
		{"deep nesting", `{"at":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}`, "nested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each bad line sits between two good ones: processing goes on.
			out, _, err := runDiagnose(t, good+"\n"+tc.line+"\n"+good+"\n")
			if err != nil {
				t.Fatalf("command failed: %v", err)
			}
			if len(out) != 3 {
				t.Fatalf("%d output lines, want 3", len(out))
			}
			for _, i := range []int{0, 2} {
				if _, ok := out[i]["root_cause"]; !ok {
					t.Errorf("line %d: %v, want a diagnosis", i+1, out[i])
				}
			}
			msg, isErr := out[1]["error"].(string)
			switch {
			case tc.wantErr == "" && isErr:
				t.Errorf("got error %q, want a diagnosis", msg)
			case tc.wantErr != "" && !isErr:
				t.Errorf("got %v, want an error", out[1])
			case tc.wantErr != "" && !strings.Contains(msg, tc.wantErr):
				t.Errorf("error %q does not mention %q", msg, tc.wantErr)
			case tc.wantErr != "" && !strings.HasPrefix(msg, "line 2:"):
				t.Errorf("error %q does not name line 2", msg)
			}
		})
	}
}

func TestDiagnoseCmdOversizedLine(t *testing.T) {
	good := smallLine(nil)
	huge := `{"at":"2026-03-02T14:00:00Z","scope":{"model":"` + strings.Repeat("x", metrics.MaxSnapshotBytes+10) + `"}}`
	out, _, err := runDiagnose(t, good+"\n"+huge+"\n"+good+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d output lines, want 3", len(out))
	}
	msg, _ := out[1]["error"].(string)
	if !strings.Contains(msg, "line 2") || !strings.Contains(msg, "limit") {
		t.Errorf("oversized line gave %v", out[1])
	}
	if _, ok := out[2]["root_cause"]; !ok {
		t.Errorf("line after the oversized one: %v", out[2])
	}
}

func TestDiagnoseCmdOrderAndFormats(t *testing.T) {
	causes := []string{metrics.CauseQueueBacklog, metrics.CauseNone, metrics.CauseGPUThrottling, metrics.CauseEngineErrors}
	var jsonl strings.Builder
	for i := 0; i < 25; i++ {
		jsonl.Write(snapshotLine(t, causes[i%len(causes)]))
		jsonl.WriteString("\n")
		if i%7 == 0 {
			jsonl.WriteString("\n   \n") // blank lines are skipped
		}
	}
	out, _, err := runDiagnose(t, jsonl.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 25 {
		t.Fatalf("%d output lines, want 25", len(out))
	}
	for i, d := range out {
		if d["root_cause"] != causes[i%len(causes)] {
			t.Errorf("line %d: %v, want %s (input order must be kept)", i+1, d["root_cause"], causes[i%len(causes)])
		}
	}

	// One pretty-printed snapshot is one diagnosis.
	raw, err := os.ReadFile(filepath.Join("..", "..", "diagnose", "testdata", metrics.CauseEngineErrors+".input.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err = runDiagnose(t, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0]["root_cause"] != metrics.CauseEngineErrors {
		t.Errorf("pretty-printed document gave %v", out)
	}

	// A final line without a newline still counts.
	out, _, err = runDiagnose(t, smallLine(nil)+"\n"+smallLine(nil))
	if err != nil || len(out) != 2 {
		t.Errorf("unterminated last line: %d lines, err %v", len(out), err)
	}

	// An empty input gives no output and no error.
	out, _, err = runDiagnose(t, "")
	if err != nil || len(out) != 0 {
		t.Errorf("empty input: %d lines, err %v", len(out), err)
	}
}

func TestDiagnoseCmdCases(t *testing.T) {
	dir := t.TempDir()
	kb := filepath.Join(dir, "kb.jsonl")
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(smallLine(func(s map[string]any) { s["label"] = "queue_backlog" }), "\n") + "\n")
	b.WriteString(smallLine(nil) + "\n") // no label: invalid case
	b.WriteString("{oops\n")
	if err := os.WriteFile(kb, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runDiagnose(t, smallLine(nil)+"\n", "--cases", kb)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("%d output lines, want 1", len(out))
	}
	raw, err := json.Marshal(out[0])
	if err != nil {
		t.Fatal(err)
	}
	var d diagnose.Diagnosis
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.SimilarCases) != 1 || d.SimilarCases[0].RootCause != "queue_backlog" || d.SimilarCases[0].ID != "kb.jsonl:1" {
		t.Errorf("similar cases %+v, want the one loaded case", d.SimilarCases)
	}
	if !strings.Contains(stderr, "1 labelled cases loaded") || !strings.Contains(stderr, "2 lines skipped") || !strings.Contains(stderr, "label is missing") {
		t.Errorf("stderr = %q", stderr)
	}

	if _, _, err := runDiagnose(t, smallLine(nil)+"\n", "--cases", filepath.Join(dir, "absent.jsonl")); err == nil {
		t.Error("a missing --cases file is not an error")
	}
}

func TestDiagnoseCmdUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	env := func(string) string { return "" }
	if err := diagnoseCmd(context.Background(), []string{"a", "b"}, env, &stdout, &stderr); err == nil {
		t.Error("two files accepted")
	}
	if err := diagnoseCmd(context.Background(), []string{"--nope"}, env, &stdout, &stderr); err == nil {
		t.Error("unknown flag accepted")
	}
	if err := diagnoseCmd(context.Background(), []string{filepath.Join(t.TempDir(), "absent")}, env, &stdout, &stderr); err == nil {
		t.Error("missing input file accepted")
	}
}

// goldenCorpus writes a corpus of one golden snapshot per taxonomy cause,
// labelled with it, and one line that is not JSON (line 14).
func goldenCorpus(t *testing.T) string {
	t.Helper()
	corpus := filepath.Join(t.TempDir(), "corpus.jsonl")
	var b strings.Builder
	for _, c := range metrics.Causes {
		var v map[string]any
		if err := json.Unmarshal(snapshotLine(t, c.ID), &v); err != nil {
			t.Fatal(err)
		}
		v["label"] = c.ID
		line, _ := json.Marshal(v)
		b.Write(line)
		b.WriteString("\n")
	}
	b.WriteString("not json\n")
	if err := os.WriteFile(corpus, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return corpus
}

func TestEvalCmd(t *testing.T) {
	corpus := goldenCorpus(t)
	env := func(string) string { return "" }

	var stdout, stderr bytes.Buffer
	if err := evalCmd(context.Background(), []string{"--corpus", corpus}, env, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	text := stdout.String()
	for _, want := range []string{"top-1 accuracy", "top-3 accuracy", "precision", "confusion", "calibration", "(1 invalid lines skipped)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(stderr.String(), "line 14") {
		t.Errorf("stderr does not name the bad line: %q", stderr.String())
	}

	// In Chinese the same report, line for line, with Chinese words.
	stdout.Reset()
	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--lang", "zh-CN"}, env, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	zh := stdout.String()
	if strings.Count(zh, "\n") != strings.Count(text, "\n") {
		t.Errorf("the Chinese report has %d lines, the English one %d:\n%s", strings.Count(zh, "\n"), strings.Count(text, "\n"), zh)
	}
	for _, want := range []string{"Top-1 准确率", "Top-3 准确率", "精确率", "混淆矩阵", "校准", "（跳过 1 行无效数据）", metrics.CauseQueueBacklog} {
		if !strings.Contains(zh, want) {
			t.Errorf("Chinese report lacks %q:\n%s", want, zh)
		}
	}
	for _, not := range []string{"accuracy", "precision", "calibration", "skipped"} {
		if strings.Contains(zh, not) {
			t.Errorf("Chinese report shows %q", not)
		}
	}

	stdout.Reset()
	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--json"}, env, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		diagnose.EvalReport
		Skipped int `json:"skipped"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output: %v", err)
	}
	if rep.Cases != len(metrics.Causes) || rep.Skipped != 1 || len(rep.Bins) == 0 {
		t.Errorf("report = %+v", rep)
	}
	if rep.Top1 < 1 {
		t.Errorf("top-1 = %v on the golden inputs, want 1", rep.Top1)
	}

	if err := evalCmd(context.Background(), nil, env, &stdout, &stderr); err == nil {
		t.Error("eval without --corpus accepted")
	}

	stdout.Reset()
	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--feedback", "--noise", "0.5", "--block", "5"}, env, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	text = stdout.String()
	for _, want := range []string{"rules alone", "rules + matching", "plain 5-NN", "expected calibration error: rules alone", "wrong labels fed back", "learning curve", "1-5", "11-13"} {
		if !strings.Contains(text, want) {
			t.Errorf("feedback report lacks %q:\n%s", want, text)
		}
	}
	for _, args := range [][]string{
		{"--corpus", corpus, "--noise", "0.1"},
		{"--corpus", corpus, "--feedback", "--noise", "2"},
	} {
		if err := evalCmd(context.Background(), args, env, &stdout, &stderr); err == nil {
			t.Errorf("eval %q accepted", args)
		}
	}
}

// BenchmarkDiagnoseCmd10k runs the diagnose command over 10,000 JSON Lines
// (60 history points each). The bar is under 5 s per op.
func BenchmarkDiagnoseCmd10k(b *testing.B) {
	var lines [][]byte
	for _, c := range metrics.Causes {
		lines = append(lines, snapshotLine(b, c.ID))
	}
	var buf bytes.Buffer
	for i := 0; i < 10000; i++ {
		buf.Write(lines[i%len(lines)])
		buf.WriteByte('\n')
	}
	in := filepath.Join(b.TempDir(), "10k.jsonl")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var out countWriter
		start := time.Now()
		if err := diagnoseCmd(context.Background(), []string{in}, func(string) string { return "" }, &out, &bytes.Buffer{}); err != nil {
			b.Fatal(err)
		}
		if out.lines != 10000 {
			b.Fatalf("%d output lines", out.lines)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/10000, "µs/line")
	}
}

type countWriter struct{ lines int }

func (c *countWriter) Write(p []byte) (int, error) {
	c.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// FuzzDiagnoseStream feeds arbitrary input to the JSON Lines reader and the
// engine: nothing may panic, every output line must be JSON, and there is
// at most one output line per input line.
func FuzzDiagnoseStream(f *testing.F) {
	f.Add([]byte(smallLine(nil) + "\n" + smallLine(nil)))
	f.Add([]byte("{\n\"at\": 1\n}\n"))
	f.Add([]byte("\n\n{oops\n[]\n"))
	f.Add([]byte(`{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1e308}}`))
	e := diagnose.New(diagnose.Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		if err := diagnoseStream(context.Background(), e, bytes.NewReader(data), &out, 2); err != nil {
			t.Fatalf("stream: %v", err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if out.Len() == 0 {
			lines = nil
		}
		if len(lines) > bytes.Count(data, []byte{'\n'})+1 {
			t.Fatalf("%d output lines for %d input lines", len(lines), bytes.Count(data, []byte{'\n'})+1)
		}
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Fatalf("output line is not JSON: %q", l)
			}
		}
	})
}

// TestEvalFeatures: --features writes a header and one row per valid case,
// with the label, the rules' cause and a positive score for it, the
// signature and the metrics' z; it refuses --feedback and a path it cannot
// create.
func TestEvalFeatures(t *testing.T) {
	corpus := goldenCorpus(t)
	env := func(string) string { return "" }
	out := filepath.Join(t.TempDir(), "features.csv")
	var stdout, stderr bytes.Buffer
	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--features", out}, env, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("features file is not CSV: %v", err)
	}
	if len(rows) != 1+len(metrics.Causes) {
		t.Fatalf("%d rows, want a header and %d cases", len(rows), len(metrics.Causes))
	}
	head := rows[0]
	if want := 2 + len(metrics.Causes) + diagnose.SigDim + len(metrics.Catalog); len(head) != want {
		t.Fatalf("%d columns, want %d: %v", len(head), want, head)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for i, c := range metrics.Causes {
		row := rows[1+i]
		if row[0] != c.ID || row[1] != c.ID {
			t.Errorf("row %d: label %q, rules' cause %q, want %q for both (golden input)", i+1, row[0], row[1], c.ID)
		}
		score, err := strconv.ParseFloat(row[col["score_"+c.ID]], 64)
		if err != nil || score <= 0 {
			t.Errorf("row %d: score_%s = %q, want a positive number", i+1, c.ID, row[col["score_"+c.ID]])
		}
	}
	queue := rows[1+slices.IndexFunc(metrics.Causes, func(c metrics.Cause) bool { return c.ID == metrics.CauseQueueBacklog })]
	z, err := strconv.ParseFloat(queue[col["z_"+metrics.QueueDepth]], 64)
	if err != nil || z < diagnose.AnomalyZ {
		t.Errorf("queue backlog case: z_%s = %q, want beyond %v", metrics.QueueDepth, queue[col["z_"+metrics.QueueDepth]], diagnose.AnomalyZ)
	}
	if sig, err := strconv.ParseFloat(queue[col["sig_"+metrics.QueueDepth]], 64); err != nil || sig <= 0 || sig > 1 {
		t.Errorf("queue backlog case: sig_%s = %q, want in (0, 1]", metrics.QueueDepth, queue[col["sig_"+metrics.QueueDepth]])
	}

	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--features", out, "--feedback"}, env, &stdout, &stderr); err == nil {
		t.Error("--features with --feedback accepted")
	}
	if err := evalCmd(context.Background(), []string{"--corpus", corpus, "--features", filepath.Join(t.TempDir(), "absent", "f.csv")}, env, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--features") {
		t.Errorf("an uncreatable features path gave %v, want an error naming --features", err)
	}
}
