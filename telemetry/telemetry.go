package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/casebook/casebook/metrics"
)

// Options configures Open. Zero values mean the defaults documented on each
// field.
type Options struct {
	DataDir       string   // embedded TSDB lives in DataDir/tsdb
	PrometheusURL string   // remote mode when set
	Targets       []Target // engine/exporter /metrics URLs to scrape (embedded mode)
	// ScrapeConcurrency bounds the scrapes that run at once; zero means
	// DefaultScrapeConcurrency.
	ScrapeConcurrency int
	Demo              DemoSource    // embedded mode scraping this in-process cluster, history back-filled; nil: none
	ScrapeInterval    time.Duration // default 5s; in remote mode, the remote's scrape interval (default 15s)
	InstanceLabel     string        // default "pod"
	// GPUInstanceLabel and GPUNamespaceLabel are the labels on GPU
	// series that name the engine's pod and namespace; "" or "auto"
	// detects them from the data (exported_pod, pod or pod_name), and a
	// namespace label "none" keeps namespaces out of the join.
	GPUInstanceLabel  string
	GPUNamespaceLabel string
	DCGM              string // "", "embedded" or a host:port of nv-hostengine
	// DemoBackfill is how much history demo mode back-fills before it
	// scrapes live; zero means a week, so that baselines and weekly
	// seasonality work at once. Tests that need an hour use less.
	DemoBackfill time.Duration
	// DemoUntil, when set, ends the demo's back-fill at that instant
	// instead of now, and the cluster does not run live afterwards: a
	// replay of a chosen stretch of the simulated day, for tests and
	// reproductions whose result must not depend on when they run.
	DemoUntil time.Time
	// ModelLabel names the label that carries the model on engines whose
	// series have no model_name (llama-server); "" means model_name, as
	// a scrape target's labels or the remote's relabelling set it.
	ModelLabel string
	// EngineOverrides sets the engine of scopes whose series do not say
	// it right, keyed by model, instance or model/instance ("sglang",
	// "vllm", ...). A target's reserved label __engine__ does the same
	// for its instance.
	EngineOverrides map[string]string
	Logger          *slog.Logger

	// Retentions of the embedded tiers (DataDir/tsdb raw, tsdb-1m and
	// tsdb-1h aggregates); zero means 24 h, 30 days and 365 days.
	RawRetention    time.Duration
	MinuteRetention time.Duration
	HourRetention   time.Duration
}

// Target is one /metrics endpoint to scrape. Labels are added to every
// series it exposes that does not carry them itself, e.g. pod=<instance>.
// The reserved labels __scrape_interval__ and __scrape_timeout__ (durations
// such as "15s") override the scrape interval and timeout of this target.
type Target struct {
	URL    string
	Labels map[string]string
}

// Telemetry is Casebook's metric source: it answers scopes, chart ranges
// and snapshots from a remote Prometheus or from the embedded TSDB that it
// feeds itself.
type Telemetry struct {
	opts    Options
	log     *slog.Logger
	querier Querier
	status  *statusBoard
	res     resolutions
	// backfilledTo is where the demo's back-fill ended (zero without one).
	backfilledTo time.Time
	ranges       *rangeCache // settled points of chart ranges and snapshot histories
	fleet        fleetCache  // the latest reading of every scope (Fleet)
	scopes       scopesCache // the latest listing of the scopes (Scopes)
	// fleetHist keeps the settled history points of Fleet's range queries.
	fleetHist fleetHistory
	// noRecords notes the recorded tiers a remote Prometheus lacks.
	noRecords recordAbsence

	// engineOverrides are the engines set by option or target, by model,
	// instance or model/instance.
	engineOverrides map[string]metrics.Engine

	join    joinCache       // the latest GPU join (GPUJoin)
	engines engineEndpoints // engines scraped here, for /v1/models

	db *tsdb.DB // the raw tier; nil in remote mode
	// app is what scrapers and the DCGM collector write the raw tier
	// through (commits refused while the disk is full).
	app   storage.Appendable
	tiers *tierSet // nil in remote mode
	dcgm  *dcgmCollector
	// pool runs the scrape loops; meter counts their work and skips.
	pool  *scrapePool
	meter *ingestMeter

	bg     context.Context // ends at Close; background work runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// now is the time queries without one read at: the wall clock, or the
// end of a demo replay (Options.DemoUntil).
func (t *Telemetry) now() time.Time {
	if !t.opts.DemoUntil.IsZero() {
		return t.opts.DemoUntil
	}
	return time.Now()
}

// Open starts the telemetry of one deployment. With PrometheusURL set it
// queries that server (remote mode); otherwise it opens the embedded TSDB
// in DataDir/tsdb and scrapes Targets into it, and with Demo also the
// in-process simulator after back-filling a week of its history. ctx bounds
// Open's own work (the back-fill); background scraping runs until Close.
//
// A source that cannot be reached (a Prometheus that is down, a target,
// DCGM without its library) does not fail Open: it shows in Status.
func Open(ctx context.Context, opts Options) (*Telemetry, error) {
	backfill := demoBackfill
	if opts.DemoBackfill < 0 {
		return nil, fmt.Errorf("telemetry: demo back-fill %s is negative", opts.DemoBackfill)
	}
	if !opts.DemoUntil.IsZero() && (opts.Demo == nil || opts.DemoUntil.After(time.Now())) {
		return nil, fmt.Errorf("telemetry: demo replay end %s needs demo mode and a time in the past", opts.DemoUntil.Format(time.RFC3339))
	}
	if opts.DemoBackfill > 0 {
		backfill = opts.DemoBackfill
	}
	return open(ctx, opts, backfill)
}

func open(ctx context.Context, opts Options, backfill time.Duration) (*Telemetry, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.InstanceLabel == "" {
		opts.InstanceLabel = GPUInstanceLabel
	}
	if opts.ScrapeInterval < 0 {
		return nil, fmt.Errorf("telemetry: scrape interval %s is negative", opts.ScrapeInterval)
	}
	if opts.ScrapeConcurrency < 0 {
		return nil, fmt.Errorf("telemetry: scrape concurrency %d is negative", opts.ScrapeConcurrency)
	}
	for _, l := range []struct{ flag, v string }{{"GPU instance label", opts.GPUInstanceLabel}, {"GPU namespace label", opts.GPUNamespaceLabel}} {
		if l.v != "" && l.v != LabelAuto && !(l.v == "none" && l.flag == "GPU namespace label") && !validLabelName(l.v) {
			return nil, fmt.Errorf("telemetry: %s %q is not a label name", l.flag, l.v)
		}
	}
	if opts.ModelLabel != "" && !validLabelName(opts.ModelLabel) {
		return nil, fmt.Errorf("telemetry: model label %q is not a label name", opts.ModelLabel)
	}
	overrides, err := parseEngineOverrides(opts.EngineOverrides)
	if err != nil {
		return nil, err
	}
	for _, tg := range opts.Targets {
		if v, ok := tg.Labels[labelEngine]; ok {
			e, err := metrics.ParseEngine(v)
			if err != nil {
				return nil, fmt.Errorf("telemetry: target %s: %w", tg.URL, err)
			}
			in := tg.Labels[opts.InstanceLabel]
			if in == "" {
				return nil, fmt.Errorf("telemetry: target %s: %s needs the instance label %s to name the instance", tg.URL, labelEngine, opts.InstanceLabel)
			}
			overrides[in] = e
		}
	}
	t := &Telemetry{opts: opts, log: opts.Logger, status: newStatusBoard(opts.Logger), engineOverrides: overrides}
	bg, cancel := context.WithCancel(context.Background())
	t.bg, t.cancel = bg, cancel

	if opts.PrometheusURL != "" {
		if opts.Demo != nil || len(opts.Targets) > 0 || opts.DCGM != "" {
			cancel()
			return nil, errors.New("telemetry: a Prometheus URL excludes demo mode, scrape targets and DCGM collection: Prometheus scrapes those itself")
		}
		if opts.ScrapeInterval == 0 {
			opts.ScrapeInterval = 15 * time.Second
			t.opts.ScrapeInterval = opts.ScrapeInterval
		}
		rq, err := NewRemoteQuerier(RemoteOptions{URL: opts.PrometheusURL, Logger: opts.Logger})
		if err != nil {
			cancel()
			return nil, err
		}
		rq.status = t.status
		t.querier = rq
		t.ranges = newRangeCache(cacheSettle) // a remote's ingestion may lag by minutes
		t.res = resolutions{live: opts.ScrapeInterval}
		t.probeRemote(ctx, rq)
		t.startJoinWatch(bg)
		return t, nil
	}

	if opts.ScrapeInterval == 0 {
		opts.ScrapeInterval = DefaultScrapeInterval
		t.opts.ScrapeInterval = opts.ScrapeInterval
	}
	// A raw point has settled once every target was scraped twice after
	// it (a slow or skipped scrape included), and a minute at least.
	t.ranges = newRangeCache(max(time.Minute, 3*opts.ScrapeInterval))
	if opts.DataDir == "" {
		cancel()
		return nil, errors.New("telemetry: the embedded mode needs a data directory")
	}
	if opts.Demo != nil && opts.InstanceLabel != GPUInstanceLabel {
		cancel()
		return nil, fmt.Errorf("telemetry: demo mode names instances by the %q label, not %q", GPUInstanceLabel, opts.InstanceLabel)
	}
	targets := make([]scrapeTarget, 0, len(opts.Targets))
	for _, tg := range opts.Targets {
		st, err := resolveTarget(tg, opts.ScrapeInterval)
		if err != nil {
			cancel()
			return nil, err
		}
		targets = append(targets, st)
	}

	t.meter = &ingestMeter{}
	t.pool = newScrapePool(opts.ScrapeConcurrency, t.meter)
	t.res = resolutions{live: opts.ScrapeInterval}
	for _, st := range targets {
		if st.interval > t.res.live {
			t.res.live = st.interval
		}
	}
	// Demo data is synthetic and regenerated on every start, so it lives
	// apart from scraped history and without a write-ahead log.
	dir := filepath.Join(opts.DataDir, "tsdb")
	if opts.Demo != nil {
		dir = filepath.Join(opts.DataDir, "tsdb-demo")
		if err := resetDirs(dir); err != nil {
			cancel()
			return nil, err
		}
	}
	tiers, err := openTiers(dir, TierOptions{
		RawRetention: opts.RawRetention, MinuteRetention: opts.MinuteRetention, HourRetention: opts.HourRetention,
		WAL: opts.Demo == nil, Lateness: max(30*time.Second, 2*t.res.live), Logger: opts.Logger,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	tiers.now = t.now // a demo replay ages its data from the replay's end
	t.tiers = tiers
	t.db = tiers.raw()
	t.app = tiers.appendable(0)
	t.querier = newTieredQuerier(tiers, opts.Logger)
	t.res.tiers = tiers

	// The back-fill comes first: the TSDB head only takes samples up to an
	// hour older than its newest, so nothing live may be appended before it.
	if opts.Demo != nil {
		if err := t.startDemo(ctx, bg, opts.Demo, backfill); err != nil {
			_ = t.Close()
			return nil, err
		}
	}
	// The pool bounds the scrapes at once; keeping as many idle
	// connections per host spares a TCP handshake per scrape where many
	// targets share a host (exporters beside engines, a simulator).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cap(t.pool.sem)
	tr.MaxIdleConns = max(tr.MaxIdleConns, cap(t.pool.sem))
	client := &http.Client{Transport: tr}
	for i, st := range targets {
		if in := opts.Targets[i].Labels[opts.InstanceLabel]; in != "" {
			t.engines.set(in, st.url, client)
		}
		t.startLoop(bg, newScrapeLoop(st, client, t.app, t.status))
	}
	t.startDownsampler(bg)
	if opts.DCGM != "" {
		t.startDCGM(bg, newDCGMAPI())
	}
	t.startJoinWatch(bg)
	return t, nil
}

// startJoinWatch recomputes the GPU join every minute, so that the status
// board (and /readyz) says when GPUs stop joining their engines even while
// no page asks.
func (t *Telemetry) startJoinWatch(ctx context.Context) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(joinCacheFor)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				if _, _, err := t.gpuJoin(qctx); err != nil && ctx.Err() == nil {
					t.log.Debug("gpu join not computed", "err", err)
				}
				cancel()
			}
		}
	}()
}

// validLabelName reports whether s is a Prometheus label name that may
// appear bare in PromQL.
func validLabelName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != "" && !strings.HasPrefix(s, "__")
}

// startLoop schedules l in the scrape pool.
func (t *Telemetry) startLoop(ctx context.Context, l *scrapeLoop) {
	t.meter.addTarget()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.pool.run(ctx, l)
	}()
}

// probeRemote asks the remote server a trivial query so that Status says at
// once whether it is reachable.
func (t *Telemetry) probeRemote(ctx context.Context, rq *RemoteQuerier) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, _ = rq.Instant(ctx, "vector(1)", time.Now())
}

// Querier returns the PromQL querier of the deployment, for views that
// need expressions outside the catalog.
func (t *Telemetry) Querier() Querier { return t.querier }

// Status reports every metric source's health, sorted by name.
func (t *Telemetry) Status() []metrics.SourceStatus { return t.status.list() }

// WriteError returns why the embedded store cannot write (its disk is
// below the reserve, or the last commit failed), or nil when it can or
// in remote mode. It clears with the next commit that succeeds.
func (t *Telemetry) WriteError() error {
	if t.tiers == nil {
		return nil
	}
	if err := t.tiers.guard.check(); err != nil {
		return err
	}
	if err := t.tiers.guard.writeError(); err != nil {
		return fmt.Errorf("telemetry: the embedded store cannot write: %w", err)
	}
	return nil
}

// Close stops scraping and collection and closes the embedded TSDB.
func (t *Telemetry) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		t.wg.Wait()
		if t.dcgm != nil {
			t.dcgm.close()
		}
		if t.tiers != nil {
			t.closeErr = t.tiers.close()
		}
	})
	return t.closeErr
}

// scopesLookback is how far back Scopes looks for series: a model that
// reported anything in the last day is listed.
const scopesLookback = 24 * time.Hour

// Scopes returns every model and every model/instance with data, sorted by
// model, the model scope first. A scope is an instance of any engine the
// catalog knows, found by the engine's liveness gauge.
func (t *Telemetry) Scopes(ctx context.Context) ([]metrics.Scope, error) {
	out, _, err := t.listScopes(ctx)
	return out, err
}

// scopeSelectors resolves a scope's matchers, listing the model's instances
// when the scope is a whole model and joining GPUs through the detected or
// configured labels, and decides the scope's engine. A source whose GPU
// join cannot be computed is read without GPU metrics rather than failing
// the scope.
func (t *Telemetry) scopeSelectors(ctx context.Context, scope metrics.Scope) (metrics.Selectors, bool, EngineStatus, error) {
	if scope.Model == "" {
		return metrics.Selectors{}, false, EngineStatus{}, errors.New("telemetry: scope has no model")
	}
	scopes, engines, err := t.listScopes(ctx)
	if err != nil {
		return metrics.Selectors{}, false, EngineStatus{}, err
	}
	var instances []string
	if scope.Instance == "" {
		instances = instancesOf(scope, scopes)
	}
	es := t.engineStatus(scope, engines[scope], instancesOf(scope, scopes))
	join, refs, err := t.gpuJoin(ctx)
	if err != nil {
		t.log.Warn("gpu join unavailable; GPU metrics left out", "scope", scope.String(), "err", err)
	}
	sel, gpuOK := selectors(scope, t.opts.InstanceLabel, instances, join, scopeNamespaces(scope, refs))
	sel.ModelLabel = t.opts.ModelLabel
	return sel, gpuOK, es, nil
}

// scopeNamespaces returns the namespaces the scope's engines run in,
// sorted; none when their series carry no namespace.
func scopeNamespaces(scope metrics.Scope, engines []EngineRef) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range engines {
		if e.Model != scope.Model || (scope.Instance != "" && e.Instance != scope.Instance) || e.Namespace == "" || seen[e.Namespace] {
			continue
		}
		seen[e.Namespace] = true
		out = append(out, e.Namespace)
	}
	sort.Strings(out)
	return out
}
