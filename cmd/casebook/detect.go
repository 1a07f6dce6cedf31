package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/diagnose/forecast"
	"github.com/casebook/casebook/metrics"
)

// detectCmd replays a timestamp,value CSV through the dynamic-threshold
// detector, with only past data available at each step, and prints one
// line per alert (with --events, also when an alert ends or a level shift
// is absorbed).
func detectCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("detect", flag.ContinueOnError)
	file := fs.String("csv", "", "CSV of timestamp,value with a header (default stdin)")
	metric := fs.String("metric", "", "catalog id of the series, for its bad direction and unit (default: either direction, no unit)")
	consecutive := fs.Int("consecutive", 0, "points in a row beyond the band to raise an alert (default: as many as cover --for)")
	forDur := fs.Duration("for", 3*time.Minute, "how long a run beyond the band must last to raise an alert, in points at the series' sampling interval and never fewer than two, unless one point spans it and is --single-z out; --consecutive overrides it")
	singleZ := fs.Float64("single-z", 0, "with --for, when one sample spans --for (5-minute or hourly data), it alerts alone this many standard errors out (default 5.85: as improbable as three points at the band's edge; -1: never alone)")
	clearFor := fs.Duration("clear-for", 5*time.Minute, "with --for, an alert ends once the series has been back inside the band this long, at least one point at its sampling interval")
	maxBytes := fs.Int64("max-bytes", forecast.MaxCSVBytes, "largest accepted input in bytes")
	trace := fs.String("trace", "", "also write every judged point to this CSV file (timestamp,value,forecast,lower,upper,z,p,prob,novelty; p, the daily rate of runs as deep in the record, with --false-per-day; prob, the probability of a run as deep under the series' own record of errors, on runs long enough to alert; novelty, with --novelty-rank, the stretch's distance from its nearest earlier one over the record's quantile), to see why a point did or did not alert")
	windowsFile := fs.String("windows", "", "labelled anomaly windows, a CSV of start,end with a header or a NAB-style JSON label file (its entry for the --csv file): also print how many the alerts detected, the median delay and the alerts outside every window")
	warmup := fs.Float64("warmup", 0.15, "with --windows: share of the rows at the start, the detector's warm-up, whose alerts are not scored (0-0.9)")
	falsePerDay := fs.Float64("false-per-day", 0, "false-alert budget per series and day: a run alerts only when the series made runs as deep at most this often a day in its own record (episodes counted once, a Pareto tail beyond the deepest); the alert line and the trace show the rate as p (default 0: off)")
	burstyPerDay := fs.Float64("bursty-per-day", 0, "false-alert budget per day for series whose history is intermittent (a quarter of the samples at the minimum) or heavy-tailed, as --false-per-day but for those series only (default 0: off)")
	maxProb := fs.Float64("max-prob", 0, "a run alerts only when its probability under the series' own record of forecast errors (prob= on the alert line) is at most this (default 0: off)")
	noveltyRank := fs.Float64("novelty-rank", 0, "shape test: a run alerts only when some stretch of --novelty-span ending in it is farther from its nearest earlier stretch than this share of the series' past stretches were from theirs, 0.5-0.999 (default 0: off)")
	noveltyAlone := fs.Float64("novelty-alone", 0, "with --novelty-rank: also alert, in band or out, when a stretch is this many times farther from its nearest earlier stretch than that quantile (default 0: off)")
	noveltySpan := fs.Duration("novelty-span", 30*time.Minute, "with --novelty-rank: the stretch of time whose shape is compared, never fewer than two points")
	alertShifts := fs.Bool("alert-shifts", false, "also alert when a lasting level shift in a bad direction that no alert covered is absorbed (after 4 hours beyond the band): the budget, routine and shape tests judge bursts, a new level is news whatever the bursts did")
	noveltySustain := fs.Float64("novelty-sustain", 0, "with --novelty-alone: how many spans (--novelty-span) of a novel episode's stretches must be beyond --novelty-alone, in all, before it alerts; a lone odd point makes one span of them, a changed pattern keeps making them (default 0: at the first)")
	events := fs.Bool("events", false, "also print when an alert ends and when a level shift is absorbed")
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if *consecutive < 0 || *consecutive > 1000 {
		return fmt.Errorf("%w: --consecutive must be 1..1000, got %d", errUsage, *consecutive)
	}
	if *forDur <= 0 || *forDur > 24*time.Hour {
		return fmt.Errorf("%w: --for must be more than 0 and at most 24h, got %s", errUsage, *forDur)
	}
	if *clearFor <= 0 || *clearFor > 24*time.Hour {
		return fmt.Errorf("%w: --clear-for must be more than 0 and at most 24h, got %s", errUsage, *clearFor)
	}
	if *singleZ != -1 && (*singleZ < 0 || *singleZ > 1000) {
		return fmt.Errorf("%w: --single-z must be -1 (off) or 0..1000 (0: the default), got %g", errUsage, *singleZ)
	}
	if *warmup < 0 || *warmup > 0.9 {
		return fmt.Errorf("%w: --warmup must be 0..0.9, got %g", errUsage, *warmup)
	}
	var windows []forecast.Window
	if *windowsFile != "" {
		var err error
		if windows, err = readWindowsFile(*windowsFile, *file); err != nil {
			return err
		}
	}
	if *falsePerDay < 0 || *falsePerDay > 1e6 {
		return fmt.Errorf("%w: --false-per-day must be 0 (off) to 1e6, got %g", errUsage, *falsePerDay)
	}
	if *maxProb < 0 || *maxProb > 1 {
		return fmt.Errorf("%w: --max-prob must be 0 (off) to 1, got %g", errUsage, *maxProb)
	}
	if *burstyPerDay < 0 || *burstyPerDay > 1e6 {
		return fmt.Errorf("%w: --bursty-per-day must be 0 (off) to 1e6, got %g", errUsage, *burstyPerDay)
	}
	if err := checkNoveltyFlags("--", *noveltyRank, *noveltyAlone, *noveltySustain); err != nil {
		return err
	}
	if *noveltySpan <= 0 || *noveltySpan > 7*24*time.Hour {
		return fmt.Errorf("%w: --novelty-span must be more than 0 and at most 168h, got %s", errUsage, *noveltySpan)
	}
	if *noveltySustain > 0 && *noveltyAlone == 0 {
		return fmt.Errorf("%w: --novelty-sustain needs --novelty-alone", errUsage)
	}
	opts := forecast.DetectorOptions{Consecutive: *consecutive, FalsePerDay: *falsePerDay, MaxProb: *maxProb, BurstyPerDay: *burstyPerDay,
		NoveltyRank: *noveltyRank, NoveltyAlone: *noveltyAlone, NoveltySpan: *noveltySpan, NoveltySustain: *noveltySustain, ShiftAlerts: *alertShifts}
	if *consecutive == 0 {
		opts.For, opts.SingleZ, opts.ClearFor = *forDur, *singleZ, *clearFor
	}
	id := *metric
	if id != "" {
		if _, ok := metrics.Lookup(id); !ok {
			return fmt.Errorf("%w: --metric %q is not a catalog id", errUsage, id)
		}
	} else {
		id = "value"
	}
	in := io.Reader(os.Stdin)
	name := "stdin"
	if *file != "" && *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			return fmt.Errorf("detect: %w", err)
		}
		defer f.Close()
		in, name = f, *file
	}
	samples, err := forecast.ReadCSV(in, *maxBytes)
	if err != nil {
		return fmt.Errorf("detect: %s: %w", name, err)
	}
	var traceFile *os.File
	var traceOut *bufio.Writer
	if *trace != "" {
		if traceFile, err = os.Create(*trace); err != nil {
			return fmt.Errorf("detect: --trace: %w", err)
		}
		defer traceFile.Close() // on early returns; closed and checked below
		traceOut = bufio.NewWriter(traceFile)
		fmt.Fprintln(traceOut, "timestamp,value,forecast,lower,upper,z,p,prob,novelty")
	}
	det := forecast.NewDetector(opts)
	fired := 0
	var firedAt []time.Time
	for i, s := range samples {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a, ok := det.Observe(id, s.T, s.V)
		if traceOut != nil {
			if b, judged := det.LastBand(id); judged && b.At.Equal(s.T.UTC().Truncate(time.Second)) {
				fmt.Fprintf(traceOut, "%s,%g,%g,%g,%g,%.3f,%s,%s,%s\n", b.At.Format(time.RFC3339), b.Value, b.Forecast, b.Lower, b.Upper, b.Z,
					traceNum(b.P), traceNum(b.Prob), traceNum(b.Novelty))
			}
		}
		if !ok {
			continue
		}
		if a.State == forecast.Firing {
			fired++
			firedAt = append(firedAt, a.At)
		} else if !*events {
			continue
		}
		line := fmt.Sprintf("%s %-8s value=%.6g forecast=%.6g band=%.6g..%.6g since=%s",
			a.At.Format(time.RFC3339), a.State, a.Value, a.Forecast, a.Lower, a.Upper, a.Start.Format(time.RFC3339))
		if a.State == forecast.Firing && a.P > 0 {
			line += fmt.Sprintf(" p=%.2g", a.P)
		}
		if a.State == forecast.Firing {
			line += fmt.Sprintf(" prob=%.2g", a.Prob)
		}
		if a.Message != "" {
			line += " (" + a.Message + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	if traceOut != nil {
		if err := traceOut.Flush(); err != nil {
			return fmt.Errorf("detect: --trace: %w", err)
		}
		if err := traceFile.Close(); err != nil {
			return fmt.Errorf("detect: --trace: %w", err)
		}
	}
	st := det.Stats(id)
	fmt.Fprintf(stderr, "detect: %d rows, %d alerts, sampling interval %s, skipped %d NaN and %d duplicate or out-of-order rows, %d level shifts, %d routine excursions, %d probable and %d familiar runs not alerted\n",
		len(samples), fired, det.Interval(id), st.NaN, st.OutOfOrder, st.Shifts, st.Routine, st.Probable, st.Familiar)
	if m := det.Model(id); m != nil {
		fmt.Fprintf(stderr, "detect: last model: %s\n", m)
	}
	if windows != nil && len(samples) > 0 {
		from := samples[int(*warmup*float64(len(samples)-1))].T
		sc := forecast.ScoreWindows(firedAt, windows, from)
		fmt.Fprintf(stdout, "windows detected %d/%d, median delay %s, alerts %d, outside every window %d (alerts before %s not scored)\n",
			sc.Detected, sc.Windows, sc.MedianDelay(), sc.Alerts, sc.Outside, from.Format(time.RFC3339))
	}
	return nil
}

// traceNum formats a trace column: empty when not judged (NaN).
func traceNum(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// readWindowsFile reads labelled anomaly windows for --windows: a CSV, or
// a JSON label file's entry for the data file series.
func readWindowsFile(path, series string) ([]forecast.Window, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("detect: --windows: %w", err)
	}
	defer f.Close()
	var w []forecast.Window
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		if series == "" || series == "-" {
			return nil, fmt.Errorf("%w: --windows with a JSON label file needs --csv FILE to find its entry", errUsage)
		}
		w, err = forecast.ReadWindowsJSON(f, filepath.ToSlash(series))
	} else {
		w, err = forecast.ReadWindows(f)
	}
	if err != nil {
		return nil, fmt.Errorf("detect: %s: %w", path, err)
	}
	return w, nil
}

// checkNoveltyFlags checks the ranges of the shape test's flags, named
// prefix+"novelty-rank" and so on, for detect, backtest and serve.
func checkNoveltyFlags(prefix string, rank, alone, sustain float64) error {
	if rank != 0 && !(rank >= 0.5 && rank <= 0.999) {
		return fmt.Errorf("%w: %snovelty-rank must be 0 (off) or 0.5 to 0.999, got %g", errUsage, prefix, rank)
	}
	if !(alone >= 0 && alone <= 1e6) {
		return fmt.Errorf("%w: %snovelty-alone must be 0 (off) to 1e6, got %g", errUsage, prefix, alone)
	}
	if !(sustain >= 0 && sustain <= 1000) {
		return fmt.Errorf("%w: %snovelty-sustain must be 0 to 1000 spans, got %g", errUsage, prefix, sustain)
	}
	return nil
}
