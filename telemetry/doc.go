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
//   - Embedded (the default): Prometheus TSDBs in DataDir (raw, 1-minute
//     and 1-hour tiers, see Tiers), fed by Casebook's own scraper
//     (Targets) and, with DCGM set, by the DCGM collector, and queried by
//     the Prometheus PromQL engine in process (at most 20 million samples
//     and 30 s per query, 3-minute lookback plus the tier's resolution).
//   - Demo (Demo set): the embedded mode scraping an in-process cluster,
//     a DemoSource (the console hands it the simulator of telemetry/sim
//     through package demo; telemetry does not build it). A week of its history is back-filled at 1-minute
//     resolution first, so baselines work at once; then it is scraped live
//     every ScrapeInterval while it advances with the wall clock. Demo data
//     lives in DataDir/tsdb-demo (and -1m, -1h), is regenerated on every
//     start and is never mixed with scraped history.
//
// The demo cluster is scraped through an http.RoundTripper that hands each
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
// Scrapes run in a pool of Options.ScrapeConcurrency workers. Each target
// scrapes at a fixed offset within its interval (a hash of its URL), so a
// fleet's targets spread over the interval instead of fetching at once. A
// scrape still running, or still waiting for a worker, when its next slot
// comes skips that slot, and so does a DCGM collection still running at
// the next second: when appends or the pool fall behind, the schedule
// stretches instead of piling up, and Storage reports the skips.
//
// # Labels
//
// The scraper adds job, instance (host:port of the URL) and the Target's
// Labels to every series that does not carry them itself (Prometheus'
// honor_labels): a dcgm-exporter series keeps the pod it reports. vLLM
// series are identified by model_name and the instance label (Options
// InstanceLabel, default "pod", set as a target label). GPU series are
// joined to instances through the label that names the engine's pod, found
// in the data (DetectGPUJoin) unless Options name it: exported_pod behind a
// ServiceMonitor that does not honour the exporter's labels (pod is then
// the exporter's own pod), pod with honor_labels, pod_name with
// dcgm-exporter's --use-old-namespace; the paired namespace label joins too
// when the engines' series carry a namespace, so that equal pod names in
// two namespaces stay apart. The join is recomputed every minute and shown
// as the "gpu join" source, failing while engines lack GPUs. Demo targets use the jobs vllm, dcgm-exporter
// and gateway and the instance casebook-sim:80; back-filled series carry
// exactly the labels the live scrape gives them, so a chart runs through the
// seam without a break.
//
// A scope's selectors: an instance selects engine series with
// model_name="M",pod="P" and GPU series with <join label>="P"; a model
// selects engine series with model_name="M" and GPU series with
// <join label>=~"P1|P2" over the model's instances (GPU metrics are left out
// when the model has none or nothing joins, since an empty matcher would
// select every GPU).
//
// # Engines
//
// Scopes lists every instance of every engine the catalog knows, by each
// engine's liveness gauge, in one query that marks which engine answered
// (llama-server's model copied into model_name from Options.ModelLabel).
// A scope is read with the catalog entries of its engine
// (metrics.Metric.ForEngine): the one its series name, or the one set by
// Options.EngineOverrides or a target's __engine__ label. A scope with two
// engines' series, or none known, reads no engine metric and its
// EngineStatus says why; a metric its engine lacks is left out of the
// snapshot and named, with the reason, in Snapshot.Absent.
//
// # Coverage
//
// Catalog metrics name their alternatives (vLLM renamed several between
// releases; other engines have their own names; dcgm-exporter's default
// counters lack the profiling fields).
// Coverage lists, per scope or for the whole source, the metrics the source
// computes and through which series, and the ones it cannot with the reason;
// the storage and scope pages show it. EngineInfo reads vLLM's
// cache_config_info (CacheConfig fields, matched by instance: the metric has
// no model_name) and max_model_len from the engine's /v1/models. Values are quoted as PromQL
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
// metric at the instant, history 65 points at a 1-minute step on whole
// minutes, the last one the whole minute at or before at-1m: an hour of
// baseline and the five minutes before the current one, which show what
// moved first. Values that are not finite (a ratio over an idle minute)
// are dropped so the field is missing rather than wrong; small overshoots of
// a metric's bounds from rate extrapolation are clamped, large ones dropped.
//
// Fleet reads every scope's snapshot at once for the overview: one instant
// and one range query per catalog metric and aggregation level (by
// model_name and the instance label, by model_name, or GPUs by the join
// labels), so the number of queries does not grow with the fleet. A
// reading is shared by every reader for FleetCacheFor, and served for up
// to FleetStaleFor while a newer one is read in the background (after a
// rest of twice the last reading's duration, so that refreshing it takes
// at most a third of the time); live scope pages read it too, and past
// windows take their snapshots from it while it is that recent
// (CachedFleet). History points lie on whole minutes so that a reading
// evaluates only the minutes its predecessor had not settled. FleetRange
// reads a span of every scope's series the same way, for the detector.
// The scope listing (every engine whose liveness gauge reported in the
// last day) is read at hourly points over the day, so the tiered store
// answers it from its hourly tier, not a day of raw samples. It is shared
// for FleetCacheFor too, and served for up to a minute while a newer one
// is read in the background.
//
// Range and Snapshot's history keep the settled points of each query in a
// range cache (instants aligned to multiples of the step), so a refresh
// evaluates only the unsettled tail. In embedded mode a step of a minute
// or less (live windows up to 6 h, snapshot and fleet histories) reads
// the raw tier, and its points settle after a minute or three scrape
// intervals; longer steps, and every step in remote mode, after five
// minutes or one step.
//
// # Tiers
//
// The embedded store is three Prometheus TSDBs: raw samples in
// DataDir/tsdb (kept 24 h), 1-minute aggregates in DataDir/tsdb-1m (30
// days) and 1-hour aggregates in DataDir/tsdb-1h (365 days); Options set
// other retentions. A downsampler writes the 1-minute tier from raw data
// and the 1-hour tier from the 1-minute tier as data arrives: an interval
// (end-res, end] is aggregated once it is complete (30 s or two scrape
// intervals after its end for raw data; once the 1-minute tier covers the
// hour for hourly data) and stored at its end, so an aggregate never holds
// data from after its timestamp. Samples that reach the raw tier after
// their interval was aggregated are not in the aggregates. The raw tier's
// retention waits for the downsampler: raw data is dropped only once it is
// aggregated (a raw TSDB from before the tiers is aggregated first).
//
// The hourly tier keeps nothing in memory: after every hour it aggregates,
// it writes its head to a block of that hour and empties it, so its series
// (as many as the 1-minute tier's) cost memory only for the moment of the
// write, and the TSDB's compaction merges the hours into longer blocks,
// encoding each series' samples again into full chunks (the TSDB's own
// compaction would keep a one-sample chunk per hour). A counter's value
// before a reset, which sits inside the hour whose block is already
// written, goes in out of order and into a block that compaction merges
// with that hour's. The raw tier cuts a block every 30 minutes, the
// 1-minute tier every two hours (a full chunk of minutes): a head holds
// between a half and one and a half of those spans, in memory and in
// mapped files. Raw blocks are never merged: they live a day, and a merge
// would map every block it reads into the process's resident memory.
//
// Faults: every write commits only while the data directory's file system
// has DiskReserve free (256 MiB by default), so a full disk is a clear
// ErrDiskFull and a gap, never a torn write-ahead log; a wall clock that
// jumps back stamps samples older than the stored ones, which are refused
// as out of order until the clock catches up; a process killed at any
// moment, mid-compaction included, reopens with every acknowledged sample
// and tiers that equal an uninterrupted run (TestTierFullDisk,
// TestTierClockJumps, TestTierCrashMidWrite).
//
// A series keeps its name and labels in every tier, so the catalog's
// PromQL reads any tier unchanged:
//
//   - a counter (a name ending in _total, _bucket, _sum, _count or
//     _created, and DCGM's energy and replay counters) keeps its last
//     value per interval, and also the last value before each reset inside
//     an interval, at its own time. The aggregate then drops wherever the
//     raw series drops, so increase(), rate() and histogram_quantile() over
//     any tier see the same increase as over raw data;
//   - a gauge keeps its mean under its own name, and its extremes and
//     sample count in extra series named like promrules' recording rules
//     (level:metric:operation, with the tier appended): <name>:min1m,
//     <name>:max1m and <name>:count1m in the 1-minute tier, <name>:min1h,
//     <name>:max1h and <name>:count1h in the 1-hour tier. The hourly mean
//     is the minute means weighted by their counts, so it equals the mean
//     of the raw samples.
//
// The downsampler persists its watermark per tier (the end of the last
// aggregated interval, in the tier's directory) after committing the
// aggregates, and resumes there after a restart; an interval aggregated
// again after a crash between the two writes yields the same samples,
// which the TSDB ignores.
//
// Queries pick the coarsest tier their time span allows (raw up to the raw
// retention, then 1-minute up to its retention, then 1-hour), or the
// 1-hour tier for a range at an hourly step whatever its span, and stitch
// the tiers by time through one storage.Queryable: a coarser tier serves
// everything up to its watermark, a finer one only what comes after, and
// where a tier's data has expired the next coarser one takes over. Each
// tier answers only for its own span, so no sample is read twice. Rate
// windows follow the rule above with the resolution of the coarsest data
// read (over hourly aggregates, which carry no scrape jitter, step + one
// hour: two aggregates), and the lookback of instant selectors grows by
// the resolution, so a gauge read from the 1-hour tier finds its hourly
// mean.
//
// Demo mode back-fills history older than the raw retention straight into
// the 1-minute tier (it is one-minute data already, stored as one-sample
// aggregates), the rest into the raw tier. Every six hours of history it
// has the downsampler aggregate what it wrote (the 1-minute tier from the
// raw day, the 1-hour tier from the 1-minute one) while the TSDB heads
// still hold it, then writes the heads to blocks: aggregating the week
// afterwards would read it back from the block files.
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
