package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// Scrape defaults and limits.
const (
	// DefaultScrapeInterval is how often a target is scraped when no
	// interval is configured.
	DefaultScrapeInterval = 5 * time.Second
	// DefaultScrapeTimeout bounds one scrape; it is also capped at the
	// target's interval.
	DefaultScrapeTimeout = 10 * time.Second
	// MaxScrapeBodyBytes is the largest exposition accepted from a target.
	// vLLM with every histogram is about 100 KiB; dcgm-exporter on an
	// eight-GPU node a few hundred KiB.
	MaxScrapeBodyBytes = 16 << 20
	// maxScrapeSamples bounds the samples taken from one scrape.
	maxScrapeSamples = 200_000
	// Reserved target labels that configure a target instead of labelling
	// its series, as in Prometheus.
	labelScrapeInterval = "__scrape_interval__"
	labelScrapeTimeout  = "__scrape_timeout__"
)

const acceptHeader = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"

// scrapeTarget is one endpoint with its resolved settings.
type scrapeTarget struct {
	url      string
	labels   labels.Labels // job, instance and the Target's own labels
	interval time.Duration
	timeout  time.Duration
}

// resolveTarget validates t and fills in job, instance, interval and timeout.
func resolveTarget(t Target, defInterval time.Duration) (scrapeTarget, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return scrapeTarget{}, fmt.Errorf("telemetry: target %q: not an http(s) URL", t.URL)
	}
	st := scrapeTarget{url: t.URL, interval: defInterval}
	if st.interval <= 0 {
		st.interval = DefaultScrapeInterval
	}
	st.timeout = min(DefaultScrapeTimeout, st.interval)
	b := labels.NewBuilder(labels.EmptyLabels())
	b.Set("job", "casebook")
	b.Set(model.InstanceLabel, hostPort(u))
	for k, v := range t.Labels {
		switch k {
		case labelScrapeInterval, labelScrapeTimeout:
			d, err := model.ParseDuration(v)
			if err != nil || d <= 0 {
				return scrapeTarget{}, fmt.Errorf("telemetry: target %s: label %s=%q is not a positive duration", t.URL, k, v)
			}
			if k == labelScrapeInterval {
				st.interval = time.Duration(d)
			} else {
				st.timeout = time.Duration(d)
			}
			continue
		}
		if k == labelEngine {
			continue // read by Open: the engine of the target's instance
		}
		if !model.LabelName(k).IsValidLegacy() || strings.HasPrefix(k, "__") {
			return scrapeTarget{}, fmt.Errorf("telemetry: target %s: %q is not a valid label name", t.URL, k)
		}
		b.Set(k, v)
	}
	if _, ok := t.Labels[labelScrapeTimeout]; !ok {
		st.timeout = min(DefaultScrapeTimeout, st.interval)
	}
	if st.timeout > st.interval {
		return scrapeTarget{}, fmt.Errorf("telemetry: target %s: scrape timeout %s is longer than the interval %s", t.URL, st.timeout, st.interval)
	}
	st.labels = b.Labels()
	return st, nil
}

// hostPort renders the URL's host as host:port, adding the scheme's default
// port, as Prometheus does for the instance label.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// cacheEntry remembers one exposed series of a target between scrapes.
type cacheEntry struct {
	ref      storage.SeriesRef
	lset     labels.Labels
	skip     bool   // a _created series, or one that was invalid
	lastSeen uint64 // scrape iteration that last exposed it
	live     bool   // has a sample newer than its last staleness marker
}

// scrapeLoop scrapes one target into an appendable, keeping the series
// references so that a steady-state scrape does no label work at all.
type scrapeLoop struct {
	target  scrapeTarget
	name    string
	client  *http.Client
	db      storage.Appendable
	status  *statusBoard
	maxBody int64

	mu     sync.Mutex // one scrape at a time
	cache  map[string]*cacheEntry
	iter   uint64
	symtab *labels.SymbolTable
}

// bodyPool holds the buffers scrape bodies are read into. A buffer kept
// by every target between its scrapes would hold the whole fleet's
// exposition text all the time (about 50 MB at 500 engines); pooled, there
// is about one buffer per scrape in flight.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer returned to bodyPool: a rare huge
// exposition is not kept for everyone.
const maxPooledBody = 8 << 20

func newScrapeLoop(t scrapeTarget, client *http.Client, db storage.Appendable, status *statusBoard) *scrapeLoop {
	return &scrapeLoop{
		target:  t,
		name:    "target " + t.url,
		client:  client,
		db:      db,
		status:  status,
		maxBody: MaxScrapeBodyBytes,
		cache:   make(map[string]*cacheEntry),
		symtab:  labels.NewSymbolTable(),
	}
}

func (l *scrapeLoop) scrapeAndReport(ctx context.Context, now time.Time) {
	err := l.scrape(ctx, now)
	if ctx.Err() != nil {
		return // shutting down; the last state stands
	}
	if err != nil {
		l.status.fail(l.name, err)
	} else {
		l.status.ok(l.name)
	}
}

// scrape fetches the target once and appends its samples at now. On any
// failure the series of the previous scrape get staleness markers, so
// queries stop showing the last value of a dead target.
func (l *scrapeLoop) scrape(ctx context.Context, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := now.UnixMilli()
	buf := bodyPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			bodyPool.Put(buf)
		}
	}()
	body, err := l.fetch(ctx, buf)
	if err == nil {
		err = l.appendBody(ctx, body, ts)
	}
	if err != nil {
		if serr := l.markAllStale(ctx, ts); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
	return nil
}

// fetch reads the target's body into buf and returns it.
func (l *scrapeLoop) fetch(ctx context.Context, buf *bytes.Buffer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.target.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.target.url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", fmt.Sprintf("%g", l.target.timeout.Seconds()))
	resp, err := l.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("scrape timed out after %s", l.target.timeout)
		}
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("scrape: server returned HTTP status %s", resp.Status)
	}
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, l.maxBody+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("scrape timed out after %s while reading the body", l.target.timeout)
		}
		return nil, fmt.Errorf("scrape: read body: %w", err)
	}
	if n > l.maxBody {
		return nil, fmt.Errorf("scrape: body exceeds the %d-byte limit", l.maxBody)
	}
	return buf.Bytes(), nil
}

// appendBody parses a text exposition and appends every float sample. It
// is all or nothing: a parse error rolls the whole scrape back.
func (l *scrapeLoop) appendBody(ctx context.Context, body []byte, ts int64) (err error) {
	l.iter++
	iter := l.iter
	app := l.db.Appender(ctx)
	defer func() {
		if err != nil {
			_ = app.Rollback()
		}
	}()
	p := textparse.NewPromParser(body, l.symtab, false)
	var (
		lset    labels.Labels
		samples int
		ignored int
	)
	for {
		et, perr := p.Next()
		if errors.Is(perr, io.EOF) {
			break
		}
		if perr != nil {
			return fmt.Errorf("parse exposition: %w", perr)
		}
		if et != textparse.EntrySeries {
			continue // HELP, TYPE, comments; native histograms are not exposed as text
		}
		raw, tp, v := p.Series()
		e, ok := l.cache[string(raw)]
		if !ok {
			p.Labels(&lset)
			e = &cacheEntry{}
			e.lset, e.skip = l.targetLabels(lset)
			l.cache[string(raw)] = e
		}
		if e.skip {
			continue
		}
		samples++
		if samples > maxScrapeSamples {
			return fmt.Errorf("scrape: more than %d samples", maxScrapeSamples)
		}
		t := ts
		if tp != nil {
			t = *tp
		}
		ref, aerr := app.Append(e.ref, e.lset, t, v)
		switch {
		case aerr == nil:
			e.ref = ref
		case errors.Is(aerr, storage.ErrOutOfOrderSample), errors.Is(aerr, storage.ErrDuplicateSampleForTimestamp),
			errors.Is(aerr, storage.ErrOutOfBounds), errors.Is(aerr, storage.ErrTooOldSample):
			ignored++
		default:
			return fmt.Errorf("append %s: %w", e.lset, aerr)
		}
		e.lastSeen = iter
		e.live = true
	}
	// Series that the previous scrape exposed and this one did not vanish
	// now: a staleness marker ends them at once.
	for k, e := range l.cache {
		if e.skip {
			if iter-e.lastSeen > 100 {
				delete(l.cache, k)
			}
			continue
		}
		if e.lastSeen == iter {
			continue
		}
		if e.live {
			if err := l.appendStale(app, e, ts); err != nil {
				return err
			}
			e.live = false
		}
		if iter-e.lastSeen > 100 {
			delete(l.cache, k)
		}
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// targetLabels merges the target's labels into an exposed series. The
// series' own labels win (honor_labels), so a dcgm-exporter series keeps
// the pod it reports. skip is true for series to drop.
func (l *scrapeLoop) targetLabels(lset labels.Labels) (labels.Labels, bool) {
	name := lset.Get(labels.MetricName)
	if name == "" || strings.HasSuffix(name, "_created") {
		return labels.EmptyLabels(), true
	}
	b := labels.NewBuilder(lset)
	l.target.labels.Range(func(tl labels.Label) {
		if lset.Get(tl.Name) == "" {
			b.Set(tl.Name, tl.Value)
		}
	})
	return b.Labels(), false
}

func (l *scrapeLoop) appendStale(app storage.Appender, e *cacheEntry, ts int64) error {
	ref, err := app.Append(e.ref, e.lset, ts, math.Float64frombits(value.StaleNaN))
	switch {
	case err == nil:
		e.ref = ref
	case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrDuplicateSampleForTimestamp),
		errors.Is(err, storage.ErrOutOfBounds), errors.Is(err, storage.ErrTooOldSample):
	default:
		return fmt.Errorf("append staleness marker %s: %w", e.lset, err)
	}
	return nil
}

// markAllStale ends every live series of the target, after a failed scrape.
func (l *scrapeLoop) markAllStale(ctx context.Context, ts int64) error {
	app := l.db.Appender(ctx)
	n := 0
	for _, e := range l.cache {
		if e.skip || !e.live {
			continue
		}
		if err := l.appendStale(app, e, ts); err != nil {
			_ = app.Rollback()
			return err
		}
		e.live = false
		n++
	}
	if n == 0 {
		return app.Rollback()
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit staleness markers: %w", err)
	}
	return nil
}

// handlerTransport serves HTTP requests from an http.Handler in-process, so
// the demo simulator is scraped through exactly the code path of a real
// target without opening a port.
type handlerTransport struct{ h http.Handler }

// RoundTrip implements http.RoundTripper.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := recorders.Get().(*recorder)
	rec.reset()
	t.h.ServeHTTP(rec, req)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", rec.code, http.StatusText(rec.code)),
		StatusCode:    rec.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header.Clone(), // the recorder is reused once the body is closed
		Body:          &recordedBody{Reader: bytes.NewReader(rec.body.Bytes()), rec: rec},
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

type recorder struct {
	header http.Header
	body   bytes.Buffer
	code   int
	wrote  bool
}

func newRecorder() *recorder { return &recorder{header: make(http.Header), code: http.StatusOK} }

// recorders keeps the recorders of in-process scrapes: a simulated fleet
// is scraped hundreds of times a second, and a body buffer grown afresh
// for each would be most of what the console allocates.
var recorders = sync.Pool{New: func() any { return newRecorder() }}

func (r *recorder) reset() {
	clear(r.header)
	r.body.Reset()
	r.code, r.wrote = http.StatusOK, false
}

// recordedBody is a recorded response's body; closing it returns the
// recorder to the pool, so it must not be read after Close.
type recordedBody struct {
	*bytes.Reader
	rec *recorder
}

func (b *recordedBody) Close() error {
	if b.rec != nil {
		recorders.Put(b.rec)
		b.rec = nil
	}
	return nil
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
