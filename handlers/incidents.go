package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Archive is what the incident pages need from the incident archive.
// *store.Store implements it.
type Archive interface {
	OpenIncident(ctx context.Context, in store.NewIncident, d store.DiagnosisRecord) (store.Incident, bool, error)
	IncidentByAlert(ctx context.Context, fingerprint string, startsAt time.Time) (store.Incident, error)
	ResolveAlert(ctx context.Context, fingerprint string, startsAt, resolvedAt time.Time) (int64, error)
	Incident(ctx context.Context, id int64) (store.Incident, error)
	Page(ctx context.Context, id int64) (store.Page, error)
	List(ctx context.Context, f store.ListFilter) (store.ListPage, error)
	AddDiagnosis(ctx context.Context, incidentID int64, d store.DiagnosisRecord) (store.Diagnosis, error)
	AddLabel(ctx context.Context, l store.NewLabel) (store.Label, error)
	AddNote(ctx context.Context, n store.NewNote) (store.Note, error)
	Causes(ctx context.Context) ([]store.Cause, error)
	CreateShare(ctx context.Context, incidentID int64, by string, now, expiresAt time.Time) (store.ShareLink, error)
	ResolveShare(ctx context.Context, token string, now time.Time) (store.ShareLink, error)
	RevokeShare(ctx context.Context, incidentID, id int64, now time.Time) error
	Shares(ctx context.Context, incidentID int64) ([]store.ShareLink, error)
	ReplaceWindows(ctx context.Context, id int64, windows []metrics.Series) error
	Accuracy(ctx context.Context, f store.AccuracyFilter) (store.Accuracy, error)
	CauseStats(ctx context.Context, id string, cases int) (store.CauseStats, error)
	AllCauseStats(ctx context.Context) ([]store.CauseStats, error)
	EachReviewedCase(ctx context.Context, version int, fn func(store.ReviewedCase) error) error
	PutCaseSignatures(ctx context.Context, sigs []store.CaseSignature) (int, error)
	CaseSnapshots(ctx context.Context, ids []int64) (map[int64]metrics.Snapshot, []int64, error)
}

// Capture reads the evidence an incident archives. *telemetry.Telemetry
// implements it.
type Capture interface {
	Snapshot(ctx context.Context, scope metrics.Scope, at time.Time) (metrics.Snapshot, error)
	Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)
}

// IncidentDeps are the dependencies of the incident archive's handlers.
type IncidentDeps struct {
	Archive   Archive   // required
	Capture   Capture   // required
	Diagnoser Diagnoser // required
	// AlertToken is the bearer token the Alertmanager webhook must present;
	// empty disables the webhook.
	AlertToken string
	// Layout builds the page frame (web.Server.Handlers.Layout); nil means
	// a plain frame with Assets.
	Layout func(title, nav string) views.LayoutView
	Assets views.Assets
	// BaseURL prefixes share links ("https://casebook.example"); empty
	// means the request's own scheme and host.
	BaseURL string
	Logger  *slog.Logger
	Now     func() time.Time // nil means time.Now
	// Before and After bound the archived chart windows around the
	// trigger; zero means 1 h before and 15 min after.
	Before, After time.Duration
	// Step is the archived windows' resolution; zero means 30 s.
	Step time.Duration
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

// Incidents serves the incident archive: the Alertmanager webhook, the
// incident pages and list, the accuracy page, the knowledge base, share
// links, exports and the JSON API. It also implements IncidentOpener, so
// "Diagnose now" opens an incident.
type Incidents struct {
	d        IncidentDeps
	cases    caseState
	captures captures
	uploads  chan struct{} // one token per trace upload in progress
}

// NewIncidents builds the archive handlers, filling in defaults.
func NewIncidents(d IncidentDeps) *Incidents {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Before <= 0 {
		d.Before = time.Hour
	}
	if d.After <= 0 {
		d.After = 15 * time.Minute
	}
	if d.Step <= 0 {
		d.Step = 30 * time.Second
	}
	if d.TraceParseTimeout <= 0 {
		d.TraceParseTimeout = DefaultTraceParseTimeout
	}
	if d.TraceUploads <= 0 {
		d.TraceUploads = DefaultTraceUploads
	}
	cleanTraceSpool(d.TraceSpoolDir, d.Logger)
	return &Incidents{d: d, uploads: make(chan struct{}, d.TraceUploads)}
}

// Route names of the archive.
const (
	RouteIncidentList       = "incident.list"
	RouteIncidentShow       = "incident.show"
	RouteIncidentLabel      = "incident.label.create"
	RouteIncidentNote       = "incident.note.create"
	RouteIncidentDiagnose   = "incident.diagnosis.create"
	RouteIncidentShare      = "incident.share.create"
	RouteIncidentRevoke     = "incident.share.revoke"
	RouteIncidentPostmortem = "incident.postmortem"
	RouteIncidentPrint      = "incident.print"
	RouteShareShow          = "share.show"
	RouteAccuracy           = "accuracy.show"
	RouteKBList             = "kb.list"
	RouteKBShow             = "kb.show"
	RouteAPIAlertmanager    = "api.alert.alertmanager"
	RouteAPIIncidentList    = "api.incident.list"
	RouteAPIIncidentShow    = "api.incident.show"
	RouteAPIIncidentLabel   = "api.incident.label.create"
	RouteAPIIncidentNote    = "api.incident.note.create"
	RouteAPIIncidentExport  = "api.incident.export"
)

// Register adds the archive's routes to g (the root group).
func (h *Incidents) Register(g *echo.Group) {
	g.GET("/incidents", h.List).Name = RouteIncidentList
	g.GET("/incidents/:id", h.Show).Name = RouteIncidentShow
	g.POST("/incidents/:id/labels", h.Label).Name = RouteIncidentLabel
	g.POST("/incidents/:id/notes", h.Note).Name = RouteIncidentNote
	g.POST("/incidents/:id/diagnoses", h.Rediagnose).Name = RouteIncidentDiagnose
	g.POST("/incidents/:id/shares", h.Share).Name = RouteIncidentShare
	g.POST("/incidents/:id/shares/:share/revoke", h.Revoke).Name = RouteIncidentRevoke
	g.GET("/incidents/:id/postmortem.md", h.Postmortem).Name = RouteIncidentPostmortem
	g.GET("/incidents/:id/print", h.Print).Name = RouteIncidentPrint
	g.GET("/share/:token", h.Shared).Name = RouteShareShow
	g.GET("/accuracy", h.Accuracy).Name = RouteAccuracy
	g.GET("/kb", h.KB).Name = RouteKBList
	g.GET("/kb/:cause", h.KBCause).Name = RouteKBShow

	g.POST("/api/v1/alerts/alertmanager", h.Alertmanager).Name = RouteAPIAlertmanager
	g.GET("/api/v1/incidents", h.APIList).Name = RouteAPIIncidentList
	g.GET("/api/v1/incidents/:id", h.APIShow).Name = RouteAPIIncidentShow
	g.POST("/api/v1/incidents/:id/labels", h.APILabel).Name = RouteAPIIncidentLabel
	g.POST("/api/v1/incidents/:id/notes", h.APINote).Name = RouteAPIIncidentNote
	g.GET("/api/v1/incidents/:id/export", h.APIExport).Name = RouteAPIIncidentExport
	h.registerTraces(g)
	if h.d.Changes != nil {
		h.d.Changes.Register(g)
	}
}

func (h *Incidents) layout(title, nav string) views.LayoutView {
	if h.d.Layout != nil {
		return h.d.Layout(title, nav)
	}
	return views.LayoutView{Title: title, Nav: nav, Assets: h.d.Assets}
}

// Trigger describes what opened an incident.
type Trigger struct {
	Kind   store.TriggerKind
	At     time.Time       // the trigger instant: alert start, click time, detection time
	Title  string          // "" means a title from the scope and diagnosis
	Detail json.RawMessage // kept with the incident
	Alert  *store.Alert
	// Severity overrides the diagnosis's severity when set (an alert's).
	Severity string
}

// Open opens an incident the same way whatever triggered it: capture the
// snapshot at the trigger (unless one is given) and the chart windows
// around it, diagnose (unless a diagnosis of snap is given), and store
// everything in one transaction. A capture
// failure does not lose the incident: it is stored with what could be
// captured and the failure in its trigger detail.
func (h *Incidents) Open(ctx context.Context, scope metrics.Scope, tr Trigger, snap *metrics.Snapshot, diag *diagnose.Diagnosis) (store.Incident, bool, error) {
	now := h.d.Now().UTC()
	at := tr.At.UTC()
	if at.IsZero() || at.After(now) {
		at = now
	}
	var ev evidence
	if snap == nil {
		diag = nil // a given diagnosis belongs to a given snapshot
		at = at.Truncate(time.Second)
		ev = h.captures.get(ctx, scope, at, now, func(ctx context.Context) evidence {
			var ev evidence
			ev.snap, ev.snapErr = h.d.Capture.Snapshot(ctx, scope, at)
			ev.windows, ev.windowsErr = h.captureWindows(ctx, scope, at, now)
			return ev
		})
	} else {
		ev.snap = *snap
		ev.windows, ev.windowsErr = h.captureWindows(ctx, scope, at, now)
	}
	var captureErrs []string
	if ev.snapErr != nil {
		h.d.Logger.WarnContext(ctx, "incidents: snapshot failed", "scope", scope.String(), "err", ev.snapErr)
		captureErrs = append(captureErrs, "snapshot: "+ev.snapErr.Error())
		ev.snap = metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{}}
	}
	snap = &ev.snap
	windows := ev.windows
	if ev.windowsErr != nil {
		h.d.Logger.WarnContext(ctx, "incidents: chart windows failed", "scope", scope.String(), "err", ev.windowsErr)
		captureErrs = append(captureErrs, "chart windows: "+ev.windowsErr.Error())
		windows = nil
	}
	if diag == nil {
		h.ensureCases(ctx)
		d := h.d.Diagnoser.Diagnose(*snap)
		diag = &d
	}
	rec, err := diagnosisRecord(*diag, now)
	if err != nil {
		return store.Incident{}, false, err
	}
	title := tr.Title
	if title == "" {
		title = views.CauseTitle(diag.RootCause) + " on " + scope.String()
	}
	sev := tr.Severity
	if sev == "" {
		sev = string(diag.Severity)
	}
	detail := tr.Detail
	if len(captureErrs) > 0 {
		detail = withCaptureErrors(detail, captureErrs)
	}
	in := store.NewIncident{
		Title: truncate(title, store.MaxTitleBytes), Scope: scope, Trigger: tr.Kind, TriggerDetail: detail, Alert: tr.Alert,
		OpenedAt: now, WindowStart: at.Add(-h.d.Before), WindowEnd: at.Add(h.d.After),
		Severity: sev, Snapshot: *snap, Windows: windows,
	}
	inc, created, err := h.d.Archive.OpenIncident(ctx, in, rec)
	if err != nil {
		return store.Incident{}, false, fmt.Errorf("incidents: open for %s: %w", scope, err)
	}
	return inc, created, nil
}

// captureWindows reads the archived chart windows around a trigger at.
func (h *Incidents) captureWindows(ctx context.Context, scope metrics.Scope, at, now time.Time) ([]metrics.Series, error) {
	start, end := at.Add(-h.d.Before), at.Add(h.d.After)
	if end.After(now) {
		end = now // the minutes after the trigger have not happened yet
	}
	return h.d.Capture.Range(ctx, scope, metrics.IDs(), metrics.Range{Start: start, End: end, Step: h.d.Step})
}

// completeWithin is how long after an incident's window ends its archived
// windows are still completed from the metric source.
const completeWithin = 24 * time.Hour

// lastSample is the time of the latest archived sample.
func lastSample(ws []metrics.Series) time.Time {
	var last time.Time
	for _, s := range ws {
		if n := len(s.Samples); n > 0 && s.Samples[n-1].T.After(last) {
			last = s.Samples[n-1].T
		}
	}
	return last
}

func sampleCount(ws []metrics.Series) int {
	n := 0
	for _, s := range ws {
		n += len(s.Samples)
	}
	return n
}

// completeWindows fills in the part of the archived window after the
// trigger that had not happened yet when the incident opened. It captures
// again only while some of the window is missing and has since passed, and
// keeps the archive when the new capture has less (the source may already
// have dropped the early minutes). Failures are logged, never returned: the
// archived evidence stands on its own.
func (h *Incidents) completeWindows(ctx context.Context, inc *store.Incident) {
	now := h.d.Now().UTC()
	last := lastSample(inc.Windows)
	switch {
	case !last.Before(inc.WindowEnd.Add(-2 * h.d.Step)): // complete
		return
	case now.Sub(last) < 2*h.d.Step: // nothing new yet
		return
	case now.Sub(inc.WindowEnd) > completeWithin: // the source has likely moved on; keep what is archived
		return
	}
	end := inc.WindowEnd
	if end.After(now) {
		end = now
	}
	ws, err := h.d.Capture.Range(ctx, inc.Scope, metrics.IDs(), metrics.Range{Start: inc.WindowStart, End: end, Step: h.d.Step})
	if err != nil {
		h.d.Logger.WarnContext(ctx, "incidents: complete chart windows", "incident", inc.ID, "err", err)
		return
	}
	if sampleCount(ws) <= sampleCount(inc.Windows) {
		return
	}
	if err := h.d.Archive.ReplaceWindows(ctx, inc.ID, ws); err != nil {
		h.d.Logger.WarnContext(ctx, "incidents: store completed chart windows", "incident", inc.ID, "err", err)
		return
	}
	inc.Windows = ws
}

// OpenIncident implements IncidentOpener for "Diagnose now": the snapshot
// and its diagnosis are already made; the windows are captured here.
func (h *Incidents) OpenIncident(ctx context.Context, s metrics.Snapshot, d diagnose.Diagnosis) (string, error) {
	detail, _ := json.Marshal(map[string]string{"source": "diagnose now"})
	if h.firstLoad(ctx) {
		// The diagnosis was made before the archive's reviewed incidents
		// were learned: make it again with them.
		d = h.d.Diagnoser.Diagnose(s)
	}
	inc, _, err := h.Open(ctx, s.Scope, Trigger{Kind: store.TriggerManual, At: s.At, Detail: detail}, &s, &d)
	if err != nil {
		return "", err
	}
	return views.IncidentPath(inc.ID), nil
}

func diagnosisRecord(d diagnose.Diagnosis, at time.Time) (store.DiagnosisRecord, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return store.DiagnosisRecord{}, fmt.Errorf("incidents: encode diagnosis: %w", err)
	}
	version := d.EngineVersion
	if version == "" {
		version = "unknown"
	}
	conf := d.Confidence
	if !(conf >= 0) {
		conf = 0
	}
	conf = min(conf, 1)
	return store.DiagnosisRecord{
		EngineVersion: version, CreatedAt: at, RootCause: d.RootCause, Confidence: conf,
		Severity: string(d.Severity), Body: body,
	}, nil
}

func withCaptureErrors(detail json.RawMessage, errs []string) json.RawMessage {
	m := map[string]any{}
	if len(detail) > 0 {
		_ = json.Unmarshal(detail, &m)
	}
	m["capture_errors"] = errs
	out, err := json.Marshal(m)
	if err != nil {
		return detail
	}
	return out
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
		return 0, badParam("id", "%q is not an incident number", truncate(c.Param("id"), 32))
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
	switch {
	case errors.Is(err, store.ErrNotFound):
		msg, ok := notFoundText[param]
		if !ok {
			msg = "Not found."
		}
		return echo.NewHTTPError(http.StatusNotFound, msg).SetInternal(err)
	case errors.Is(err, store.ErrInvalid):
		msg := err.Error()
		if i := strings.Index(msg, store.ErrInvalid.Error()+": "); i >= 0 {
			msg = msg[i+len(store.ErrInvalid.Error())+2:]
		}
		return &ParamError{Param: param, Reason: msg}
	case errors.Is(err, store.ErrConflict):
		return &ParamError{Param: param, Reason: err.Error(), Status: http.StatusConflict}
	}
	return err
}
