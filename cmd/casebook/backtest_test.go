package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestBacktestClusterFlags(t *testing.T) {
	for _, args := range [][]string{{"--cluster", "--faults-per-day", "0"}, {"--cluster", "--faults-per-day", "13"}, {"--cluster", "--weeks", "0"}} {
		err := backtestCmd(context.Background(), args, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("backtest %v: err = %v, want a usage error", args, err)
		}
	}
}

func TestBacktestClusterTable(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates three weeks of the cluster and replays 60 series")
	}
	var out bytes.Buffer
	err := backtestCmd(context.Background(), []string{"--cluster", "--weeks", "1", "--seed", "2", "--faults-per-day", "2"},
		func(string) string { return "" }, &out, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 model scopes", "llama-3.1-8b-instruct dynamic", "qwen2.5-32b-instruct fixed",
		"fixed (same recall)", "dynamic (seasonal)", "incidents/day", "incident alerts per day cut by"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
