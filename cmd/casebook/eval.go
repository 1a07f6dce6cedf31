package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
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
	feedback := fs.Bool("feedback", false, "replay the corpus in order, diagnosing each case with a knowledge base of all earlier cases, then feeding back its label; compares rules alone with rules plus similar-case matching")
	noise := fs.Float64("noise", 0, "with --feedback: share of fed-back labels made wrong (0-1); the clean replay is printed beside it")
	block := fs.Int("block", 100, "with --feedback: cases per block of the learning curve")
	seed := fs.Int64("seed", 1, "with --feedback --noise: seed of the label noise")
	features := fs.String("features", "", "also write one CSV row per case to this file: the label, the cause the rules named and every cause's rule score, the signature's features and every metric's z, to measure what the corpus can teach with any learner (not with --feedback)")
	langFlag := fs.String("lang", "en", "language of the plain-text report's words: en or zh-CN (cause ids and --json stay as they are)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: casebook eval --corpus FILE.jsonl [--no-history] [--features FILE.csv | --feedback [--noise 0.1] [--block 100]] [--json] [--lang en|zh-CN]\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if *corpus == "" {
		return fmt.Errorf("%w: eval needs --corpus FILE.jsonl", errUsage)
	}
	tag, ok := i18n.Parse(*langFlag)
	if !ok {
		return fmt.Errorf("%w: --lang %q: the report is in en or zh-CN", errUsage, *langFlag)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: eval takes no arguments, got %q", errUsage, fs.Args())
	}
	f, err := os.Open(*corpus)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	if *noise < 0 || *noise > 1 {
		return fmt.Errorf("%w: --noise %v is not in 0-1", errUsage, *noise)
	}
	if !*feedback && (*noise != 0) {
		return fmt.Errorf("%w: --noise needs --feedback", errUsage)
	}
	if *feedback && *features != "" {
		return fmt.Errorf("%w: --features writes the rules' view of each case; it does not go with --feedback", errUsage)
	}
	var fw *featureWriter
	if *features != "" {
		out, err := os.Create(*features)
		if err != nil {
			return fmt.Errorf("eval: --features: %w", err)
		}
		defer out.Close()
		if fw, err = newFeatureWriter(out); err != nil {
			return fmt.Errorf("eval: --features %s: %w", *features, err)
		}
	}
	e := diagnose.New(diagnose.Options{})
	var ev diagnose.Evaluation
	engines := newEngineEvals()
	var all []metrics.Case
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
		if *feedback {
			all = append(all, c)
			return nil
		}
		d := e.Diagnose(c.Snapshot)
		ev.AddCase(c, d)
		engines.add(c, d)
		if fw != nil {
			return fw.add(c, d)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if fw != nil {
		if err := fw.close(); err != nil {
			return fmt.Errorf("eval: --features %s: %w", *features, err)
		}
	}
	if *feedback {
		return evalFeedback(stdout, all, skipped, *corpus, *noise, *block, *seed, *asJSON)
	}
	rep := ev.Report()
	if rep.Cases == 0 {
		return fmt.Errorf("eval: %s holds no valid cases (%d lines skipped)", *corpus, skipped)
	}
	if *asJSON {
		out := struct {
			diagnose.EvalReport
			Skipped       int          `json:"skipped"`
			EngineVersion string       `json:"engine_version"`
			Engines       []engineEval `json:"engines,omitempty"`
		}{rep, skipped, diagnose.EngineVersion(), engines.report()}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("eval: write report: %w", err)
		}
		return nil
	}
	if err := writeEvalText(stdout, i18n.New(tag), rep, skipped); err != nil {
		return fmt.Errorf("eval: write report: %w", err)
	}
	if err := writeEngineText(stdout, engines.report()); err != nil {
		return fmt.Errorf("eval: write report: %w", err)
	}
	return nil
}

// writeEvalText renders the report as plain-text tables, its words in l's
// language (numbers and cause ids as they are).
func writeEvalText(w io.Writer, l *i18n.Locale, r diagnose.EvalReport, skipped int) error {
	bw := bufio.NewWriter(w)
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	fmt.Fprint(bw, l.T("cli.eval_head", diagnose.EngineVersion(), strconv.Itoa(r.Cases)))
	if skipped > 0 {
		fmt.Fprint(bw, l.T("cli.eval_skipped", strconv.Itoa(skipped)))
	}
	fmt.Fprintf(bw, "\n%s\n%s\n", l.T("cli.eval_top1", pct(r.Top1)), l.T("cli.eval_top3", pct(r.Top3)))
	if r.MultiFault > 0 {
		fmt.Fprintln(bw, l.T("cli.eval_multi", strconv.Itoa(r.MultiFault), pct(r.Top1AnyLabel)))
	}
	if r.VisibleCases > 0 && r.VisibleCases < r.Cases {
		fmt.Fprintln(bw, l.T("cli.eval_visible", strconv.Itoa(r.VisibleCases), pct(r.Top1Visible), strconv.Itoa(r.HiddenFaults), strconv.Itoa(r.FaultCases)))
	}
	fmt.Fprintln(bw)

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, l.T("cli.eval_cause_cols"))
	for _, c := range r.Causes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.2f\t\n", c.Cause, c.Support, c.Predicted, c.Correct, c.Precision, c.Recall)
	}
	tw.Flush()

	fmt.Fprintln(bw, "\n"+l.T("cli.eval_confusion"))
	tw = tabwriter.NewWriter(bw, 0, 0, 1, ' ', tabwriter.AlignRight)
	header := []string{l.T("cli.eval_confusion_corner")}
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

	fmt.Fprintln(bw, "\n"+l.T("cli.eval_calibration"))
	tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, l.T("cli.eval_calibration_cols"))
	for _, b := range r.Bins {
		if b.Count == 0 {
			continue
		}
		fmt.Fprintf(tw, "%.1f-%.1f\t%d\t%.3f\t%.3f\t\n", b.Lo, b.Hi, b.Count, b.MeanConfidence, b.Accuracy)
	}
	tw.Flush()
	fmt.Fprintln(bw, l.T("cli.eval_ece", fmt.Sprintf("%.3f", r.ECE)))
	return bw.Flush()
}

// evalFeedback runs the feedback replay, clean and (with noise) noisy, and
// prints the comparison and the learning curve.
func evalFeedback(stdout io.Writer, cases []metrics.Case, skipped int, corpus string, noise float64, block int, seed int64, asJSON bool) error {
	if len(cases) == 0 {
		return fmt.Errorf("eval: %s holds no valid cases (%d lines skipped)", corpus, skipped)
	}
	clean, err := diagnose.EvaluateFeedback(cases, diagnose.FeedbackOptions{Block: block})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var noisy *diagnose.FeedbackReport
	if noise > 0 {
		r, err := diagnose.EvaluateFeedback(cases, diagnose.FeedbackOptions{Block: block, Noise: noise, Seed: seed})
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		noisy = &r
	}
	if asJSON {
		out := struct {
			Clean         diagnose.FeedbackReport  `json:"clean"`
			Noisy         *diagnose.FeedbackReport `json:"noisy,omitempty"`
			Skipped       int                      `json:"skipped"`
			EngineVersion string                   `json:"engine_version"`
		}{clean, noisy, skipped, diagnose.EngineVersion()}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("eval: write report: %w", err)
		}
		return nil
	}
	bw := bufio.NewWriter(stdout)
	fmt.Fprintf(bw, "engine %s: feedback replay of %d cases", diagnose.EngineVersion(), clean.Cases)
	if skipped > 0 {
		fmt.Fprintf(bw, " (%d invalid lines skipped)", skipped)
	}
	fmt.Fprintf(bw, "\neach case diagnosed with a knowledge base of every earlier case, then its label fed back\n\n")
	fmt.Fprintf(bw, "top-1 accuracy, rules alone          %.1f%%\n", 100*clean.Rules)
	fmt.Fprintf(bw, "top-1 accuracy, rules + matching     %.1f%%\n", 100*clean.Match)
	fmt.Fprintf(bw, "top-1 accuracy, plain 5-NN baseline  %.1f%%\n", 100*clean.KNN)
	fmt.Fprintf(bw, "after %d labelled cases: rules %.1f%%, rules + matching %.1f%% (%.1f%% counting secondary labels), plain 5-NN %.1f%% (matching %+.1f points)\n",
		clean.After, 100*clean.AfterRules, 100*clean.AfterMatch, 100*clean.AfterMatchAnyLabel, 100*clean.AfterKNN, 100*(clean.AfterMatch-clean.AfterKNN))
	fmt.Fprintf(bw, "expected calibration error: rules alone %.3f, rules + matching %.3f\n", clean.RulesReport.ECE, clean.MatchReport.ECE)
	if mr := clean.MatchReport; mr.MultiFault > 0 {
		fmt.Fprintf(bw, "rules + matching, counting secondary labels of the %d multi-fault cases  %.1f%%\n", mr.MultiFault, 100*mr.Top1AnyLabel)
	}
	fmt.Fprintf(bw, "largest block where rules alone lead matching: %.1f points\n", clean.WorstDeficit)
	fmt.Fprintf(bw, "matching changed the rules' answer %d times, %d of them rightly\n", clean.Overturned, clean.OverturnedRight)
	if noisy != nil {
		fmt.Fprintf(bw, "\nwith %.0f%% wrong labels fed back (%d flipped, seed %d):\n", 100*noise, noisy.Flipped, seed)
		fmt.Fprintf(bw, "top-1 accuracy, rules + matching     %.1f%% (%+.1f points against clean labels)\n", 100*noisy.Match, 100*(noisy.Match-clean.Match))
		fmt.Fprintf(bw, "after %d labelled cases              %.1f%% (%+.1f points)\n", noisy.After, 100*noisy.AfterMatch, 100*(noisy.AfterMatch-clean.AfterMatch))
		fmt.Fprintf(bw, "largest block where rules alone lead matching: %.1f points\n", noisy.WorstDeficit)
	}
	fmt.Fprintln(bw, "\nlearning curve (top-1 per block; the knowledge base holds every case before the block's first)")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "cases\tknowledge base\trules\trules+matching\tplain 5-NN\t"
	if noisy != nil {
		header += "noisy labels\t"
	}
	fmt.Fprintln(tw, header)
	for i, b := range clean.Blocks {
		fmt.Fprintf(tw, "%d-%d\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t", b.From+1, b.To, b.From, 100*b.Rules, 100*b.Match, 100*b.KNN)
		if noisy != nil {
			fmt.Fprintf(tw, "%.1f%%\t", 100*noisy.Blocks[i].Match)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(bw, "\nwith matching, per cause:")
	tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cause\tsupport\tpredicted\tcorrect\tprecision\trecall\t")
	for _, c := range clean.MatchReport.Causes {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.2f\t%.2f\t\n", c.Cause, c.Support, c.Predicted, c.Correct, c.Precision, c.Recall)
	}
	tw.Flush()
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("eval: write report: %w", err)
	}
	return nil
}
