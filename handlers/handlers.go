package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Telemetry is what the console reads metrics through. *telemetry.Telemetry
// implements it.
type Telemetry interface {
	// Scopes lists every model and every model/instance with data, sorted.
	Scopes(ctx context.Context) ([]metrics.Scope, error)
	// Range returns one series per id, in order; missing data is an empty
	// series.
	Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)
	// Snapshot captures the scope at one instant with an hour of history.
	Snapshot(ctx context.Context, scope metrics.Scope, at time.Time) (metrics.Snapshot, error)
	// Fleet captures every scope at about one instant, reading the whole
	// fleet at once; readers within a few seconds share one reading.
	Fleet(ctx context.Context, at time.Time) (metrics.Fleet, error)
	// CachedFleet is the latest reading Fleet would answer `at` with, if
	// there is one; it never reads.
	CachedFleet(at time.Time) (metrics.Fleet, bool)
	// Status reports the health of each metric source.
	Status() []metrics.SourceStatus
}

// Diagnoser diagnoses a snapshot. *diagnose.Engine implements it.
type Diagnoser interface {
	Diagnose(s metrics.Snapshot) diagnose.Diagnosis
}

// Fault is a simulated fault as the fault panel shows and injects it.
type Fault struct {
	Cause    string // a metrics.FaultCauses() id
	Scope    metrics.Scope
	Severity float64       // 0..1
	Start    time.Time     // zero = now
	Duration time.Duration // zero = until cleared
}

// FaultInjector is the demo simulator's fault control. The wiring adapts
// the simulated cluster to it; without one the fault panel is not offered.
type FaultInjector interface {
	Inject(f Fault) (id string, err error)
	Faults() []Fault
	ClearFaults()
}

// IncidentOpener, when present, turns "Diagnose now" into opening an
// incident: it diagnoses the snapshot and archives both; the console
// redirects to the incident page. *incident.Service implements it.
type IncidentOpener interface {
	DiagnoseNow(ctx context.Context, s metrics.Snapshot) (store.Incident, error)
}

// Counter counts events; a prometheus.Counter implements it.
type Counter interface {
	Inc()
}

// Deps are the dependencies of every handler. Telemetry and Diagnoser are
// required; the rest are optional.
type Deps struct {
	Telemetry Telemetry
	Diagnoser Diagnoser
	Faults    FaultInjector  // nil outside demo mode
	Incidents IncidentOpener // nil until the archive is wired
	// Deviations computes per-metric deviations for status colours;
	// nil means diagnose.StatusDeviations.
	Deviations func(metrics.Snapshot) map[string]diagnose.Deviation
	// Diagnoses counts diagnoses made; nil counts nothing.
	Diagnoses Counter
	// Layout frames every page; nil means a Layout over Telemetry with
	// Assets.
	Layout *Layout
	Assets views.Assets
	// Forecaster draws forecast bands on the live charts; nil draws none.
	Forecaster Forecaster
	// Storage describes the embedded metric store on the storage page;
	// nil says the metrics are stored remotely.
	Storage StorageReporter
	// Detector reports the dynamic-threshold detector's last round on
	// the storage page; nil when the detector is off.
	Detector DetectorReporter
	Logger   *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Stores are the console's stores (the archive, the embedded TSDB);
	// while one cannot write, every page says why and /readyz is 503.
	Stores []Store

	scores *fleetScores // the latest reading of the fleet, classified
}

// Store is a store whose writes can fail for a while (a damaged archive,
// a full disk). *store.Store and *telemetry.Telemetry implement it.
type Store interface {
	// WriteError says why the store cannot write now; nil when it can.
	WriteError() error
}

// Handlers groups the resource handlers.
type Handlers struct {
	Overview  *Overview
	Scopes    *Scopes
	Diagnoses *Diagnoses
	Faults    *Faults
	Health    *Health
	Storage   *Storage
	deps      *Deps
}

// New builds the handlers, filling in the defaults of optional Deps.
func New(d Deps) *Handlers {
	if d.Deviations == nil {
		d.Deviations = diagnose.StatusDeviations
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Diagnoses == nil {
		d.Diagnoses = noCounter{}
	}
	if d.Layout == nil {
		d.Layout = NewLayout(d.Telemetry, d.Stores, d.Assets, d.Faults != nil, d.Now)
	}
	d.scores = &fleetScores{}
	dp := &d
	return &Handlers{
		Overview:  &Overview{dp},
		Scopes:    &Scopes{d: dp, fc: d.Forecaster},
		Storage:   &Storage{dp},
		Diagnoses: &Diagnoses{dp},
		Faults:    &Faults{dp},
		Health:    &Health{dp},
		deps:      dp,
	}
}

// Layout returns the layout view model for a page, with data-source banners.
func (h *Handlers) Layout(title, nav string) views.LayoutView {
	return h.deps.layout(title, nav)
}

func (d *Deps) layout(title, nav string) views.LayoutView { return d.Layout.Page(title, nav) }

// Layout frames every page: navigation, assets, a banner for each store
// that cannot write and for each failing metric source. Build it first:
// every handler renders through it.
type Layout struct {
	status     interface{ Status() []metrics.SourceStatus }
	stores     []Store
	assets     views.Assets
	showFaults bool
	now        func() time.Time
}

// NewLayout returns the page frame over the metric sources' status (nil:
// no banners) and the stores; showFaults offers the demo fault panel; now
// nil means time.Now.
func NewLayout(status interface{ Status() []metrics.SourceStatus }, stores []Store, assets views.Assets, showFaults bool, now func() time.Time) *Layout {
	if now == nil {
		now = time.Now
	}
	return &Layout{status: status, stores: stores, assets: assets, showFaults: showFaults, now: now}
}

// Page returns the layout view model of one page.
func (lo *Layout) Page(title, nav string) views.LayoutView {
	l := views.LayoutView{Title: title, Nav: nav, Assets: lo.assets, ShowFaults: lo.showFaults}
	now := lo.now()
	for _, st := range lo.stores {
		if err := st.WriteError(); err != nil {
			l.Banners = append(l.Banners, views.Banner{Status: views.StatusCritical, Msg: "banner.writes_refused", Args: []any{err.Error()}, Now: now})
		}
	}
	if lo.status == nil {
		return l
	}
	for _, s := range lo.status.Status() {
		if s.OK {
			continue
		}
		b := views.Banner{Status: views.StatusCritical, Msg: "banner.source_failing", Args: []any{s.Name}, Since: s.Since, Now: now}
		if s.Err != "" {
			b.Msg, b.Args = "banner.source_failing_err", []any{s.Name, s.Err}
		}
		l.Banners = append(l.Banners, b)
	}
	return l
}

type noCounter struct{}

func (noCounter) Inc() {}
