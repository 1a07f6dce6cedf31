// Package telemetry is Casebook's metric source. It answers the console's
// three questions (which scopes exist, what a chart over a time range shows,
// what a scope looked like at an instant) with the catalog's PromQL, the
// same expressions in every mode.
//
// # Modes
//
// Open picks the mode from its Options:
//
//   - Remote (PrometheusURL set): queries go to any Prometheus-compatible API
//     (Prometheus, Thanos, Mimir, VictoriaMetrics) through client_golang's
//     api/prometheus/v1. Each query has a timeout; warnings and info
//     annotations are logged once per distinct text and never fail a query.
//     A server that cannot be reached is a failing source in Status and a
//     clear error from the call, logged once, not per query.
//   - Embedded (the default): a Prometheus TSDB in DataDir/tsdb, fed by
//     Casebook's own scraper (Targets) and, with DCGM set, by the DCGM
//     collector, and queried by the Prometheus PromQL engine in process
//     (at most 20 million samples and 30 s per query, 3-minute lookback).
//   - Demo (Demo set): the embedded mode scraping the in-process simulator
//     (telemetry/sim). A week of its history is back-filled at 1-minute
//     resolution first, so baselines work at once; then it is scraped live
//     every ScrapeInterval while it advances with the wall clock. Demo data
//     lives in DataDir/tsdb-demo, is regenerated on every start and is never
//     mixed with scraped history.
//
// The simulator is scraped through an http.RoundTripper that hands each
// request to its handler in process: the scraper runs exactly the code path
// of a real target (HTTP status, body limit, timeout, parser), with no port
// opened and nothing for another process to reach.
//
// # Scraping
//
// Each target is scraped every interval with a timeout (default 5 s and
// min(10 s, interval); the reserved target labels __scrape_interval__ and
// __scrape_timeout__ override them per target). The body is limited to
// MaxScrapeBodyBytes and parsed as the Prometheus text format; `_created`
// series are ignored. A scrape is all or nothing: a timeout, an HTTP error,
// an oversized or unparsable body appends nothing, puts staleness markers on
// every series of the target, and turns its status to failing ("what is
// wrong and since when"), logged once per state change. A series that a
// target stops exposing gets a staleness marker at once.
//
// # Labels
//
// The scraper adds job, instance (host:port of the URL) and the Target's
// Labels to every series that does not carry them itself (Prometheus'
// honor_labels): a dcgm-exporter series keeps the pod it reports. vLLM
// series are identified by model_name and the instance label (Options
// InstanceLabel, default "pod", set as a target label). GPU series are
// joined to instances through their own pod label, as dcgm-exporter in
// Kubernetes mode writes it. Demo targets use the jobs vllm, dcgm-exporter
// and gateway and the instance casebook-sim:80; back-filled series carry
// exactly the labels the live scrape gives them, so a chart runs through the
// seam without a break.
//
// A scope's selectors: an instance selects engine series with
// model_name="M",pod="P" and GPU series with pod="P"; a model selects engine
// series with model_name="M" and GPU series with pod=~"P1|P2" over the
// model's instances (GPU metrics are left out when the model has none, since
// an empty matcher would select every GPU). Values are quoted as PromQL
// strings and regex-escaped where they go into a regex.
//
// # Rate windows
//
// Every rate must see at least two samples at every resolution in its
// range: live scrapes every ScrapeInterval, back-fill every minute. As with
// Grafana's $__rate_interval, the window of a range query is
// max(step + resolution, 4 x resolution), resolution being the coarsest data
// any of its windows reads. An instant "current" value uses one minute where
// live data is dense and widens to four samples of the coarser data where it
// is not. In remote mode the resolution is ScrapeInterval, which should be
// set to the remote's scrape interval (default 15 s there).
//
// # Snapshots
//
// Snapshot follows the contract in DESIGN.md: current holds every catalog
// metric at the instant, history 60 points at a 1-minute step over
// [at-65m, at-6m]. Values that are not finite (a ratio over an idle minute)
// are dropped so the field is missing rather than wrong; small overshoots of
// a metric's bounds from rate extrapolation are clamped, large ones dropped.
//
// # DCGM
//
// With DCGM "embedded" or "host:port" the collector watches the catalog's
// GPU fields, including the profiling fields (SM, tensor and DRAM active)
// where the GPU supports them, once a second, and writes them under
// dcgm-exporter's metric names and labels, skipping DCGM's blank sentinels.
// The go-dcgm binding is built on linux with cgo and loads libdcgm.so.4 at
// run time; without it Open still succeeds and Status reports the DCGM
// source as failing with what to install.
package telemetry
