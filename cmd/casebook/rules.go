package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/promrules"
)

// rulesCmd prints Prometheus rule files generated from the catalog: the
// recording rules of the 1m and 1h tiers (also the forecaster's inputs) or,
// with --alerts, the fixed-threshold alerting rules.
func rulesCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	alerts := fs.Bool("alerts", false, "print fixed-threshold alerting rules instead of recording rules")
	instanceLabel := fs.String("instance-label", "pod", "label that names an engine instance")
	modelLabel := fs.String("model-label", "model_name", "label that names the model on engines whose series carry no model_name (llama-server); the rules copy it into model_name")
	window := fs.Duration("window", 2*time.Minute, "rate window of the rules (at least 4 scrape intervals)")
	forDur := fs.Duration("for", 2*time.Minute, "how long an alert condition must hold before it fires")
	var thresholds listFlag
	fs.Var(&thresholds, "threshold", "override an alert threshold: metric_id=value (repeatable)")
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: rules takes no arguments, got %q", errUsage, fs.Args())
	}
	opts := promrules.Options{InstanceLabel: *instanceLabel, ModelLabel: *modelLabel, Window: *window, For: *forDur, Thresholds: map[string]float64{}}
	for _, th := range thresholds {
		id, val, ok := strings.Cut(th, "=")
		v, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil {
			return fmt.Errorf("%w: --threshold %q: want metric_id=number", errUsage, th)
		}
		opts.Thresholds[id] = v
	}
	var file promrules.File
	if *alerts {
		f, err := promrules.Alerts(opts)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		file = f
	} else {
		file = promrules.Recording(opts)
	}
	out, err := file.YAML()
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}
