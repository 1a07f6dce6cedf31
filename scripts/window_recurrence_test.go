package scripts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWindowRecurrence(t *testing.T) {
	// 20 days of an hourly series at 10 with a spike to 110 on each of
	// days 4-19, at hour 5*day mod 24 (so no hour of day spikes twice in
	// a week), each spike labelled as a one-hour window, and one
	// unlabelled spike at day 12, 00:00. Every spike is 100 from both
	// baselines, so each window's peak is matched by every earlier spike.
	// All points: day 4 has no earlier spike (0/day), day 5 one in 5.04
	// days (0.198), days 6-10 2/6.25, 3/7 ... 6/7, days 11-18 seven or
	// eight in 7 (>= 1), day 19 six in 7 (0.857). Unlabelled: the one
	// spike, within the week before days 12-18 (1/7 = 0.143), else 0.
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	var rows, windows []string
	rows = append(rows, "timestamp,value")
	for i := range 20 * 24 {
		at := t0.Add(time.Duration(i) * time.Hour)
		day, hour := i/24, i%24
		v := 10
		switch {
		case day >= 4 && hour == 5*day%24:
			v = 110
			windows = append(windows, fmt.Sprintf(`["%s", "%s"]`, at.Format("2006-01-02 15:04:05.000000"), at.Add(time.Hour).Format("2006-01-02 15:04:05.000000")))
		case day == 12 && hour == 0:
			v = 110
		}
		rows = append(rows, fmt.Sprintf("%s,%d", at.Format("2006-01-02 15:04:05"), v))
	}
	files := map[string]string{
		"data/sub/s.csv":               strings.Join(rows, "\n") + "\n",
		"labels/combined_windows.json": `{"sub/s.csv": [` + strings.Join(windows, ", ") + `]}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(python, "window-recurrence", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("window-recurrence: %v\n%s", err, out)
	}
	for _, w := range []string{
		"scored windows 16",
		"all points: 16 windows, < 0.1/day 1, < 0.2/day 2, < 0.5/day 4, < 1/day 8, >= 1/day 8",
		"unlabelled: 16 windows, < 0.1/day 9, < 0.2/day 16, < 0.5/day 16, < 1/day 16, >= 1/day 0",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("window-recurrence output lacks %q:\n%s", w, out)
		}
	}

	series := filepath.Join(dir, "data", "sub", "s.csv")
	if err := os.WriteFile(series, []byte(files["data/sub/s.csv"]+"2026-01-25 00:00:00,oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(python, "window-recurrence", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "s.csv:482: value 'oops' is not a number") {
		t.Errorf("a value that is not a number: err %v, output %q; want a failure naming the file and line", err, out)
	}

	bad := filepath.Join(dir, "labels", "combined_windows.json")
	if err := os.WriteFile(bad, []byte(`{"other.csv": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(python, "window-recurrence", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "sub/s.csv: no entry in") {
		t.Errorf("a file without labels: err %v, output %q; want a failure naming the file", err, out)
	}
}
