package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/demo"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/diagnose/forecast"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/telemetry/sim"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/watch"
	"github.com/casebook/casebook/web"
)

// serveConfig is everything `casebook serve` reads from flags or CASEBOOK_*.
type serveConfig struct {
	Listen        string
	Data          string
	PrometheusURL string
	Targets       listFlag
	TargetsFile   string
	// ScrapeConcurrency bounds the embedded scraper's scrapes at once.
	ScrapeConcurrency int
	DCGM              string
	WebhookToken      string
	ScrapeInterval    time.Duration
	InstanceLabel     string

	GPUInstanceLabel, GPUNamespaceLabel string   // --gpu-instance-label, --gpu-namespace-label
	ModelLabel                          string   // --model-label
	EngineOverrides                     listFlag // --engine SCOPE=ENGINE
	HelmChart                           string   // --helm-chart

	BaseURL        string
	InsecureNoAuth bool
	Auth           string
	TrustedProxies string
	ProxyRole      string
	SessionTTL     time.Duration
	LogLevel       string
	TraceMaxMB     int64

	RetentionRaw    time.Duration
	RetentionMinute time.Duration
	RetentionHour   time.Duration

	Detect            string // "auto", "on" or "off"
	DetectInterval    time.Duration
	DetectConsecutive int
	DetectCorroborate time.Duration
	DetectNovelty     float64 // the detector's shape test (forecast.DetectorOptions.NoveltyRank), 0 off
	DetectFalsePerDay float64 // the detector's false-alert budget (forecast.DetectorOptions.FalsePerDay), 0 off
	DetectNovelAlone  float64 // forecast.DetectorOptions.NoveltyAlone, 0 off
	DetectNovelSpans  float64 // forecast.DetectorOptions.NoveltySustain
	DetectShifts      bool    // forecast.DetectorOptions.ShiftAlerts
	AlertmanagerURL   string

	ChangeWebhookURL    string
	ChangeWebhookSecret string
	DeployWindows       string
	EngineConfig        string
}

func parseServe(args []string, env func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to serve the console on")
	fs.StringVar(&c.Data, "data", "./data", "data directory: SQLite archive and embedded TSDB")
	fs.StringVar(&c.PrometheusURL, "prometheus-url", "", "query this Prometheus-compatible API (Prometheus, Thanos, Mimir, VictoriaMetrics) instead of the embedded TSDB")
	fs.Var(&c.Targets, "targets", "engine and exporter /metrics URLs to scrape, as URL or INSTANCE=URL (comma-separated or repeated)")
	fs.StringVar(&c.TargetsFile, "targets-file", "", "more targets to scrape, from a Prometheus file_sd JSON file (labels per group; __metrics_path__, __scheme__, __scrape_interval__ and __scrape_timeout__ as in Prometheus)")
	fs.IntVar(&c.ScrapeConcurrency, "scrape-concurrency", 0, "at most this many scrapes at once (0: 4 per CPU, at least 8)")
	fs.StringVar(&c.DCGM, "dcgm", "", `collect GPU fields through DCGM: "embedded" or the host:port of nv-hostengine`)
	fs.StringVar(&c.WebhookToken, "webhook-token", "", "bearer token Alertmanager must send to /api/v1/alerts/alertmanager")
	fs.DurationVar(&c.ScrapeInterval, "scrape-interval", 5*time.Second, "scrape interval of the embedded scraper")
	fs.StringVar(&c.InstanceLabel, "instance-label", "pod", "label that names an engine instance")
	fs.StringVar(&c.GPUInstanceLabel, "gpu-instance-label", "auto", `label on GPU series that names the engine's pod: "auto" detects exported_pod, pod or pod_name`)
	fs.StringVar(&c.ModelLabel, "model-label", "", "label that names the model on engines whose series carry no model_name (llama-server); empty: model_name, set by the scrape")
	fs.Var(&c.EngineOverrides, "engine", "the engine of a scope whose series do not say it right: MODEL[/INSTANCE]=vllm|sglang|trtllm|llamacpp (repeatable; a target's label __engine__ does the same)")
	fs.StringVar(&c.GPUNamespaceLabel, "gpu-namespace-label", "auto", `label on GPU series that names the pod's namespace: "auto" pairs it with the pod label, "none" leaves namespaces out of the join`)
	fs.StringVar(&c.BaseURL, "base-url", "", "external URL of the console, used in share and postmortem links (default http://LISTEN)")
	fs.BoolVar(&c.InsecureNoAuth, "insecure-no-auth", false, "allow listening on a non-loopback address without authentication (every page then shows a red banner)")
	fs.StringVar(&c.Auth, "auth", "none", `authentication: "none" (loopback only), "proxy" (trust X-Forwarded-User from --trusted-proxies) or "accounts" (built-in accounts, see casebook user)`)
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "", "addresses or CIDR ranges of the authenticating or TLS proxy; only their X-Forwarded-* headers are believed")
	fs.StringVar(&c.ProxyRole, "proxy-role", "viewer", "role of a proxy-authenticated user without an account")
	fs.DurationVar(&c.SessionTTL, "session-ttl", 12*time.Hour, "how long a sign-in lasts (--auth accounts)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.Int64Var(&c.TraceMaxMB, "trace-max-mb", 512, "largest kernel-trace upload, in MiB")
	fs.DurationVar(&c.RetentionRaw, "retention-raw", telemetry.DefaultRawRetention, "how long the embedded store (or, with --prometheus-url, the remote) keeps per-scrape samples: longer chart ranges read the recorded tiers")
	fs.DurationVar(&c.RetentionMinute, "retention-1m", telemetry.DefaultMinuteRetention, "how long the embedded store (or the remote's 1m records) keeps 1-minute aggregates")
	fs.DurationVar(&c.RetentionHour, "retention-1h", telemetry.DefaultHourRetention, "how long the embedded store keeps 1-hour aggregates")
	fs.StringVar(&c.Detect, "detect", "auto", `dynamic-threshold detector: "on", "off" or "auto" (on)`)
	fs.DurationVar(&c.DetectInterval, "detect-interval", time.Minute, "how often the detector evaluates the latest minute of every metric")
	fs.IntVar(&c.DetectConsecutive, "detect-consecutive", 3, "points in a row outside the forecast band that raise an alert")
	fs.DurationVar(&c.DetectCorroborate, "detect-corroborate", 10*time.Minute, "alerts of one dimension open an incident only when a metric of another dimension of the scope alerts too or they last this long (0: every alert opens one)")
	fs.Float64Var(&c.DetectFalsePerDay, "detect-false-per-day", 0, "false-alert budget per series and day: a run alerts only when the series made runs as deep at most this often a day in its own record, as detect --false-per-day (0: off)")
	fs.Float64Var(&c.DetectNovelAlone, "detect-novelty-alone", 0, "with --detect-novelty-rank: also alert when a stretch is this many times farther from its nearest earlier stretch than that quantile, as detect --novelty-alone (0: off)")
	fs.BoolVar(&c.DetectShifts, "detect-alert-shifts", false, "also alert on a lasting level shift in a bad direction that no alert covered, as detect --alert-shifts")
	fs.Float64Var(&c.DetectNovelSpans, "detect-novelty-sustain", 0, "with --detect-novelty-alone: spans of novel stretches an episode needs before it alerts, as detect --novelty-sustain (0: at the first)")
	fs.Float64Var(&c.DetectNovelty, "detect-novelty-rank", 0, "shape test: an alert needs a stretch of 30 minutes unlike the series' earlier ones, farther from its nearest earlier stretch than this share of past stretches were from theirs, 0.5-0.999 (0: off; per series about 350 KB held, 600 KB resident, and 25 us a point)")
	fs.StringVar(&c.AlertmanagerURL, "alertmanager-url", "", "forward the detector's alerts to this Alertmanager (http://host:9093)")
	fs.StringVar(&c.ChangeWebhookURL, "change-webhook-url", "", "post change requests (signed JSON) to this URL, e.g. a CMDB or ticketing system")
	fs.StringVar(&c.ChangeWebhookSecret, "change-webhook-secret", "", "shared secret of the X-Casebook-Signature HMAC (required with --change-webhook-url)")
	fs.StringVar(&c.DeployWindows, "deploy-windows", "", `weekly deployment windows, e.g. "Tue 10:00-12:00, Thu 14:00-16:00 Europe/Berlin"`)
	fs.StringVar(&c.HelmChart, "helm-chart", "none", "chart preset whose values change requests also show: "+strings.Join(change.HelmChartNames(), ", "))
	fs.StringVar(&c.EngineConfig, "engine-config", "", "file with the engines' current settings: a vLLM argument list or JSON; it wins over the engines' info labels")
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: serve takes no arguments, got %q", errUsage, fs.Args())
	}
	switch c.Auth {
	case "none", "accounts":
	case "proxy":
		if strings.TrimSpace(c.TrustedProxies) == "" {
			return c, fmt.Errorf("%w: --auth proxy needs --trusted-proxies (the proxy's addresses)", errUsage)
		}
	default:
		return c, fmt.Errorf("%w: --auth must be none, proxy or accounts, got %q", errUsage, c.Auth)
	}
	if _, err := auth.ParseProxies(c.TrustedProxies); err != nil {
		return c, fmt.Errorf("%w: --trusted-proxies: %v", errUsage, err)
	}
	if _, err := auth.ParseRole(c.ProxyRole); err != nil {
		return c, fmt.Errorf("%w: --proxy-role: %v", errUsage, err)
	}
	if c.SessionTTL < time.Minute {
		return c, fmt.Errorf("%w: --session-ttl must be at least 1m, got %s", errUsage, c.SessionTTL)
	}
	if c.ChangeWebhookURL != "" {
		if _, err := change.NewWebhook(change.WebhookOptions{URL: c.ChangeWebhookURL, Secret: c.ChangeWebhookSecret}); err != nil {
			return c, fmt.Errorf("%w: --change-webhook-url: %v", errUsage, err)
		}
	}
	if c.DeployWindows != "" {
		if _, err := change.ParseSchedule(c.DeployWindows); err != nil {
			return c, fmt.Errorf("%w: --deploy-windows: %v", errUsage, err)
		}
	}
	if err := checkListen(c.Listen, c.Auth != "none", c.InsecureNoAuth); err != nil {
		return c, err
	}
	if c.TraceMaxMB <= 0 {
		return c, fmt.Errorf("%w: --trace-max-mb must be positive, got %d", errUsage, c.TraceMaxMB)
	}
	if c.RetentionRaw < time.Hour || c.RetentionMinute < c.RetentionRaw || c.RetentionHour < c.RetentionMinute {
		return c, fmt.Errorf("%w: retentions must grow from tier to tier, raw at least 1h: got --retention-raw %s, --retention-1m %s, --retention-1h %s",
			errUsage, c.RetentionRaw, c.RetentionMinute, c.RetentionHour)
	}
	switch c.Detect {
	case "auto", "on", "off", "true", "false":
	default:
		return c, fmt.Errorf("%w: --detect must be on, off or auto, got %q", errUsage, c.Detect)
	}
	if c.DetectInterval < time.Second {
		return c, fmt.Errorf("%w: --detect-interval must be at least 1s, got %s", errUsage, c.DetectInterval)
	}
	if c.DetectConsecutive <= 0 {
		return c, fmt.Errorf("%w: --detect-consecutive must be positive, got %d", errUsage, c.DetectConsecutive)
	}
	if c.DetectCorroborate < 0 || c.DetectCorroborate > 24*time.Hour {
		return c, fmt.Errorf("%w: --detect-corroborate must be 0..24h, got %s", errUsage, c.DetectCorroborate)
	}
	if err := checkNoveltyFlags("--detect-", c.DetectNovelty, c.DetectNovelAlone, c.DetectNovelSpans); err != nil {
		return c, err
	}
	if !(c.DetectFalsePerDay >= 0 && c.DetectFalsePerDay <= 1e6) {
		return c, fmt.Errorf("%w: --detect-false-per-day must be 0 (off) to 1e6, got %g", errUsage, c.DetectFalsePerDay)
	}
	if c.DetectNovelAlone > 0 && c.DetectNovelty == 0 {
		return c, fmt.Errorf("%w: --detect-novelty-alone needs --detect-novelty-rank", errUsage)
	}
	if c.DetectNovelSpans > 0 && c.DetectNovelAlone == 0 {
		return c, fmt.Errorf("%w: --detect-novelty-sustain needs --detect-novelty-alone", errUsage)
	}
	if c.AlertmanagerURL != "" {
		if _, err := watch.NewAlertmanager(watch.AlertmanagerOptions{URL: c.AlertmanagerURL}); err != nil {
			return c, fmt.Errorf("%w: --alertmanager-url: %v", errUsage, err)
		}
	}
	if c.BaseURL == "" {
		c.BaseURL = "http://" + c.Listen
	}
	return c, nil
}

// checkListen refuses to expose the console beyond this machine while it
// has no authentication, unless the operator says so explicitly.
func checkListen(addr string, authenticated, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: --listen %q: %v", errUsage, addr, err)
	}
	if loopback(host) || authenticated {
		return nil
	}
	if !insecure {
		return fmt.Errorf("%w: --listen %q is reachable from other machines and Casebook has no authentication configured; listen on 127.0.0.1, choose --auth proxy or --auth accounts, or pass --insecure-no-auth", errUsage, addr)
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func parseTargets(list []string) ([]telemetry.Target, error) {
	var out []telemetry.Target
	for _, t := range list {
		tg := telemetry.Target{URL: t}
		if name, u, ok := strings.Cut(t, "="); ok && !strings.Contains(name, "/") {
			tg = telemetry.Target{URL: u, Labels: map[string]string{"pod": name}}
		}
		if !strings.HasPrefix(tg.URL, "http://") && !strings.HasPrefix(tg.URL, "https://") {
			return nil, fmt.Errorf("%w: --targets %q: want http(s)://host:port/metrics or INSTANCE=URL", errUsage, t)
		}
		out = append(out, tg)
	}
	return out, nil
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: %v", errUsage, level, err)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func serveCmd(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, env, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogLevel, stderr)
	if err != nil {
		return err
	}
	targets, err := parseTargets(cfg.Targets)
	if err != nil {
		return err
	}
	if cfg.TargetsFile != "" {
		more, err := readTargetsFile(cfg.TargetsFile)
		if err != nil {
			return err
		}
		targets = append(targets, more...)
	}
	if cfg.ScrapeConcurrency < 0 {
		return fmt.Errorf("%w: --scrape-concurrency must not be negative, got %d", errUsage, cfg.ScrapeConcurrency)
	}
	if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
		return fmt.Errorf("serve: data directory: %w", err)
	}
	if cfg.InstanceLabel != "pod" {
		for i := range targets {
			if v, ok := targets[i].Labels["pod"]; ok {
				delete(targets[i].Labels, "pod")
				targets[i].Labels[cfg.InstanceLabel] = v
			}
		}
	}

	release, err := lockData(cfg.Data)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer release()
	st, err := store.Open(ctx, filepath.Join(cfg.Data, "casebook.db"))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer st.Close()

	// Without a metric source to read, the console runs on the demo
	// cluster: the simulator, back-filled with a week of history.
	var cluster *demo.Cluster
	topts := telemetry.Options{
		DataDir: cfg.Data, PrometheusURL: cfg.PrometheusURL, Targets: targets,
		ScrapeInterval: cfg.ScrapeInterval, ScrapeConcurrency: cfg.ScrapeConcurrency, InstanceLabel: cfg.InstanceLabel, DCGM: cfg.DCGM,
		GPUInstanceLabel: cfg.GPUInstanceLabel, GPUNamespaceLabel: cfg.GPUNamespaceLabel,
		ModelLabel: cfg.ModelLabel, EngineOverrides: map[string]string{},
		RawRetention: cfg.RetentionRaw, MinuteRetention: cfg.RetentionMinute, HourRetention: cfg.RetentionHour,
		Logger: log,
	}
	for _, o := range cfg.EngineOverrides {
		scope, engine, ok := strings.Cut(o, "=")
		if !ok || scope == "" {
			return fmt.Errorf("%w: --engine %q is not MODEL[/INSTANCE]=ENGINE", errUsage, o)
		}
		topts.EngineOverrides[scope] = engine
	}
	if cfg.PrometheusURL == "" && len(targets) == 0 {
		log.Info("no --prometheus-url and no --targets: starting the demo cluster and back-filling a week of history")
		cluster = demo.New(demo.Options())
		topts.Demo = cluster
	}
	began := time.Now()
	tel, err := telemetry.Open(ctx, topts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer func() {
		if err := tel.Close(); err != nil {
			log.Error("telemetry: close", "err", err)
		}
	}()
	log.Info("telemetry ready", "mode", mode(cfg, len(targets), cluster != nil), "took", time.Since(began).Round(time.Millisecond))

	con, err := buildConsole(ctx, cfg, st, tel, cluster, log)
	if err != nil {
		return err
	}
	go con.changes.Jobs.Run(ctx, time.Minute)
	if con.watcher != nil {
		watchCtx, stopWatch := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); con.watcher.Run(watchCtx) }()
		defer func() { stopWatch(); <-done }()
	}
	return listenAndServe(ctx, cfg.Listen, con.srv, stdout, log)
}

// console is every part of the running console, built once.
type console struct {
	changes *handlers.Changes
	watcher *watch.Watcher // nil with --detect off
	srv     *web.Server
}

// buildConsole builds the console's parts in dependency order over the
// archive and the metric source: the diagnosis engine and the incident
// service, the page frame, the handlers, the detector, and the server
// with its route table. cluster is the demo cluster, nil outside the demo.
func buildConsole(ctx context.Context, cfg serveConfig, st *store.Store, tel *telemetry.Telemetry, cluster *demo.Cluster, log *slog.Logger) (console, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	engine := diagnose.New(diagnose.Options{})
	svc := incident.New(incident.Options{
		Archive: st, Capture: tel, Diagnoser: engine, Learner: engine,
		InstanceLabel: cfg.InstanceLabel, Logger: log,
	})
	// Every reviewed incident teaches the engine before the first
	// diagnosis; a failure only delays that to the first diagnosis.
	if n, err := svc.LoadCases(ctx); err != nil {
		log.Warn("knowledge base: could not load reviewed incidents; retrying at the first diagnosis", "err", err)
	} else {
		log.Info("knowledge base loaded", "cases", n)
	}

	layout := handlers.NewLayout(tel, []handlers.Store{st, tel}, web.Assets(), cluster != nil, nil)
	changes, err := newChanges(ctx, cfg, st, tel, layout.Page, log)
	if err != nil {
		return console{}, err
	}
	inc := handlers.NewIncidents(handlers.IncidentDeps{
		Changes: changes, Archive: st, Service: svc, Layout: layout.Page,
		BaseURL: cfg.BaseURL, Logger: log, TraceMaxBytes: cfg.TraceMaxMB << 20,
		TraceSpoolDir: filepath.Join(cfg.Data, "spool"),
	})
	var w *watch.Watcher
	if cfg.Detect != "off" && cfg.Detect != "false" {
		if w, err = newWatcher(cfg, tel, svc, log); err != nil {
			return console{}, err
		}
	}

	proxies, _ := auth.ParseProxies(cfg.TrustedProxies) // checked by parseServe
	if cfg.Auth == "accounts" && !strings.HasPrefix(cfg.BaseURL, "https://") {
		log.Warn("session cookies are not marked Secure: serve the console behind TLS and set --base-url https://...")
	}
	proxyRole, _ := auth.ParseRole(cfg.ProxyRole)
	host, _, _ := net.SplitHostPort(cfg.Listen)
	opts := web.Options{
		Telemetry: tel, Diagnoser: svc.Diagnoser(), Incidents: inc, IncidentOpener: svc,
		Layout: layout, Storage: tel, Logger: log, Registry: reg,
		Stores: []handlers.Store{st, tel},
		Auth: web.AuthOptions{
			Mode: web.AuthMode(cfg.Auth),
			Accounts: handlers.NewAccounts(handlers.AccountDeps{
				Store: st, PasswordLogin: cfg.Auth == "accounts", SessionTTL: cfg.SessionTTL,
				SecureCookies: strings.HasPrefix(cfg.BaseURL, "https://"), Logger: log, Layout: layout.Page,
			}),
			Proxy:        proxies,
			ProxyRole:    proxyRole,
			WebhookToken: cfg.WebhookToken,
			Insecure:     cfg.Auth == "none" && !loopback(host),
		},
	}
	if w != nil {
		opts.Forecaster, opts.Detector = w, w
	}
	if cluster != nil {
		opts.Faults = simFaults{cluster.Sim}
	}
	return console{changes: changes, watcher: w, srv: web.New(opts)}, nil
}

// listenAndServe serves the console on addr until ctx ends, then shuts
// down gracefully.
func listenAndServe(ctx context.Context, addr string, h http.Handler, stdout io.Writer, log *slog.Logger) error {
	httpSrv := &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Generous: a kernel-trace upload of hundreds of MB is received and
		// parsed within one request; pages have their own 30 s deadline.
		ReadTimeout:  10 * time.Minute,
		WriteTimeout: 10 * time.Minute,
		IdleTimeout:  120 * time.Second,
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(stdout, "casebook: serving the console on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}

// newChanges builds the change-request handlers from the change flags.
func newChanges(ctx context.Context, cfg serveConfig, st *store.Store, tel *telemetry.Telemetry, layout func(title, nav string) views.LayoutView, log *slog.Logger) (*handlers.Changes, error) {
	d := handlers.ChangeDeps{Store: st, Capture: tel, Engine: tel, GPUs: gpuInventory{tel}, BaseURL: cfg.BaseURL, Layout: layout, Logger: log}
	if cfg.ChangeWebhookURL != "" {
		w, err := change.NewWebhook(change.WebhookOptions{URL: cfg.ChangeWebhookURL, Secret: cfg.ChangeWebhookSecret})
		if err != nil {
			return nil, fmt.Errorf("%w: --change-webhook-url: %v", errUsage, err)
		}
		d.Webhook = w
	}
	if cfg.DeployWindows != "" {
		s, err := change.ParseSchedule(cfg.DeployWindows)
		if err != nil {
			return nil, fmt.Errorf("%w: --deploy-windows: %v", errUsage, err)
		}
		d.Schedule = &s
	}
	chart, ok := change.LookupHelmChart(cfg.HelmChart)
	if !ok {
		return nil, fmt.Errorf("%w: --helm-chart %q: want one of %s", errUsage, cfg.HelmChart, strings.Join(change.HelmChartNames(), ", "))
	}
	d.HelmChart = chart
	if cfg.EngineConfig != "" {
		b, err := os.ReadFile(cfg.EngineConfig)
		if err != nil {
			return nil, fmt.Errorf("serve: --engine-config: %w", err)
		}
		if d.EngineConfig, err = change.ParseConfig(b); err != nil {
			return nil, fmt.Errorf("%w: --engine-config %s: %v", errUsage, cfg.EngineConfig, err)
		}
	}
	return handlers.NewChanges(ctx, d), nil
}

// gpuInventory adapts the telemetry's DCGM readings to the capacity check.
type gpuInventory struct{ t *telemetry.Telemetry }

func (g gpuInventory) GPUs(ctx context.Context, window time.Duration, at time.Time) ([]change.GPU, error) {
	rs, err := g.t.GPUUsage(ctx, window, at)
	if err != nil {
		return nil, err
	}
	out := make([]change.GPU, len(rs))
	for i, r := range rs {
		out[i] = change.GPU{Host: r.Host, GPU: r.GPU, UUID: r.UUID, Engine: r.Pod, MaxUtil: r.MaxUtil, Samples: r.Samples}
	}
	return out, nil
}

// newWatcher builds the dynamic-threshold detector over the telemetry,
// opening incidents through the archive's one incident path.
func newWatcher(cfg serveConfig, tel *telemetry.Telemetry, svc *incident.Service, log *slog.Logger) (*watch.Watcher, error) {
	opts := watch.Options{
		Source:      tel,
		Opener:      svc,
		Interval:    cfg.DetectInterval,
		Consecutive: cfg.DetectConsecutive,
		Corroborate: cfg.DetectCorroborate,
		BaseURL:     cfg.BaseURL,
		Logger:      log,
		// Refitting every 6 h instead of every hour keeps the start-up
		// replay of a week of history to 28 fits per series; the
		// detector's local correction follows the hours in between.
		Detector: forecast.DetectorOptions{Refit: 6 * time.Hour, FalsePerDay: cfg.DetectFalsePerDay,
			NoveltyRank: cfg.DetectNovelty, NoveltyAlone: cfg.DetectNovelAlone, NoveltySustain: cfg.DetectNovelSpans, ShiftAlerts: cfg.DetectShifts},
	}
	if cfg.AlertmanagerURL != "" {
		am, err := watch.NewAlertmanager(watch.AlertmanagerOptions{URL: cfg.AlertmanagerURL, InstanceLabel: cfg.InstanceLabel, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("%w: --alertmanager-url: %v", errUsage, err)
		}
		opts.Alertmanager = am
	}
	w, err := watch.New(opts)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return w, nil
}

func mode(cfg serveConfig, targets int, demo bool) string {
	switch {
	case cfg.PrometheusURL != "":
		return "remote " + cfg.PrometheusURL
	case demo:
		return "demo"
	default:
		return fmt.Sprintf("embedded, %d targets", targets)
	}
}

// simFaults adapts the demo cluster to the console's fault panel.
type simFaults struct{ c *sim.Cluster }

func (s simFaults) Inject(f handlers.Fault) (string, error) {
	return s.c.Inject(sim.Fault{Cause: f.Cause, Scope: f.Scope, Severity: f.Severity, Start: f.Start, Duration: f.Duration})
}

func (s simFaults) Faults() []handlers.Fault {
	var out []handlers.Fault
	for _, f := range s.c.Faults() {
		out = append(out, handlers.Fault{Cause: f.Cause, Scope: f.Scope, Severity: f.Severity, Start: f.Start, Duration: f.Duration})
	}
	return out
}

func (s simFaults) ClearFaults() { s.c.ClearFaults() }
