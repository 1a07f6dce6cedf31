package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/secondworld"
	"github.com/casebook/casebook/telemetry/sim"
)

// simulateCmd serves the simulated inference cluster for a real Prometheus
// to scrape, or writes a labelled scenario corpus and exits.
func simulateCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9100", "address to serve the cluster's /metrics endpoints on")
	var faults listFlag
	fs.Var(&faults, "fault", "inject a fault: cause[:model[/instance]][:severity] (repeatable)")
	seed := fs.Int64("seed", 1, "random seed")
	models := fs.Int("models", 2, "number of models")
	instances := fs.Int("instances", 2, "instances (replicas) per model")
	gpus := fs.Int("gpus", 2, "GPUs per instance (tensor parallel)")
	fleet := fs.Bool("fleet", false, "serve the fleet preset instead: 40 models of four sizes on TP 1, 2 and 4 with 4 to 48 replicas each, 500 engines on 1,000 GPUs (excludes --models, --instances, --gpus)")
	scenarios := fs.Int("scenarios", 0, "write this many labelled cases as JSON Lines and exit")
	out := fs.String("out", "-", "file for --scenarios (- = stdout)")
	world := fs.String("world", "sim", "which generator writes --scenarios: sim (the simulated cluster) or second (the independent second world)")
	engine := fs.String("engine", "vllm", "the engines serving the models, comma-separated in model order and repeating: vllm, sglang, trtllm or llamacpp; each serves its own /metrics names and semantics")
	engines := fs.String("engines", "vllm", "the engines the --scenarios cases run, comma-separated; each cause cycles through them")
	dcgmFields := fs.String("dcgm-fields", string(sim.DCGMProfiling), `the simulated dcgm-exporter's counter file, for the served cluster and for --scenarios --world sim: "default" (default-counters.csv, no profiling fields; gpu_sm_util is GPU_UTIL) or "profiling" (with DCGM_FI_PROF_*)`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: casebook simulate [flags]\n\nServes a simulated inference cluster (vLLM, SGLang, TensorRT-LLM or llama.cpp engines), or writes a labelled corpus with --scenarios.\nEvery flag can also be set as CASEBOOK_<NAME>.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: simulate: unexpected argument %q", errUsage, fs.Arg(0))
	}
	switch {
	case *models < 1 || *models > 16:
		return fmt.Errorf("%w: simulate: --models %d is outside 1..16", errUsage, *models)
	case *instances < 1 || *instances > 16:
		return fmt.Errorf("%w: simulate: --instances %d is outside 1..16", errUsage, *instances)
	case *gpus < 1 || *gpus > 8:
		return fmt.Errorf("%w: simulate: --gpus %d is outside 1..8", errUsage, *gpus)
	case *scenarios < 0 || *scenarios > 1_000_000:
		return fmt.Errorf("%w: simulate: --scenarios %d is outside 0..1000000", errUsage, *scenarios)
	case *world != "sim" && *world != "second":
		return fmt.Errorf("%w: simulate: --world %q is not sim or second", errUsage, *world)
	case *world == "second" && *scenarios == 0:
		return fmt.Errorf("%w: simulate: --world second only writes a corpus; give --scenarios N", errUsage)
	}
	fields, err := sim.ParseDCGMFields(*dcgmFields)
	if err != nil {
		return fmt.Errorf("%w: simulate: --%v", errUsage, err)
	}
	served, err := parseEngines(*engine)
	if err != nil {
		return fmt.Errorf("%w: simulate: --engine: %v", errUsage, err)
	}
	corpus, err := parseEngines(*engines)
	if err != nil {
		return fmt.Errorf("%w: simulate: --engines: %v", errUsage, err)
	}
	if *scenarios > 0 {
		cases := func() ([]metrics.Case, error) {
			return sim.Scenarios(sim.ScenarioOptions{N: *scenarios, Seed: *seed, DCGMFields: fields, Engines: corpus}), nil
		}
		if *world == "second" {
			if fields != sim.DCGMProfiling {
				return fmt.Errorf("%w: simulate: --dcgm-fields applies to --world sim only; the second world chooses its own field sets", errUsage)
			}
			cases = func() ([]metrics.Case, error) {
				return secondworld.Generate(secondworld.Options{N: *scenarios, Seed: *seed})
			}
		}
		return writeScenarios(cases, *out, stdout)
	}

	opts := sim.Options{Models: *models, InstancesPerModel: *instances, GPUsPerInstance: *gpus, Seed: *seed, DCGMFields: fields, Engines: served}
	if *fleet {
		if set := setFlags(fs, "models", "instances", "gpus"); len(set) > 0 {
			return fmt.Errorf("%w: simulate: --fleet sets the models itself; drop --%s", errUsage, set[0])
		}
		opts.Deployments = sim.FleetPreset()
	}
	c := sim.New(opts)
	var names []string
	for _, t := range c.Targets() {
		if len(names) == 0 || names[len(names)-1] != t.Model {
			names = append(names, t.Model)
		}
	}
	for _, spec := range faults {
		f, err := sim.ParseFaultSpec(spec, names)
		if err != nil {
			return fmt.Errorf("%w: simulate: %v", errUsage, err)
		}
		if _, err := c.Inject(f); err != nil {
			return fmt.Errorf("%w: simulate: fault %q: %v", errUsage, spec, err)
		}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("simulate: listen on %s: %w", *listen, err)
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "simulated cluster on %s (seed %d)\n", base, *seed)
	for _, t := range c.Targets() {
		fmt.Fprintf(stdout, "  %-24s %-14s %s%s  %s%s\n", t.Model, t.Instance, base, t.EnginePath, base, t.GPUPath)
	}
	fmt.Fprintf(stdout, "  gateway %s%s\n  targets %s/targets, faults %s/faults\n  Prometheus scrape config: %s/prometheus.yml (ServiceMonitor-style labels: %s/prometheus.yml?labels=kubernetes)\n  dcgm-exporter counters: %s\n",
		base, sim.GatewayPath, base, base, base, base, fields)

	srv := &http.Server{Handler: c.Handler(), ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.Run(runCtx, time.Second)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("simulate: shut down: %w", err)
		}
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("simulate: serve: %w", err)
	}
}

// setFlags returns which of the named flags were given on the command line.
func setFlags(fs *flag.FlagSet, names ...string) []string {
	var out []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				out = append(out, n)
			}
		}
	})
	return out
}

func writeScenarios(generate func() ([]metrics.Case, error), path string, stdout io.Writer) (err error) {
	cases, err := generate()
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	w := stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("simulate: create %s: %w", path, err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("simulate: close %s: %w", path, cerr)
			}
		}()
		w = f
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("simulate: write case: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("simulate: write %s: %w", path, err)
	}
	return nil
}

// parseEngines reads a comma-separated list of engine ids.
func parseEngines(s string) ([]metrics.Engine, error) {
	var out []metrics.Engine
	for _, part := range strings.Split(s, ",") {
		e, err := metrics.ParseEngine(part)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
