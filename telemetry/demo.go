package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
)

// DemoSource is an in-process cluster (the demo's simulator): the
// embedded mode back-fills its history, then scrapes its endpoints through
// its Handler while it runs with the wall clock.
type DemoSource interface {
	// Handler serves the cluster's /metrics endpoints.
	Handler() http.Handler
	// Targets are the endpoints to scrape: URL is a path on Handler, and
	// Labels what a Kubernetes scrape of the same cluster would add.
	Targets() []Target
	// Backfill emits every series' value from `from` to `to` at `step`,
	// as scrapes at those instants would have seen it, and leaves the
	// cluster at `to`.
	Backfill(from, to time.Time, step time.Duration, emit func(DemoSample) error) error
	// Run advances the cluster with the wall clock until ctx ends.
	Run(ctx context.Context, tick time.Duration)
}

// DemoSample is one back-filled series value.
type DemoSample struct {
	// Key is a stable unique id of the series.
	Key string
	// Labels are the series' own labels, __name__ included, as its
	// endpoint exposes them; the slice may be reused after emit returns.
	Labels []Label
	T      time.Time
	V      float64
}

// Label is one name/value pair of a series.
type Label struct{ Name, Value string }

// Demo mode settings.
const (
	// demoBackfill is how much history demo mode back-fills: a week, so
	// that baselines and weekly seasonality work at once.
	demoBackfill = 7 * 24 * time.Hour
	// demoBackfillStep is the resolution of back-filled data.
	demoBackfillStep = time.Minute
	// demoFineTail is the back-fill's last stretch, written at the scrape
	// interval. The overview reads an hour of history with rate windows
	// sized for the coarsest data they touch; with two fine hours, the
	// first hour of a console that has just started shows the one-minute
	// windows of live data, not four-minute windows of 1-minute data that
	// smear a burst of a few seconds over four readings.
	demoFineTail = 2 * time.Hour
	// demoBaseURL is the pseudo host the simulator is scraped at. Requests
	// never leave the process: a RoundTripper hands them to its handler.
	demoBaseURL = "http://casebook-sim"
	// demoTick is how often the simulator advances to the wall clock.
	demoTick = time.Second
	// backfillFlushSpan is how much back-filled history the TSDB heads
	// hold before the back-fill has them written to blocks. Left to the
	// end, a week of a 500-engine fleet sits in memory: over ten
	// gigabytes.
	backfillFlushSpan = 6 * time.Hour
	// backfillBatch is how many samples one back-fill commit holds.
	backfillBatch = 100_000
)

// Jobs of the demo targets, as a Prometheus scrape config would name them.
const (
	JobEngine  = "vllm"
	JobGPU     = "dcgm-exporter"
	JobGateway = "gateway"
)

// startDemo back-fills the demo cluster's history up to now and starts
// scraping it live while it advances with the wall clock. With
// Options.DemoUntil it back-fills up to that instant and stops there.
func (t *Telemetry) startDemo(ctx, bg context.Context, src DemoSource, backfill time.Duration) error {
	now := t.now().UTC().Truncate(demoBackfillStep)
	replay := !t.opts.DemoUntil.IsZero()
	from := now.Add(-backfill)
	client := &http.Client{Transport: handlerTransport{h: src.Handler()}}

	var loops []*scrapeLoop
	for _, tg := range src.Targets() {
		tg.URL = demoBaseURL + tg.URL
		st, err := resolveTarget(tg, t.opts.ScrapeInterval)
		if err != nil {
			return err
		}
		loops = append(loops, newScrapeLoop(st, client, t.app, t.status))
		if j := tg.Labels["job"]; j != JobGPU && j != JobGateway {
			t.engines.set(tg.Labels[GPUInstanceLabel], tg.URL, client)
		}
	}
	fams, err := readFamilies(ctx, client, loops)
	if err != nil {
		return fmt.Errorf("telemetry: demo: %w", err)
	}
	// Head compaction would compete with the back-fill for the CPU; it
	// runs afterwards, in the background.
	t.db.DisableCompactions()
	began := time.Now()
	dst, flush, done := t.backfillTarget(now)
	fineFrom := now.Add(-demoFineTail)
	if fineFrom.Before(from) {
		fineFrom = from
	}
	spans := []backfillSpan{
		{from: from, to: fineFrom, step: demoBackfillStep},
		{from: fineFrom.Add(t.opts.ScrapeInterval), to: now, step: t.opts.ScrapeInterval},
	}
	n, err := backfillCluster(ctx, dst, src, spans, fams, hostPortOf(demoBaseURL), flush)
	if err == nil {
		// The last stretch, aggregated while the heads still hold it.
		err = flush(ctx, now.UnixMilli()+1)
	}
	t.db.EnableCompactions()
	if err == nil {
		err = done()
	}
	if err != nil {
		return fmt.Errorf("telemetry: demo back-fill: %w", err)
	}
	t.log.Info("demo history back-filled", "from", from, "to", now, "samples", n, "took", time.Since(began).Round(time.Millisecond))
	t.res.coarse = demoBackfillStep
	t.res.coarseEnd = fineFrom
	t.backfilledTo = now
	t.status.ok("demo simulator")
	if replay {
		return nil
	}

	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		src.Run(bg, demoTick)
	}()
	for _, l := range loops {
		t.startLoop(bg, l)
	}
	return nil
}

// families is what one read of the demo targets tells about the series
// they expose, so that back-filled series get exactly the labels the live
// scrape will give them.
type families struct {
	// jobs maps a metric name to the job of the target exposing it.
	jobs map[string]string
	// floatLabel maps a series name to the label whose value the text
	// parser normalises to OpenMetrics float form: "le" of histogram
	// buckets, "quantile" of summaries ("5" is stored as "5.0").
	floatLabel map[string]string
}

// readFamilies reads each target once and records, for every metric name,
// its target's job and whether the parser normalises one of its labels.
func readFamilies(ctx context.Context, client *http.Client, loops []*scrapeLoop) (families, error) {
	f := families{jobs: map[string]string{}, floatLabel: map[string]string{}}
	for _, l := range loops {
		job := l.target.labels.Get("job")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.target.url, nil)
		if err != nil {
			return f, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return f, fmt.Errorf("read %s: %w", l.target.url, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxScrapeBodyBytes))
		resp.Body.Close()
		if err != nil {
			return f, fmt.Errorf("read %s: %w", l.target.url, err)
		}
		p := textparse.NewPromParser(body, labels.NewSymbolTable(), false)
		var lset labels.Labels
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return f, fmt.Errorf("parse %s: %w", l.target.url, err)
			}
			switch et {
			case textparse.EntryType:
				name, typ := p.Type()
				switch typ {
				case model.MetricTypeHistogram:
					f.floatLabel[string(name)+"_bucket"] = model.BucketLabel
				case model.MetricTypeSummary:
					f.floatLabel[string(name)] = model.QuantileLabel
				}
			case textparse.EntrySeries:
				p.Labels(&lset)
				f.jobs[lset.Get(labels.MetricName)] = job
			}
		}
	}
	return f, nil
}

// jobForName returns the job of a metric name, falling back to the naming
// conventions for families the first read did not show (series that only
// appear later, such as fault-driven ones).
func (f families) jobForName(name string) string {
	if j, ok := f.jobs[name]; ok {
		return j
	}
	switch {
	case strings.HasPrefix(name, "DCGM_"):
		return JobGPU
	case strings.HasPrefix(name, "gateway_"):
		return JobGateway
	default:
		return JobEngine
	}
}

func hostPortOf(raw string) string {
	st, err := resolveTarget(Target{URL: raw}, DefaultScrapeInterval)
	if err != nil {
		return ""
	}
	return st.labels.Get("instance")
}

// backfillRef is the storage reference and labels of one simulated series.
type backfillRef struct {
	ref  storage.SeriesRef
	lset labels.Labels
}

// backfillCluster runs the simulator through spans and appends every
// sample, labelled exactly as the live scrape will label it (the series'
// own labels plus job and instance), in commits of backfillBatch samples.
// The simulator and the TSDB work in a pipeline: while one batch is being
// appended and committed, the simulator fills the next. Every
// backfillFlushSpan of appended history it calls flush (unless nil), with
// every sample before through appended, to aggregate and write what the
// TSDB heads hold to blocks. It returns the number of samples appended.
func backfillCluster(ctx context.Context, db storage.Appendable, c DemoSource, spans []backfillSpan, fams families, instance string, flush func(ctx context.Context, through int64) error) (int, error) {
	batches := make(chan *backfillBatchBuf, 2)
	free := make(chan *backfillBatchBuf, 3)
	for range 3 {
		free <- &backfillBatchBuf{}
	}
	appendErr := make(chan error, 1)
	go func() {
		appendErr <- appendBatches(ctx, db, batches, free, flush)
	}()

	refs := make(map[string]*backfillRef)
	total := 0
	var b labels.ScratchBuilder
	cur := <-free
	send := func() error {
		select {
		case batches <- cur:
		case err := <-appendErr:
			appendErr <- err
			return fmt.Errorf("append stopped: %w", err)
		}
		select {
		case cur = <-free:
		case err := <-appendErr:
			appendErr <- err
			return fmt.Errorf("append stopped: %w", err)
		}
		return nil
	}
	emit := func(s DemoSample) error {
		r, ok := refs[s.Key]
		if !ok {
			var err error
			if r, err = fams.newBackfillRef(&b, s, instance); err != nil {
				return err
			}
			refs[s.Key] = r
		}
		cur.refs = append(cur.refs, r)
		cur.ts = append(cur.ts, s.T.UnixMilli())
		cur.vs = append(cur.vs, s.V)
		total++
		if len(cur.refs) >= backfillBatch {
			if err := ctx.Err(); err != nil {
				return err
			}
			return send()
		}
		return nil
	}
	var err error
	for _, sp := range spans {
		if sp.to.Before(sp.from) {
			continue
		}
		if err = c.Backfill(sp.from, sp.to, sp.step, emit); err != nil {
			break
		}
	}
	if err == nil && len(cur.refs) > 0 {
		err = send()
	}
	close(batches)
	if aerr := <-appendErr; aerr != nil && err == nil {
		err = aerr
	}
	if err != nil {
		return total, err
	}
	return total, nil
}

// backfillSpan is one stretch of a back-fill and its resolution; spans
// follow each other in time.
type backfillSpan struct {
	from, to time.Time
	step     time.Duration
}

// backfillBatchBuf is one batch of back-filled samples on its way to the
// TSDB.
type backfillBatchBuf struct {
	refs []*backfillRef
	ts   []int64
	vs   []float64
}

// appendBatches appends and commits every batch it receives, handing the
// buffers back for reuse, and calls flush every backfillFlushSpan of
// history. After an error it drains the channel.
func appendBatches(ctx context.Context, db storage.Appendable, batches <-chan *backfillBatchBuf, free chan<- *backfillBatchBuf, flush func(context.Context, int64) error) error {
	var failed error
	flushedTo := int64(math.MinInt64)
	for bb := range batches {
		if failed == nil {
			failed = appendBatch(ctx, db, bb)
		}
		if failed == nil && flush != nil && len(bb.ts) > 0 {
			// Batches follow the simulated clock, so the last sample
			// is the newest.
			newest := bb.ts[len(bb.ts)-1]
			switch {
			case flushedTo == math.MinInt64:
				flushedTo = newest
			case newest-flushedTo >= backfillFlushSpan.Milliseconds():
				// Samples at newest may continue in the next batch.
				failed = flush(ctx, newest)
				flushedTo = newest
			}
		}
		bb.refs, bb.ts, bb.vs = bb.refs[:0], bb.ts[:0], bb.vs[:0]
		free <- bb
	}
	return failed
}

func appendBatch(ctx context.Context, db storage.Appendable, bb *backfillBatchBuf) error {
	app := db.Appender(ctx)
	for i, r := range bb.refs {
		ref, err := app.Append(r.ref, r.lset, bb.ts[i], bb.vs[i])
		if err != nil {
			_ = app.Rollback()
			return fmt.Errorf("append %s at %s: %w", r.lset, msTime(bb.ts[i]).Format(time.RFC3339), err)
		}
		r.ref = ref
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// newBackfillRef builds the stored labels of a simulated series: its own
// labels, normalised as the text parser normalises them, plus the job and
// instance the live scrape adds.
func (f families) newBackfillRef(b *labels.ScratchBuilder, s DemoSample, instance string) (*backfillRef, error) {
	b.Reset()
	name := ""
	for _, l := range s.Labels {
		if l.Name == labels.MetricName {
			name = l.Value
		}
	}
	floatLabel, ok := f.floatLabel[name]
	if !ok && strings.HasSuffix(name, "_bucket") {
		floatLabel = model.BucketLabel
	}
	hasJob, hasInstance := false, false
	for _, l := range s.Labels {
		v := l.Value
		if l.Name == floatLabel && floatLabel != "" {
			if x, err := strconv.ParseFloat(v, 64); err == nil {
				v = labels.FormatOpenMetricsFloat(x)
			}
		}
		b.Add(l.Name, v)
		switch l.Name {
		case labels.MetricName:
			name = l.Value
		case "job":
			hasJob = true
		case "instance":
			hasInstance = true
		}
	}
	if name == "" {
		return nil, fmt.Errorf("series %q has no metric name", s.Key)
	}
	if !hasJob {
		b.Add("job", f.jobForName(name))
	}
	if !hasInstance {
		b.Add("instance", instance)
	}
	b.Sort()
	return &backfillRef{lset: b.Labels()}, nil
}
