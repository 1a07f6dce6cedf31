package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/diagnose/forecast"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// Source is what the watcher reads from the telemetry.
// *telemetry.Telemetry implements it.
type Source interface {
	Scopes(ctx context.Context) ([]metrics.Scope, error)
	Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)
	// FleetRange is Range for every listed scope at once.
	FleetRange(ctx context.Context, ids []string, r metrics.Range) (map[metrics.Scope][]metrics.Series, error)
}

// Opener opens an incident through the console's one incident path.
// *incident.Service implements it.
type Opener interface {
	Open(ctx context.Context, tr incident.Trigger) (store.Incident, bool, error)
}

// Options configures a Watcher. Zero values mean the defaults documented on
// each field.
type Options struct {
	Source Source // required
	Opener Opener // required
	// Interval is how often Run evaluates (default 1 min).
	Interval time.Duration
	// Step is the resolution the series are read at (default 1 min).
	Step time.Duration
	// History is how much past data a scope's first round reads to warm
	// its detector up (default 7 days).
	History time.Duration
	// Fresh is how recent an alert of the warm-up must be to be acted on
	// (default Consecutive+2 steps).
	Fresh time.Duration
	// JoinWindow is how long after an incident's minute further metrics
	// of the same scope join it instead of opening another (default 5 min).
	JoinWindow time.Duration
	// Consecutive is how many points in a row out of band raise an alert
	// (default 3).
	Consecutive int
	// Corroborate, when positive, holds back an incident whose alerts
	// all belong to one dimension (latency, throughput, utilisation,
	// quality): it opens once a metric of another dimension alerts too,
	// or once the alerts have lasted this long, and not at all if they
	// all return to their bands first. A fault moves its mechanism and
	// its symptom together (a slower clock and a longer TPOT, a full KV
	// cache and a longer queue), while the metrics of one dimension move
	// together by construction (an end-to-end latency contains the decode
	// time), so they do not corroborate each other. Zero opens an
	// incident for every alert. The metric alerts themselves still go to
	// the Alertmanager.
	Corroborate time.Duration
	// Metrics are the catalog ids watched (default metrics.IDs()).
	Metrics []string
	// Detector configures each scope's detector; its Scope and
	// Consecutive are set by the watcher.
	Detector forecast.DetectorOptions
	// BaseURL prefixes incident links ("http://127.0.0.1:8080").
	BaseURL string
	// Alertmanager receives the alerts when set (its base URL).
	Alertmanager *Alertmanager
	Logger       *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.Step <= 0 {
		o.Step = time.Minute
	}
	if o.History <= 0 {
		o.History = 7 * 24 * time.Hour
	}
	if o.Consecutive <= 0 {
		o.Consecutive = 3
	}
	if o.Fresh <= 0 {
		o.Fresh = time.Duration(o.Consecutive+2) * o.Step
	}
	if o.JoinWindow <= 0 {
		o.JoinWindow = 5 * time.Minute
	}
	if len(o.Metrics) == 0 {
		o.Metrics = metrics.IDs()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	return o
}

// Watcher is the serve-side detector. Round and Run must not be called
// concurrently; the read accessors are safe at any time.
type Watcher struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	scopes map[metrics.Scope]*scopeState
	// resolved are this round's resolved alerts, for the Alertmanager.
	resolved []Active

	scopesErr bool // the last Scopes call failed (logged once)

	last RoundReport // the last round Run finished (under mu)
}

// scopeState is what the watcher keeps per scope.
type scopeState struct {
	det      *forecast.Detector
	next     time.Time // first minute not yet fed
	warm     bool      // the warm-up read is done
	lastSeen time.Time // last round the scope was listed
	gone     bool      // missing from the last Scopes answer (logged once)
	readErr  bool      // the last read failed (logged once)
	firing   map[string]*Active
	incident *episode // the latest incident of the scope
	// pendingSince is the first minute of alerts awaiting corroboration.
	pendingSince time.Time
}

// episode is an incident the detector opened.
type episode struct {
	id     int64
	url    string
	minute time.Time
}

// Active is one firing (or just resolved) metric alert.
type Active struct {
	Alert    forecast.Alert
	Incident int64     // 0 when opening the incident failed
	URL      string    // the incident page, "" without one
	EndsAt   time.Time // set once resolved
}

// New returns a watcher with the options' defaults filled in.
func New(opts Options) (*Watcher, error) {
	if opts.Source == nil || opts.Opener == nil {
		return nil, fmt.Errorf("watch: a source and an incident opener are required")
	}
	if opts.Interval < 0 || opts.Step < 0 || opts.History < 0 {
		return nil, fmt.Errorf("watch: negative interval, step or history")
	}
	for _, id := range opts.Metrics {
		if _, ok := metrics.Lookup(id); !ok {
			return nil, fmt.Errorf("watch: unknown metric %q", id)
		}
	}
	o := opts.withDefaults()
	return &Watcher{opts: o, log: o.Logger, scopes: map[metrics.Scope]*scopeState{}}, nil
}

// Run evaluates every Interval until ctx ends, starting at once.
func (w *Watcher) Run(ctx context.Context) {
	w.log.Info("watch: dynamic-threshold detector running", "interval", w.opts.Interval, "consecutive", w.opts.Consecutive,
		"metrics", len(w.opts.Metrics), "alertmanager", w.opts.Alertmanager != nil)
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		began := time.Now()
		r := w.Round(ctx)
		took := time.Since(began)
		w.mu.Lock()
		w.last = RoundReport{RoundStats: r, Began: began, Took: took, Interval: w.opts.Interval}
		w.mu.Unlock()
		w.log.Debug("watch: round", "scopes", r.Scopes, "points", r.Points, "opened", r.Opened, "firing", r.Firing, "took", took.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RoundStats summarises one evaluation.
type RoundStats struct {
	Scopes int // scopes evaluated
	Points int // points observed
	Fired  int // metric alerts that fired
	Opened int // incidents opened
	Firing int // metric alerts firing after the round
	// Warmed counts the scopes whose history was read in the round (their
	// first); such a round reads far more than a steady one.
	Warmed int
}

// RoundReport is one finished round of Run: what it evaluated and how
// long it took against the interval it has.
type RoundReport struct {
	RoundStats
	Began    time.Time
	Took     time.Duration
	Interval time.Duration
}

// Behind reports whether a steady round (one that warmed no scope up)
// took longer than its interval: the detector then evaluates less often
// than configured.
func (r RoundReport) Behind() bool { return r.Warmed == 0 && r.Took > r.Interval }

// LastRound returns the last round Run finished; false before the first.
func (w *Watcher) LastRound() (RoundReport, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, !w.last.Began.IsZero()
}

// Round runs one evaluation at the clock's current time.
func (w *Watcher) Round(ctx context.Context) RoundStats {
	var rs RoundStats
	now := w.opts.Now().UTC()
	scopes, err := w.opts.Source.Scopes(ctx)
	if err != nil {
		if !w.scopesErr {
			w.log.Warn("watch: listing scopes failed; the detector waits for the telemetry", "err", err)
			w.scopesErr = true
		}
		w.forward(ctx)
		return rs
	}
	if w.scopesErr {
		w.log.Info("watch: listing scopes works again")
		w.scopesErr = false
	}
	listed := make(map[metrics.Scope]bool, len(scopes))
	var fired []forecast.Alert
	read := w.readWarm(ctx, scopes, now)
	for _, sc := range scopes {
		if ctx.Err() != nil {
			break
		}
		listed[sc] = true
		st := w.state(sc, now)
		st.lastSeen = now
		if st.gone {
			w.log.Info("watch: scope is back", "scope", sc.String())
			st.gone = false
		}
		if !st.warm {
			rs.Warmed++
		}
		var f []forecast.Alert
		var n int
		if series, ok := read[sc]; ok {
			f, n = w.feed(sc, st, series, st.next, now.Truncate(w.opts.Step).Add(w.opts.Step), now)
		} else {
			f, n = w.evaluate(ctx, sc, st, now)
		}
		fired = append(fired, f...)
		rs.Points += n
		rs.Scopes++
	}
	w.missing(listed, now)
	rs.Fired = len(fired)
	groups := forecast.GroupAlerts(fired)
	// Instances before their model within a minute, so a model's group
	// can join the incident of the instance that moved it.
	sort.SliceStable(groups, func(i, j int) bool {
		if !groups[i].Minute.Equal(groups[j].Minute) {
			return groups[i].Minute.Before(groups[j].Minute)
		}
		return groups[i].Scope.Instance != "" && groups[j].Scope.Instance == ""
	})
	for _, g := range groups {
		at := g.Minute
		if g, open := w.corroborate(g); open && w.openGroup(ctx, g, at) {
			rs.Opened++
		}
	}
	for _, g := range w.duePending(now) {
		if w.openGroup(ctx, g, now.Truncate(time.Minute)) {
			rs.Opened++
		}
	}
	w.mu.Lock()
	for _, st := range w.scopes {
		rs.Firing += len(st.firing)
	}
	w.mu.Unlock()
	w.forward(ctx)
	return rs
}

func (w *Watcher) state(sc metrics.Scope, now time.Time) *scopeState {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.scopes[sc]
	if !ok {
		do := w.opts.Detector
		do.Scope, do.Consecutive = sc, w.opts.Consecutive
		st = &scopeState{
			det:    forecast.NewDetector(do),
			next:   now.Truncate(w.opts.Step).Add(-w.opts.History),
			firing: map[string]*Active{},
		}
		w.scopes[sc] = st
	}
	return st
}

// missing resolves the alerts of scopes that are no longer listed and
// forgets scopes gone for longer than History.
func (w *Watcher) missing(listed map[metrics.Scope]bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for sc, st := range w.scopes {
		if listed[sc] {
			continue
		}
		if !st.gone {
			w.log.Warn("watch: scope no longer reports; its alerts end", "scope", sc.String(), "firing", len(st.firing))
			st.gone = true
		}
		for id, a := range st.firing {
			a.EndsAt = now
			w.resolved = append(w.resolved, *a)
			delete(st.firing, id)
		}
		if now.Sub(st.lastSeen) > w.opts.History {
			delete(w.scopes, sc)
		}
	}
}

// readWarm reads the new minutes of every warm scope with one FleetRange
// per first unread minute (all warm scopes share it in the steady state):
// a query per metric for the whole fleet rather than one per scope and
// metric. Scopes it does not answer (new ones warming up, a failed read)
// are read one by one.
func (w *Watcher) readWarm(ctx context.Context, scopes []metrics.Scope, now time.Time) map[metrics.Scope][]metrics.Series {
	last := now.Truncate(w.opts.Step)
	byNext := map[time.Time][]metrics.Scope{}
	w.mu.Lock()
	for _, sc := range scopes {
		st, ok := w.scopes[sc]
		if ok && st.warm && !st.next.After(last) && last.Add(w.opts.Step).Sub(st.next) <= readChunk {
			byNext[st.next] = append(byNext[st.next], sc)
		}
	}
	w.mu.Unlock()
	out := map[metrics.Scope][]metrics.Series{}
	for next, scs := range byNext {
		if len(scs) < 2 {
			continue // as cheap one by one
		}
		series, err := w.opts.Source.FleetRange(ctx, w.opts.Metrics, metrics.Range{Start: next, End: last.Add(w.opts.Step), Step: w.opts.Step})
		if err != nil {
			w.log.Debug("watch: reading the fleet's new minutes failed; reading scope by scope", "err", err)
			continue
		}
		for _, sc := range scs {
			if ss, ok := series[sc]; ok {
				out[sc] = ss
			}
		}
	}
	return out
}

// readChunk bounds one Range read, well under the 11,000 points a
// Prometheus range query answers.
const readChunk = 24 * time.Hour

// evaluate reads a scope's new minutes and feeds them to its detector,
// returning the alerts that fired and the number of points observed.
func (w *Watcher) evaluate(ctx context.Context, sc metrics.Scope, st *scopeState, now time.Time) ([]forecast.Alert, int) {
	last := now.Truncate(w.opts.Step)
	if st.next.After(last) {
		return nil, 0
	}
	var fired []forecast.Alert
	points := 0
	for from := st.next; !from.After(last); {
		to := from.Add(readChunk)
		if to.After(last.Add(w.opts.Step)) {
			to = last.Add(w.opts.Step)
		}
		series, err := w.opts.Source.Range(ctx, sc, w.opts.Metrics, metrics.Range{Start: from, End: to, Step: w.opts.Step})
		if err != nil {
			if !st.readErr {
				w.log.Warn("watch: reading the scope's series failed; it is skipped until it reads again", "scope", sc.String(), "err", err)
				st.readErr = true
			}
			return fired, points
		}
		f, n := w.feed(sc, st, series, from, to, now)
		fired, points = append(fired, f...), points+n
		if ctx.Err() != nil {
			return fired, points // shutting down; a warm-up can take a while
		}
		from = to
	}
	st.warm = true
	return fired, points
}

// feed gives a scope's detector the points of series in [from, to) and
// moves the scope on to `to`.
func (w *Watcher) feed(sc metrics.Scope, st *scopeState, series []metrics.Series, from, to, now time.Time) ([]forecast.Alert, int) {
	if st.readErr {
		w.log.Info("watch: the scope's series read again", "scope", sc.String())
		st.readErr = false
	}
	var fired []forecast.Alert
	points := 0
	for _, s := range series {
		for _, p := range s.Samples {
			if p.T.Before(from) || !p.T.Before(to) {
				continue
			}
			points++
			a, ok := st.det.Observe(s.Metric, p.T, p.V)
			if !ok {
				continue
			}
			if !st.warm && now.Sub(a.At) > w.opts.Fresh {
				continue // history, not news
			}
			if w.event(sc, st, a, now) {
				fired = append(fired, a)
			}
		}
	}
	st.next = to
	return fired, points
}

// event records one detector event and reports whether it is a new firing
// alert.
func (w *Watcher) event(sc metrics.Scope, st *scopeState, a forecast.Alert, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch a.State {
	case forecast.Firing:
		st.firing[a.Metric] = &Active{Alert: a}
		return true
	case forecast.Resolved:
		if act, ok := st.firing[a.Metric]; ok {
			act.EndsAt = a.At
			w.resolved = append(w.resolved, *act)
			delete(st.firing, a.Metric)
		}
		w.log.Info("watch: metric back in its band", "scope", sc.String(), "metric", a.Metric, "message", a.Message)
	case forecast.Shifted:
		w.log.Info("watch: level shift absorbed", "scope", sc.String(), "metric", a.Metric, "message", a.Message)
	}
	return false
}

// corroborate decides whether a group opens (or joins) an incident now.
// Unless it joins the scope's recent incident, it opens one only when the
// scope's firing alerts that belong to no incident span two dimensions
// (latency, throughput, utilisation, quality), and then takes them all
// along; otherwise the scope waits for corroboration (see duePending).
func (w *Watcher) corroborate(g forecast.Group) (forecast.Group, bool) {
	if w.opts.Corroborate <= 0 {
		return g, true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.scopes[g.Scope]
	if ep := w.latestEpisode(g.Scope); ep != nil && g.Minute.Sub(ep.minute) <= w.opts.JoinWindow && !g.Minute.Before(ep.minute) {
		return g, true // it joins that incident
	}
	if st.pendingSince.IsZero() || g.Minute.Before(st.pendingSince) {
		st.pendingSince = g.Minute
	}
	all := unattached(g.Scope, st, st.pendingSince)
	if dimensions(all.Metrics) < 2 {
		return g, false
	}
	st.pendingSince = time.Time{}
	return all, true
}

// duePending opens the waiting scopes whose oldest unattached alert has
// lasted the corroboration time, and forgets those whose alerts all went
// back in their bands.
func (w *Watcher) duePending(now time.Time) []forecast.Group {
	w.mu.Lock()
	defer w.mu.Unlock()
	var due []forecast.Group
	for sc, st := range w.scopes {
		if st.pendingSince.IsZero() {
			continue
		}
		g := unattached(sc, st, st.pendingSince)
		switch {
		case len(g.Alerts) == 0:
			w.log.Info("watch: an alert of one dimension ended before anything corroborated it; no incident", "scope", sc.String(), "since", st.pendingSince.Format(time.RFC3339))
			st.pendingSince = time.Time{}
		case now.Sub(st.pendingSince) >= w.opts.Corroborate:
			due = append(due, g)
			st.pendingSince = time.Time{}
		}
	}
	// Instances before models, as in Round: a model's group joins its
	// instance's incident.
	sort.Slice(due, func(i, j int) bool {
		if ii, ij := due[i].Scope.Instance != "", due[j].Scope.Instance != ""; ii != ij {
			return ii
		}
		return due[i].Scope.String() < due[j].Scope.String()
	})
	return due
}

// unattached groups the scope's firing alerts that belong to no incident,
// at the given minute.
func unattached(sc metrics.Scope, st *scopeState, minute time.Time) forecast.Group {
	g := forecast.Group{Scope: sc, Minute: minute}
	for m, act := range st.firing {
		if act.Incident == 0 {
			g.Metrics = append(g.Metrics, m)
		}
	}
	sort.Strings(g.Metrics)
	for _, m := range g.Metrics {
		g.Alerts = append(g.Alerts, st.firing[m].Alert)
	}
	return g
}

// dimensions counts the catalog dimensions the metrics belong to.
func dimensions(ids []string) int {
	seen := map[metrics.Dimension]bool{}
	for _, id := range ids {
		if m, ok := metrics.Lookup(id); ok {
			seen[m.Dimension] = true
		}
	}
	return len(seen)
}

// latestEpisode is the scope's latest incident, or for a model scope the
// latest of its own and its instances' incidents: a model's anomaly that
// one of its instances already opened an incident for is that incident.
// The caller holds w.mu.
func (w *Watcher) latestEpisode(scope metrics.Scope) *episode {
	ep := w.scopes[scope].incident
	if scope.Instance == "" {
		for sc, ist := range w.scopes {
			if sc.Model == scope.Model && sc.Instance != "" && ist.incident != nil &&
				(ep == nil || ist.incident.minute.After(ep.minute)) {
				ep = ist.incident
			}
		}
	}
	return ep
}

// openGroup opens the incident of one group, or joins the scope's recent
// incident, and reports whether it opened one. at is the minute the group
// was acted on (later than its own minute when it waited for
// corroboration); the join window counts from it.
func (w *Watcher) openGroup(ctx context.Context, g forecast.Group, at time.Time) bool {
	w.mu.Lock()
	st := w.scopes[g.Scope]
	ep := w.latestEpisode(g.Scope)
	w.mu.Unlock()
	if ep != nil && at.Sub(ep.minute) <= w.opts.JoinWindow && !at.Before(ep.minute) {
		w.log.Info("watch: metrics join the scope's open incident", "scope", g.Scope.String(), "incident", ep.id, "metrics", strings.Join(g.Metrics, ","))
		w.attach(st, g, ep)
		return false
	}
	detail := NewDetail(g)
	raw, err := json.Marshal(detail)
	if err != nil {
		w.log.Error("watch: encode trigger detail", "err", err)
		return false
	}
	tr := incident.Trigger{
		Kind:     store.TriggerDetector,
		Scope:    g.Scope,
		At:       g.Minute,
		Title:    Title(g),
		Detail:   raw,
		Severity: string(Severity(g)),
	}
	inc, _, err := w.opts.Opener.Open(ctx, tr)
	if err != nil {
		w.log.Warn("watch: opening the detector's incident failed", "scope", g.Scope.String(), "metrics", strings.Join(g.Metrics, ","), "err", err)
		return false
	}
	ep = &episode{id: inc.ID, url: w.opts.BaseURL + route.URL(route.IncidentShow, inc.ID), minute: at}
	w.log.Info("watch: incident opened", "scope", g.Scope.String(), "incident", inc.ID, "metrics", strings.Join(g.Metrics, ","))
	w.attach(st, g, ep)
	return true
}

func (w *Watcher) attach(st *scopeState, g forecast.Group, ep *episode) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st.incident = ep
	for _, a := range g.Alerts {
		if act, ok := st.firing[a.Metric]; ok {
			act.Incident, act.URL = ep.id, ep.url
		}
	}
}

// Firing returns the alerts firing now, sorted by scope and metric.
func (w *Watcher) Firing() []Active {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Active
	for _, st := range w.scopes {
		for _, a := range st.firing {
			out = append(out, *a)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if si, sj := out[i].Alert.Scope.String(), out[j].Alert.Scope.String(); si != sj {
			return si < sj
		}
		return out[i].Alert.Metric < out[j].Alert.Metric
	})
	return out
}

// Model returns the detector's current model of one scope's metric, nil
// before its first fit; charts draw its band.
func (w *Watcher) Model(scope metrics.Scope, metric string) *forecast.Model {
	w.mu.Lock()
	st, ok := w.scopes[scope]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	return st.det.Model(metric)
}

// maxBandPoints bounds the points of one Band.
const maxBandPoints = 2000

// Band samples the forecast band of one scope's metric from start to end
// every step (coarser when that would be more than 2,000 points), from the
// start of the model's history on; ok is false before the metric's first
// fit. The band is the model's own, without the detector's local
// correction and calibration of the last hours.
func (w *Watcher) Band(scope metrics.Scope, metric string, start, end time.Time, step time.Duration) (lower, upper []metrics.Sample, ok bool) {
	m := w.Model(scope, metric)
	if m == nil || step <= 0 || !end.After(start) {
		return nil, nil, false
	}
	if n := end.Sub(start) / step; n > maxBandPoints {
		step = end.Sub(start) / maxBandPoints
	}
	from, _ := m.Span()
	// The band is drawn inside the metric's valid range: a rate or a
	// latency cannot go below zero, whatever the residual spread says.
	valid, _ := metrics.Lookup(metric)
	for t := start; t.Before(end); t = t.Add(step) {
		if t.Before(from) {
			continue
		}
		_, lo, hi := m.Predict(t)
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			continue
		}
		lo, hi = clampBand(valid, lo, hi)
		lower = append(lower, metrics.Sample{T: t, V: lo})
		upper = append(upper, metrics.Sample{T: t, V: hi})
	}
	return lower, upper, len(lower) > 0
}

// clampBand keeps a band inside the metric's valid values (Max 0 means
// unbounded above).
func clampBand(m metrics.Metric, lo, hi float64) (float64, float64) {
	lo, hi = max(lo, m.Min), max(hi, m.Min)
	if m.Max > m.Min {
		lo, hi = min(lo, m.Max), min(hi, m.Max)
	}
	return lo, hi
}

// forward posts the firing and just resolved alerts to the Alertmanager.
func (w *Watcher) forward(ctx context.Context) {
	w.mu.Lock()
	resolved := w.resolved
	w.resolved = nil
	w.mu.Unlock()
	if w.opts.Alertmanager == nil {
		return
	}
	all := append(w.Firing(), resolved...)
	if len(all) == 0 {
		return
	}
	w.opts.Alertmanager.Post(ctx, all)
}

// Detail is the trigger detail of a detector incident: which bands were
// left and by how much.
type Detail struct {
	Source  string         `json:"source"` // "dynamic-threshold"
	Minute  time.Time      `json:"minute"`
	Metrics []MetricDetail `json:"metrics"`
}

// MetricDetail is one metric that left its band.
type MetricDetail struct {
	Metric    string            `json:"metric"`
	Unit      string            `json:"unit,omitempty"`
	Value     float64           `json:"value"`
	Forecast  float64           `json:"forecast"`
	Lower     float64           `json:"lower"`
	Upper     float64           `json:"upper"`
	Direction metrics.Direction `json:"direction"`
	// Outside is how far the value lies beyond the band, in the metric's
	// unit, and OutsideSE the same in standard errors.
	// OutsideSE is 0 when the series had no spread to measure it by.
	Outside   float64   `json:"outside"`
	OutsideSE float64   `json:"outside_se"`
	Z         float64   `json:"z"` // distance from the forecast in standard errors, signed
	Start     time.Time `json:"start"`
}

// DetailSource marks a detector incident's trigger detail.
const DetailSource = "dynamic-threshold"

// NewDetail describes a group's alerts.
func NewDetail(g forecast.Group) Detail {
	d := Detail{Source: DetailSource, Minute: g.Minute}
	for _, a := range g.Alerts {
		m, _ := metrics.Lookup(a.Metric)
		out := 0.0
		switch {
		case a.Value > a.Upper:
			out = a.Value - a.Upper
		case a.Value < a.Lower:
			out = a.Lower - a.Value
		}
		se := 0.0
		if a.Z != 0 {
			se = math.Abs(a.Value-a.Forecast) / math.Abs(a.Z)
		}
		outSE := 0.0
		if se > 0 {
			outSE = out / se
		}
		d.Metrics = append(d.Metrics, MetricDetail{
			Metric: a.Metric, Unit: m.Unit, Value: a.Value, Forecast: a.Forecast, Lower: a.Lower, Upper: a.Upper,
			Direction: a.Direction, Outside: finite(out), OutsideSE: finite(outSE), Z: finite(a.Z), Start: a.Start,
		})
	}
	sort.Slice(d.Metrics, func(i, j int) bool { return d.Metrics[i].Metric < d.Metrics[j].Metric })
	return d
}

// ParseDetail decodes a detector incident's trigger detail; ok is false
// when raw is not one.
func ParseDetail(raw json.RawMessage) (Detail, bool) {
	var d Detail
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil || d.Source != DetailSource {
		return Detail{}, false
	}
	return d, true
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Title names a group's scope and metrics.
func Title(g forecast.Group) string {
	return "Out of band: " + strings.Join(g.Metrics, ", ") + " on " + g.Scope.String()
}

// criticalZ is the distance from the forecast, in standard errors, from
// which a group is critical rather than a warning.
const criticalZ = 6

// Severity is critical when any metric of the group is criticalZ standard
// errors or more from its forecast, else warning.
func Severity(g forecast.Group) diagnose.Severity {
	for _, a := range g.Alerts {
		if math.Abs(a.Z) >= criticalZ {
			return diagnose.SeverityCritical
		}
	}
	return diagnose.SeverityWarning
}
