//go:build integration

package main

import (
	"bytes"
	"context"
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
	for _, want := range []string{"2 model scopes, 60 series", "llama-3.1-8b-instruct dynamic", "qwen2.5-32b-instruct fixed",
		"fixed (same recall)", "dynamic (seasonal)", "incident alerts per day cut by"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
