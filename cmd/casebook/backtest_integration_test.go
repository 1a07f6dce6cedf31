//go:build integration

package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBacktestCluster runs the incident-level backtest end to end: three
// weeks of the simulated cluster and 60 series through the detector.
func TestBacktestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates three weeks of the cluster and replays 60 series")
	}
	var out bytes.Buffer
	err := backtestCmd(context.Background(), []string{"--cluster", "--weeks", "1", "--seed", "2", "--faults-per-day", "2"},
		func(string) string { return "" }, &out, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// Every catalog metric the simulator exposes, per model scope.
	if m := regexp.MustCompile(`2 model scopes, (\d+) series`).FindStringSubmatch(out.String()); m == nil {
		t.Errorf("output lacks the scope and series count:\n%s", out.String())
	} else if n, _ := strconv.Atoi(m[1]); n < 2*30 || n%2 != 0 {
		t.Errorf("%d series for 2 model scopes, want the same 30 or more metrics on each", n)
	}
	for _, want := range []string{"llama-3.1-8b-instruct dynamic", "qwen2.5-32b-instruct fixed",
		"fixed (same recall)", "dynamic (seasonal)", "incident alerts per day cut by"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
