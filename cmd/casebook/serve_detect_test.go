package main

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

func TestParseServeDetectorFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		args     []string
		ok       bool
		detect   string
		interval time.Duration
		consec   int
	}{
		{nil, true, "auto", time.Minute, 3},
		{[]string{"--detect=off"}, true, "off", time.Minute, 3},
		{[]string{"--detect-interval=30s", "--detect-consecutive=5"}, true, "auto", 30 * time.Second, 5},
		{[]string{"--alertmanager-url=http://127.0.0.1:9093"}, true, "auto", time.Minute, 3},
		{[]string{"--detect=maybe"}, false, "", 0, 0},
		{[]string{"--detect-interval=10ms"}, false, "", 0, 0},
		{[]string{"--detect-consecutive=0"}, false, "", 0, 0},
		{[]string{"--alertmanager-url=alertmanager:9093"}, false, "", 0, 0},
		{[]string{"--detect-novelty-rank=0.95"}, true, "auto", time.Minute, 3},
		{[]string{"--detect-novelty-rank=1"}, false, "", 0, 0},
		{[]string{"--detect-novelty-rank=0.1"}, false, "", 0, 0},
		{[]string{"--detect-novelty-rank=0.95", "--detect-false-per-day=0.2", "--detect-novelty-alone=2", "--detect-novelty-sustain=3"}, true, "auto", time.Minute, 3},
		{[]string{"--detect-alert-shifts"}, true, "auto", time.Minute, 3},
		{[]string{"--detect-alert-shifts=maybe"}, false, "", 0, 0},
		{[]string{"--detect-false-per-day=-1"}, false, "", 0, 0},
		{[]string{"--detect-novelty-alone=2"}, false, "", 0, 0},
		{[]string{"--detect-novelty-rank=0.95", "--detect-novelty-sustain=3"}, false, "", 0, 0},
		{[]string{"--detect-novelty-rank=0.95", "--detect-novelty-alone=NaN"}, false, "", 0, 0},
	}
	for _, tc := range tests {
		c, err := parseServe(tc.args, noEnv, io.Discard)
		if !tc.ok {
			if !errors.Is(err, errUsage) {
				t.Errorf("parseServe(%q) error %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseServe(%q): %v", tc.args, err)
			continue
		}
		wantNovelty := 0.0
		if slices.Contains(tc.args, "--detect-novelty-rank=0.95") {
			wantNovelty = 0.95
		}
		if c.DetectNovelty != wantNovelty {
			t.Errorf("parseServe(%q) novelty rank %g, want %g", tc.args, c.DetectNovelty, wantNovelty)
		}
		if slices.Contains(tc.args, "--detect-novelty-sustain=3") &&
			(c.DetectFalsePerDay != 0.2 || c.DetectNovelAlone != 2 || c.DetectNovelSpans != 3) {
			t.Errorf("parseServe(%q) = false per day %g, novelty alone %g, sustain %g; want 0.2, 2, 3",
				tc.args, c.DetectFalsePerDay, c.DetectNovelAlone, c.DetectNovelSpans)
		}
		if want := slices.Contains(tc.args, "--detect-alert-shifts"); c.DetectShifts != want {
			t.Errorf("parseServe(%q) alert shifts %v, want %v", tc.args, c.DetectShifts, want)
		}
		if c.Detect != tc.detect || c.DetectInterval != tc.interval || c.DetectConsecutive != tc.consec {
			t.Errorf("parseServe(%q) = detect %q interval %s consecutive %d, want %q %s %d",
				tc.args, c.Detect, c.DetectInterval, c.DetectConsecutive, tc.detect, tc.interval, tc.consec)
		}
	}
}
