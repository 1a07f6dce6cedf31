package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/casebook/casebook/diagnose/forecast"
)

func TestBacktestClusterFlags(t *testing.T) {
	for _, args := range [][]string{{"--cluster", "--faults-per-day", "0"}, {"--cluster", "--faults-per-day", "13"}, {"--cluster", "--weeks", "0"}, {"--cluster", "--corroborate", "-1m"}} {
		err := backtestCmd(context.Background(), args, func(string) string { return "" }, &bytes.Buffer{}, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("backtest %v: err = %v, want a usage error", args, err)
		}
	}
}

func TestWriteIncidentTable(t *testing.T) {
	res := forecast.IncidentResult{
		Rows: []forecast.IncidentRow{
			{Scope: "model-a", Dynamic: forecast.Score{Alerts: 14, TruePos: 7, Windows: 10, Detected: 9, Days: 7},
				Fixed: forecast.Score{Alerts: 56, TruePos: 7, Windows: 10, Detected: 9, Days: 7}, DynamicCover: 0.02, FixedCover: 0.1},
		},
		Dynamic:  forecast.Score{Alerts: 14, TruePos: 7, Windows: 10, Detected: 9, Days: 7},
		Fixed:    forecast.Score{Alerts: 56, TruePos: 7, Windows: 10, Detected: 9, Days: 7},
		Quantile: 0.99,
	}
	var out bytes.Buffer
	if err := writeIncidentTable(&out, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at the 0.99 quantile", "model-a fixed", "model-a dynamic", "incidents/day",
		"fixed (same recall)", "dynamic (seasonal)", "50.0%", "12.5%", "90.0%", "10.0%",
		"incident alerts per day cut by 75.0% (8.0 -> 2.0)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
