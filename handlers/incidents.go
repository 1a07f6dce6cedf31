package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Archive is what the incident pages read from the incident archive;
// writes go through the incident service. *store.Store implements it.
type Archive interface {
	Incident(ctx context.Context, id int64) (store.Incident, error)
	Page(ctx context.Context, id int64) (store.Page, error)
	List(ctx context.Context, f store.ListFilter) (store.ListPage, error)
	Causes(ctx context.Context) ([]store.Cause, error)
	CreateShare(ctx context.Context, incidentID int64, by string, now, expiresAt time.Time) (store.ShareLink, error)
	ResolveShare(ctx context.Context, token string, now time.Time) (store.ShareLink, error)
	RevokeShare(ctx context.Context, incidentID, id int64, now time.Time) error
	Shares(ctx context.Context, incidentID int64) ([]store.ShareLink, error)
	Accuracy(ctx context.Context, f store.AccuracyFilter) (store.Accuracy, error)
	CauseStats(ctx context.Context, id string, cases int) (store.CauseStats, error)
	AllCauseStats(ctx context.Context) ([]store.CauseStats, error)
	Diagnoses(ctx context.Context, incidentID int64) ([]store.Diagnosis, error)
	ReviewQueue(ctx context.Context, f store.QueueFilter) (store.Queue, error)
}

// IncidentDeps are the dependencies of the incident archive's handlers.
type IncidentDeps struct {
	Archive Archive           // required
	Service *incident.Service // required: opens, reviews and re-diagnoses
	// Layout builds the page frame (Handlers.Layout); nil means a plain
	// frame with Assets.
	Layout func(title, nav string) views.LayoutView
	Assets views.Assets
	// BaseURL prefixes share links ("https://casebook.example"); empty
	// means the request's own scheme and host.
	BaseURL string
	Logger  *slog.Logger
	Now     func() time.Time // nil means time.Now
	// TraceMaxBytes bounds a kernel-trace upload; zero means
	// DefaultTraceMaxBytes (512 MiB).
	TraceMaxBytes int64
	// TraceSpoolDir is where trace uploads (and an Nsight export inflated
	// from gzip) are spooled while they are parsed: a folder of the data
	// directory, so that an upload lands on the disk the operator sized,
	// not in a tmpfs. NewIncidents creates it and removes the spool files a
	// previous run left. Empty means os.TempDir(), without the clean-up.
	TraceSpoolDir string
	// TraceParseTimeout bounds the parse of one upload; zero means
	// DefaultTraceParseTimeout.
	TraceParseTimeout time.Duration
	// TraceUploads bounds the uploads received and parsed at once; more
	// are answered 503 with Retry-After. Zero means DefaultTraceUploads.
	TraceUploads int
	// Changes, when set, puts change requests on the incident page (a
	// form per action, the list, the timeline) and action outcomes on
	// the knowledge base.
	Changes *Changes
}

// Incidents serves the incident pages: the list, an incident, its review
// forms, share links and postmortem. Opening and reviewing go through the
// incident service. The archive's other resources are its fields, each
// its own handler over the same dependencies; web/routes.go binds every
// one to its route.
type Incidents struct {
	d *IncidentDeps
	// API serves the archive's JSON API.
	API *IncidentAPI
	// Knowledge serves the accuracy page and the knowledge base.
	Knowledge *Knowledge
	// Traces serves kernel-trace uploads and their comparison.
	Traces *Traces
	// Alerts serves the Alertmanager webhook.
	Alerts *Alerts
	// Changes serves change requests; nil when IncidentDeps.Changes is.
	Changes *Changes
}

// IncidentAPI serves the archive's JSON API.
type IncidentAPI struct{ d *IncidentDeps }

// Knowledge serves the accuracy page and the knowledge base of causes.
type Knowledge struct{ d *IncidentDeps }

// Traces serves kernel-trace uploads and their comparison.
type Traces struct {
	d       *IncidentDeps
	uploads chan struct{} // one token per trace upload in progress
}

// NewIncidents builds the archive handlers, filling in defaults.
func NewIncidents(d IncidentDeps) *Incidents {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.TraceParseTimeout <= 0 {
		d.TraceParseTimeout = DefaultTraceParseTimeout
	}
	if d.TraceUploads <= 0 {
		d.TraceUploads = DefaultTraceUploads
	}
	cleanTraceSpool(d.TraceSpoolDir, d.Logger)
	dp := &d
	return &Incidents{
		d:         dp,
		API:       &IncidentAPI{dp},
		Knowledge: &Knowledge{dp},
		Traces:    &Traces{d: dp, uploads: make(chan struct{}, d.TraceUploads)},
		Alerts:    &Alerts{Service: d.Service},
		Changes:   d.Changes,
	}
}

func (d *IncidentDeps) layout(title, nav string) views.LayoutView {
	if d.Layout != nil {
		return d.Layout(title, nav)
	}
	return views.LayoutView{Title: title, Nav: nav, Assets: d.Assets}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// incidentID parses the :id path parameter.
func incidentID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, paramError("id", "param.incident_number", strconv.Quote(truncate(c.Param("id"), 32)))
	}
	return id, nil
}

// notFoundText says what was missing, by the parameter that named it.
var notFoundText = map[string]string{
	"id":      "There is no incident with this number.",
	"verdict": "There is no incident with this number.",
	"body":    "There is no incident with this number.",
	"by":      "There is no incident with this number.",
	"token":   "This share link is unknown, expired or revoked.",
	"cause":   "The knowledge base has no such cause.",
	"share":   "This incident has no such share link.",
}

// archiveError maps store sentinels to HTTP errors; param names the input
// that was wrong or missing.
func archiveError(err error, param string) error {
	var (
		fe  *incident.FieldError
		inv *store.InvalidError
	)
	switch {
	case errors.As(err, &fe):
		return &ParamError{Param: fe.Field, Reason: fe.Reason}
	case errors.As(err, &inv):
		return &ParamError{Param: param, Reason: inv.Reason}
	case errors.Is(err, store.ErrNotFound):
		msg, ok := notFoundText[param]
		if !ok {
			msg = "Not found."
		}
		return echo.NewHTTPError(http.StatusNotFound, msg).SetInternal(err)
	case errors.Is(err, store.ErrInvalid):
		return &ParamError{Param: param, Reason: err.Error()}
	case errors.Is(err, store.ErrConflict):
		return &ParamError{Param: param, Reason: err.Error(), Status: http.StatusConflict}
	}
	return err
}
