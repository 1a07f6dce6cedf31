package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/casebook/casebook/diagnose/forecast"
)

// backtestCmd compares the dynamic-threshold detector with fixed
// thresholds tuned to the same recall on simulated weeks of catalog
// metrics with labelled anomaly windows, and prints a table.
func backtestCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backtest", flag.ContinueOnError)
	weeks := fs.Int("weeks", 2, "simulated weeks to evaluate (after two weeks of warm-up history)")
	seed := fs.Int64("seed", 1, "random seed of the simulation")
	consecutive := fs.Int("consecutive", 3, "points in a row beyond the band or threshold to alert")
	perMetric := fs.Bool("per-metric", false, "print one row per metric as well as the totals")
	rate := fs.Float64("anomalies-per-day", 1, "mean rate of injected anomaly windows per metric and day")
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if *weeks < 1 || *weeks > 52 {
		return fmt.Errorf("%w: --weeks must be 1..52, got %d", errUsage, *weeks)
	}
	if *consecutive < 1 || *consecutive > 60 {
		return fmt.Errorf("%w: --consecutive must be 1..60, got %d", errUsage, *consecutive)
	}
	if !(*rate > 0 && *rate <= 24) {
		return fmt.Errorf("%w: --anomalies-per-day must be in (0, 24], got %v", errUsage, *rate)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	began := time.Now()
	res := forecast.Backtest(forecast.BacktestOptions{
		Sim:      forecast.SimOptions{Weeks: *weeks, Seed: *seed, AnomaliesPerDay: *rate},
		Detector: forecast.DetectorOptions{Consecutive: *consecutive},
	})
	fmt.Fprintf(stdout, "backtest: %d catalog metrics, %d evaluated week(s) of 1-minute data after 14 days of history, %.2g anomalies per metric and day, seed %d, K=%d (%.1fs)\n",
		len(res.Rows), *weeks, *rate, *seed, *consecutive, time.Since(began).Seconds())
	fmt.Fprintln(stdout, "fixed thresholds: per metric, the least sensitive threshold that detects as many windows as the dynamic detector (oracle-tuned with the labels)")
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "detector\talerts/day\tprecision\trecall\tmedian delay\twindows\t")
	if *perMetric {
		for _, r := range res.Rows {
			fmt.Fprintf(tw, "%s dynamic\t%s\n", r.Metric, row(r.Dynamic))
			fmt.Fprintf(tw, "%s fixed\t%s\n", r.Metric, row(r.Fixed))
		}
	}
	fmt.Fprintf(tw, "fixed (same recall)\t%s\n", row(res.Fixed))
	fmt.Fprintf(tw, "dynamic (seasonal)\t%s\n", row(res.Dynamic))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("backtest: write: %w", err)
	}
	if f := res.Fixed.PerDay(); f > 0 {
		fmt.Fprintf(stdout, "alerts per day cut by %.1f%% (%.1f -> %.1f)\n",
			100*(1-res.Dynamic.PerDay()/f), f, res.Dynamic.PerDay())
	}
	return nil
}

func row(s forecast.Score) string {
	return fmt.Sprintf("%.1f\t%s\t%s\t%s\t%d\t", s.PerDay(), pct(s.Precision()), pct(s.Recall()), s.MedianDelay(), s.Windows)
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
