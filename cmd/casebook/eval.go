package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// evalCmd diagnoses every case of a labelled corpus and prints top-1 and
// top-3 accuracy, per-cause precision and recall, the confusion matrix and
// the calibration table.
func evalCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	corpus := fs.String("corpus", "", "labelled corpus, JSON Lines of metrics.Case (required)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noHistory := fs.Bool("no-history", false, "drop every case's history before diagnosing, to measure the engine without baselines")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: casebook eval --corpus FILE.jsonl [--no-history] [--json]\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if *corpus == "" {
		return fmt.Errorf("%w: eval needs --corpus FILE.jsonl", errUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: eval takes no arguments, got %q", errUsage, fs.Args())
	}
	f, err := os.Open(*corpus)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	e := diagnose.New(diagnose.Options{})
	var ev diagnose.Evaluation
	skipped := 0
	err = forEachRecord(ctx, f, func(rec record) error {
		if rec.err != nil {
			skipped++
			fmt.Fprintf(stderr, "eval: %s line %d: %v\n", *corpus, rec.line, rec.err)
			return nil
		}
		c, err := metrics.DecodeCase(rec.data)
		if err != nil {
			skipped++
			fmt.Fprintf(stderr, "eval: %s line %d: %v\n", *corpus, rec.line, err)
			return nil
		}
		if *noHistory {
			c.History = nil
		}
		ev.AddCase(c, e.Diagnose(c.Snapshot))
		return nil
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	rep := ev.Report()
	if rep.Cases == 0 {
		return fmt.Errorf("eval: %s holds no valid cases (%d lines skipped)", *corpus, skipped)
	}
	if *asJSON {
		out := struct {
			diagnose.EvalReport
			Skipped       int    `json:"skipped"`
			EngineVersion string `json:"engine_version"`
		}{rep, skipped, diagnose.EngineVersion()}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("eval: write report: %w", err)
		}
		return nil
	}
	if err := writeEvalText(stdout, rep, skipped); err != nil {
		return fmt.Errorf("eval: write report: %w", err)
	}
	return nil
}

// writeEvalText renders the report as plain-text tables.
func writeEvalText(w io.Writer, r diagnose.EvalReport, skipped int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "engine %s: %d cases", diagnose.EngineVersion(), r.Cases)
	if skipped > 0 {
		fmt.Fprintf(bw, " (%d invalid lines skipped)", skipped)
	}
	fmt.Fprintf(bw, "\ntop-1 accuracy  %.1f%%\ntop-3 accuracy  %.1f%%\n", 100*r.Top1, 100*r.Top3)
	if r.MultiFault > 0 {
		fmt.Fprintf(bw, "top-1 accuracy counting secondary labels of the %d multi-fault cases  %.1f%%\n", r.MultiFault, 100*r.Top1AnyLabel)
	}
	fmt.Fprintln(bw)

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cause\tsupport\tpredicted\tcorrect\tprecision\trecall\t")
	for _, c := range r.Causes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.2f\t\n", c.Cause, c.Support, c.Predicted, c.Correct, c.Precision, c.Recall)
	}
	tw.Flush()

	fmt.Fprintln(bw, "\nconfusion (rows: label, columns: diagnosis)")
	tw = tabwriter.NewWriter(bw, 0, 0, 1, ' ', tabwriter.AlignRight)
	header := []string{"label\\diagnosis"}
	for i := range r.Labels {
		header = append(header, fmt.Sprintf("%d", i+1))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for i, l := range r.Labels {
		cells := []string{fmt.Sprintf("%d %s", i+1, l)}
		for _, n := range r.Confusion[i] {
			if n == 0 {
				cells = append(cells, ".")
			} else {
				cells = append(cells, fmt.Sprintf("%d", n))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()

	fmt.Fprintln(bw, "\ncalibration (cases diagnosed at confidence c should be right about c of the time)")
	tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "confidence\tcount\tmean conf\taccuracy\t")
	for _, b := range r.Bins {
		if b.Count == 0 {
			continue
		}
		fmt.Fprintf(tw, "%.1f-%.1f\t%d\t%.3f\t%.3f\t\n", b.Lo, b.Hi, b.Count, b.MeanConfidence, b.Accuracy)
	}
	tw.Flush()
	fmt.Fprintf(bw, "expected calibration error  %.3f\n", r.ECE)
	return bw.Flush()
}
