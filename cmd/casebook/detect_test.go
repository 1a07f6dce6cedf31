package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDetectCmd(t *testing.T) {
	// Three days of a 5-minute daily-seasonal series with a step up of
	// ten standard deviations for an hour on the last day.
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	stepAt := start.Add(2*24*time.Hour + 12*time.Hour)
	for i := 0; i < 3*288; i++ {
		at := start.Add(time.Duration(i) * 5 * time.Minute)
		v := 100 + 20*math.Sin(2*math.Pi*float64(i%288)/288) + 2*math.Sin(float64(i)*1.7)
		if !at.Before(stepAt) && at.Before(stepAt.Add(time.Hour)) {
			v += 40
		}
		layout := time.RFC3339
		if i%2 == 0 {
			layout = "2006-01-02 15:04:05"
		}
		fmt.Fprintf(&b, "%s,%.3f\n", at.Format(layout), v)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "series.csv")
	if err := os.WriteFile(good, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("timestamp,value\n2026-01-05 00:00:00,1\n2026-01-05 00:05:00,oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	tests := []struct {
		name    string
		args    []string
		env     func(string) string
		wantOut []string
		wantErr string
	}{
		// By default a run must last 3 minutes: at 5-minute data, one
		// point spans it, and this step is deep enough to fire on its
		// first point; with single-sample alerts off, two points.
		{"alerts on the step with the inferred 5-minute interval", []string{"--csv", good, "--metric", "tpot_ms"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing"}, ""},
		{"--single-z -1 needs two points at 5-minute data", []string{"--csv", good, "--metric", "tpot_ms", "--single-z", "-1"}, noEnv,
			[]string{stepAt.Add(5*time.Minute).Format(time.RFC3339) + " firing"}, ""},
		{"a run of 15 minutes is three points", []string{"--csv", good, "--metric", "tpot_ms", "--for", "15m"}, noEnv,
			[]string{stepAt.Add(10*time.Minute).Format(time.RFC3339) + " firing"}, ""},
		{"--consecutive overrides --for", []string{"--csv", good, "--metric", "tpot_ms", "--for", "1h", "--consecutive", "3"}, noEnv,
			[]string{stepAt.Add(10*time.Minute).Format(time.RFC3339) + " firing"}, ""},
		{"with --events, also when the alert ends", []string{"--csv", good, "--metric", "tpot_ms", "--events"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing", "resolved"}, ""},
		{"consecutive from the environment", []string{"--csv", good}, func(k string) string {
			if k == "CASEBOOK_CONSECUTIVE" {
				return "2"
			}
			return ""
		}, []string{stepAt.Add(5*time.Minute).Format(time.RFC3339) + " firing"}, ""},
		{"a step in the good direction does not alert", []string{"--csv", good, "--metric", "throughput_rps"}, noEnv, nil, ""},
		{"bad row", []string{"--csv", bad}, noEnv, nil, "line 3"},
		{"bad --for", []string{"--csv", good, "--for", "0s"}, noEnv, nil, "--for must be"},
		{"with --false-per-day, a step as rare as this one still alerts and shows its daily rate",
			[]string{"--csv", good, "--metric", "tpot_ms", "--false-per-day", "0.1"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing", " p="}, ""},
		{"bad --single-z", []string{"--csv", good, "--single-z", "-2"}, noEnv, nil, "--single-z must be"},
		{"bad --clear-for", []string{"--csv", good, "--clear-for", "-5m"}, noEnv, nil, "--clear-for must be"},
		{"bad --false-per-day", []string{"--csv", good, "--false-per-day", "-1"}, noEnv, nil, "--false-per-day must be"},
		{"with --max-prob, a step beyond anything in the record still alerts and shows its probability",
			[]string{"--csv", good, "--metric", "tpot_ms", "--max-prob", "0.01"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing", " prob="}, ""},
		{"bad --max-prob", []string{"--csv", good, "--max-prob", "2"}, noEnv, nil, "--max-prob must be"},
		{"bad --bursty-per-day", []string{"--csv", good, "--bursty-per-day", "-1"}, noEnv, nil, "--bursty-per-day must be"},
		{"with --bursty-per-day, a step on a series that is not bursty still alerts",
			[]string{"--csv", good, "--metric", "tpot_ms", "--bursty-per-day", "0.1"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing"}, ""},
		{"with --novelty-rank and --novelty-alone, a step the series never made still alerts",
			[]string{"--csv", good, "--metric", "tpot_ms", "--novelty-rank", "0.95", "--novelty-alone", "2"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing"}, ""},
		{"bad --novelty-rank", []string{"--csv", good, "--novelty-rank", "0.2"}, noEnv, nil, "--novelty-rank must be"},
		{"bad --novelty-alone", []string{"--csv", good, "--novelty-rank", "0.9", "--novelty-alone", "-1"}, noEnv, nil, "--novelty-alone must be"},
		{"with the public-data flags, a step the series never made still alerts",
			[]string{"--csv", good, "--metric", "tpot_ms", "--novelty-rank", "0.95", "--false-per-day", "0.2", "--novelty-alone", "2", "--novelty-sustain", "3"}, noEnv,
			[]string{stepAt.Format(time.RFC3339) + " firing"}, ""},
		{"bad --novelty-sustain", []string{"--csv", good, "--novelty-rank", "0.9", "--novelty-alone", "2", "--novelty-sustain", "NaN"}, noEnv, nil, "--novelty-sustain must be"},
		{"--novelty-sustain without --novelty-alone", []string{"--csv", good, "--novelty-rank", "0.9", "--novelty-sustain", "3"}, noEnv, nil, "--novelty-sustain needs --novelty-alone"},
		{"bad --novelty-span", []string{"--csv", good, "--novelty-rank", "0.9", "--novelty-span", "0s"}, noEnv, nil, "--novelty-span must be"},
		{"unknown metric", []string{"--csv", good, "--metric", "nope"}, noEnv, nil, "not a catalog id"},
		{"missing file", []string{"--csv", filepath.Join(dir, "none.csv")}, noEnv, nil, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := detectCmd(context.Background(), tc.args, tc.env, &out, &errOut)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantOut == nil {
				// The first day has no daily terms yet; from the
				// second day on nothing may fire, the step included.
				for _, line := range strings.Split(out.String(), "\n") {
					at, _ := time.Parse(time.RFC3339, strings.Fields(line + " x")[0])
					if strings.Contains(line, "firing") && !at.Before(start.Add(24*time.Hour)) {
						t.Errorf("want no alert after the first day, got %s", line)
					}
				}
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if !slices.Contains(tc.args, "--events") {
				for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					if line != "" && !strings.Contains(line, " firing ") {
						t.Errorf("without --events, a line that is not an alert: %s", line)
					}
				}
			}
			if !strings.Contains(errOut.String(), "sampling interval 5m0s") {
				t.Errorf("summary lacks the inferred interval: %s", errOut.String())
			}
		})
	}
}

func TestBacktestCmdFlags(t *testing.T) {
	for _, args := range [][]string{{"--weeks", "0"}, {"--weeks", "x"}, {"--consecutive", "0"}, {"--anomalies-per-day", "0"}, {"--novelty-rank", "1"}, {"--novelty-alone", "-1"}, {"--novelty-sustain", "NaN"}, {"--alert-shifts=maybe"}} {
		err := backtestCmd(context.Background(), args, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("backtest %v: err = %v, want a usage error", args, err)
		}
	}
}

func TestDetectAlertShifts(t *testing.T) {
	// Six days of a flat series with normal noise, then its level moves
	// up by 20 standard deviations for the last 8 hours. --max-prob below any probability the record
	// can give holds every run back, so the step is only absorbed as a
	// level shift; with --alert-shifts, that raises one alert from the
	// step's first point, with the shift in its message.
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	const n = 6 * 288
	stepI := n - 96
	stepAt := start.Add(time.Duration(stepI) * 5 * time.Minute)
	in := filepath.Join(t.TempDir(), "s.csv")
	rng := rand.New(rand.NewPCG(3, 1))
	writeFiveMinuteCSV(t, in, start, n, func(i int, _ time.Time) float64 {
		v := 100 + rng.NormFloat64()
		if i >= stepI {
			v += 20
		}
		return v
	})
	for _, tc := range []struct {
		extra []string
		want  int
	}{{nil, 0}, {[]string{"--alert-shifts"}, 1}} {
		var out, errOut bytes.Buffer
		args := append([]string{"--csv", in, "--metric", "tpot_ms", "--max-prob", "1e-9"}, tc.extra...)
		if err := detectCmd(context.Background(), args, func(string) string { return "" }, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(out.String(), " firing "); got != tc.want {
			t.Errorf("detect %v: %d alerts, want %d:\n%s", args, got, tc.want, out.String())
		}
		if tc.want == 1 && (!strings.Contains(out.String(), "since="+stepAt.Format(time.RFC3339)) || !strings.Contains(out.String(), "level shift since")) {
			t.Errorf("detect %v: %s; want the alert since %s, naming the level shift", args, out.String(), stepAt.Format(time.RFC3339))
		}
	}
}

func TestDetectTrace(t *testing.T) {
	// Two days of a flat noisy series, then one point far off: the trace
	// has a row per judged point, and the far point's row shows it
	// beyond the band with a large z.
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	const n = 2 * 288
	dir := t.TempDir()
	in, trace := filepath.Join(dir, "s.csv"), filepath.Join(dir, "trace.csv")
	writeFiveMinuteCSV(t, in, start, n, func(i int, _ time.Time) float64 {
		if i == n-1 {
			return 500
		}
		return 50 + 3*math.Sin(float64(i)*2.1)
	})
	var out, errOut bytes.Buffer
	if err := detectCmd(context.Background(), []string{"--csv", in, "--trace", trace}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if lines[0] != "timestamp,value,forecast,lower,upper,z,p,prob,novelty" {
		t.Fatalf("header = %q", lines[0])
	}
	// Warm-up points are not judged; most of the series is.
	if len(lines)-1 < n/2 || len(lines)-1 >= n {
		t.Fatalf("trace has %d rows for %d points, want between %d and %d", len(lines)-1, n, n/2, n-1)
	}
	last := strings.Split(lines[len(lines)-1], ",")
	if want := start.Add(time.Duration(n-1) * 5 * time.Minute).Format(time.RFC3339); last[0] != want || last[1] != "500" {
		t.Fatalf("last row = %v, want the far point at %s", last, want)
	}
	var upper, z float64
	fmt.Sscan(last[4], &upper)
	fmt.Sscan(last[5], &z)
	if upper >= 500 || z < 10 {
		t.Errorf("far point: upper %g, z %g; want it beyond the band with z >= 10", upper, z)
	}
	var prob float64
	if _, err := fmt.Sscan(last[7], &prob); err != nil || prob < 0 || prob > 1e-3 {
		t.Errorf("far point: prob %q; want a probability under 1e-3", last[7])
	}
	if !strings.Contains(out.String(), " prob=") {
		t.Errorf("alert lines carry no prob=: %q", out.String())
	}
	err = detectCmd(context.Background(), []string{"--csv", in, "--trace", filepath.Join(dir, "no", "such", "dir.csv")}, func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("unwritable trace: err = %v, want one naming --trace", err)
	}
}

func TestDetectWindows(t *testing.T) {
	// Three days of a noisy 5-minute series with two labelled hour-long
	// steps on the last day; the second window is labelled but the
	// series does nothing there, so one of two is detected.
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	stepAt := start.Add(2*24*time.Hour + 6*time.Hour)
	dir := t.TempDir()
	in, win := filepath.Join(dir, "s.csv"), filepath.Join(dir, "w.csv")
	writeFiveMinuteCSV(t, in, start, 3*288, func(i int, at time.Time) float64 {
		v := 100 + 2*math.Sin(float64(i)*1.7)
		if !at.Before(stepAt) && at.Before(stepAt.Add(time.Hour)) {
			v += 40
		}
		return v
	})
	labels := fmt.Sprintf("start,end\n%s,%s\n%s,%s\n",
		stepAt.Add(-30*time.Minute).Format(time.RFC3339), stepAt.Add(time.Hour).Format(time.RFC3339),
		stepAt.Add(6*time.Hour).Format(time.RFC3339), stepAt.Add(7*time.Hour).Format(time.RFC3339))
	if err := os.WriteFile(win, []byte(labels), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	noEnv := func(string) string { return "" }
	if err := detectCmd(context.Background(), []string{"--csv", in, "--metric", "tpot_ms", "--windows", win}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	// One deep point at 5-minute data: fired on the step, 30 minutes
	// after the window's start.
	if want := "windows detected 1/2, median delay 30m0s,"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	// The same windows in a NAB-style JSON label file, keyed by the data
	// file's path under its data folder.
	js := filepath.Join(dir, "labels.json")
	entry := fmt.Sprintf(`{"other/x.csv": [], "series/s.csv": [[%q, %q], [%q, %q]]}`,
		stepAt.Add(-30*time.Minute).Format("2006-01-02 15:04:05.000000"), stepAt.Add(time.Hour).Format("2006-01-02 15:04:05.000000"),
		stepAt.Add(6*time.Hour).Format("2006-01-02 15:04:05.000000"), stepAt.Add(7*time.Hour).Format("2006-01-02 15:04:05.000000"))
	if err := os.WriteFile(js, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "series", "s.csv")
	if err := os.MkdirAll(filepath.Dir(nested), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(in, nested); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := detectCmd(context.Background(), []string{"--csv", nested, "--metric", "tpot_ms", "--windows", js}, noEnv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if want := "windows detected 1/2, median delay 30m0s,"; !strings.Contains(out.String(), want) {
		t.Errorf("with JSON labels, output lacks %q:\n%s", want, out.String())
	}
	in = nested
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("start,end\n2026-01-05 02:00:00,2026-01-05 01:00:00\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := detectCmd(context.Background(), []string{"--csv", in, "--windows", bad}, noEnv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "line 2: end") {
		t.Errorf("reversed window: err = %v, want one naming line 2", err)
	}
	err = detectCmd(context.Background(), []string{"--csv", in, "--windows", win, "--warmup", "1"}, noEnv, &out, &errOut)
	if !errors.Is(err, errUsage) {
		t.Errorf("--warmup 1: err = %v, want a usage error", err)
	}
}

// writeFiveMinuteCSV writes n points of value at 5-minute steps from start
// as a timestamp,value CSV.
func writeFiveMinuteCSV(t *testing.T, path string, start time.Time, n int, value func(i int, at time.Time) float64) {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * 5 * time.Minute)
		fmt.Fprintf(&b, "%s,%.3f\n", at.Format(time.RFC3339), value(i, at))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDetectorScoreScript(t *testing.T) {
	// scripts/detector-score with a stand-in casebook that prints fixed
	// alert lines: 21 rows a minute apart, so the warm-up ends at row
	// int(0.15*20) = 3 (00:03); windows 00:00-00:02 (ends in the warm-up,
	// not scored), 00:05-00:07 and 00:15-00:16. Alerts at 00:01 (warm-up),
	// 00:06 (true), 00:07 (true, same window), 00:10 (false): precision
	// 2/3, window recall 1/2, 3 events over 17 minutes of scored data.
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	var rows strings.Builder
	rows.WriteString("timestamp,value\n")
	for i := range 21 {
		fmt.Fprintf(&rows, "2026-01-05 00:%02d:00,%d\n", i, i)
	}
	files := map[string]string{
		"data/sub/s.csv": rows.String(),
		"labels/combined_windows.json": `{"sub/s.csv": [["2026-01-05 00:00:00.000000", "2026-01-05 00:02:00.000000"],
			["2026-01-05 00:05:00.000000", "2026-01-05 00:07:00.000000"],
			["2026-01-05 00:15:00.000000", "2026-01-05 00:16:00.000000"]]}`,
		"casebook": "#!/bin/sh\n" +
			"echo '2026-01-05T00:01:00Z firing   value=1 forecast=0 band=0..0 since=2026-01-05T00:01:00Z'\n" +
			"echo '2026-01-05T00:06:00Z firing   value=1 forecast=0 band=0..0 since=2026-01-05T00:06:00Z'\n" +
			"echo '2026-01-05T00:06:30Z resolved value=1 forecast=0 band=0..0 since=2026-01-05T00:06:00Z'\n" +
			"echo '2026-01-05T00:07:00Z firing   value=1 forecast=0 band=0..0 since=2026-01-05T00:07:00Z'\n" +
			"echo '2026-01-05T00:10:00Z firing   value=1 forecast=0 band=0..0 since=2026-01-05T00:10:00Z p=0.01'\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(python, "../../scripts/detector-score", "--casebook", filepath.Join(dir, "casebook"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("detector-score: %v\n%s", err, out)
	}
	want := []string{"scored windows 2, events 3, true 2", "precision 0.67  window recall 0.50  events per series-day 254.12"}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("detector-score output lacks %q:\n%s", w, out)
		}
	}
}
