package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// ChangeStore is what the change-request handlers need from the archive.
// *store.Store implements it.
type ChangeStore interface {
	Page(ctx context.Context, id int64) (store.Page, error)
	AddChange(ctx context.Context, c store.NewChange) (store.Change, error)
	Change(ctx context.Context, incidentID, id int64) (store.Change, error)
	Changes(ctx context.Context, incidentID int64) ([]store.Change, error)
	PendingChanges(ctx context.Context) ([]store.Change, error)
	RecordDelivery(ctx context.Context, changeID int64, d store.Delivery, final bool) error
	Redeliver(ctx context.Context, incidentID, id int64) error
	SetChangeStatus(ctx context.Context, incidentID, id int64, status store.ChangeStatus, at time.Time) error
	SetChangeOutcome(ctx context.Context, incidentID, id int64, outcome json.RawMessage, verdict string) error
	ActionOutcomes(ctx context.Context, cause string) ([]store.ActionOutcome, error)
	UnmeasuredChanges(ctx context.Context) ([]store.Change, error)
}

// EngineInfo reads the engine configuration labels of a scope.
// *telemetry.Telemetry implements it.
type EngineInfo interface {
	EngineInfo(ctx context.Context, scope metrics.Scope, at time.Time) (map[string]string, error)
}

// GPUInventory lists the GPUs with their recent utilisation, for the
// capacity check behind scale-out advice.
type GPUInventory interface {
	GPUs(ctx context.Context, window time.Duration, at time.Time) ([]change.GPU, error)
}

// ChangeDeps are the dependencies of the change-request handlers.
type ChangeDeps struct {
	Store   ChangeStore // required
	Capture Capture     // the before/after windows of an outcome; nil: no outcomes
	Engine  EngineInfo  // nil: current values only from EngineConfig and the form
	// EngineConfig are knob values from the configuration file the
	// operator points at (serve --engine-config); they win over the
	// engine's info labels.
	EngineConfig map[string]string
	GPUs         GPUInventory     // nil: no capacity check
	Webhook      *change.Webhook  // nil: no outbound delivery
	Schedule     *change.Schedule // nil: no deployment window
	// BaseURL prefixes the incident link in a change request; empty
	// means the request's scheme and host.
	BaseURL string
	// OutcomeWindow is how long before and after a change its outcome
	// compares; zero means 1 h.
	OutcomeWindow time.Duration
	// CapacityWindow is how long a GPU must have been idle; zero means
	// 15 min.
	CapacityWindow time.Duration
	Layout         func(title, nav string) views.LayoutView
	Assets         views.Assets
	Logger         *slog.Logger
	Now            func() time.Time
}

// Changes serves change requests made from an incident's actions and
// delivers them to the configured webhook.
type Changes struct {
	d        ChangeDeps
	inflight sync.Map // change id -> struct{}: deliveries under way
	bg       context.Context
}

// NewChanges builds the change-request handlers, filling in defaults.
// Deliveries started from a request run under bg, so that they outlive
// the request and stop with the server.
func NewChanges(bg context.Context, d ChangeDeps) *Changes {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OutcomeWindow <= 0 {
		d.OutcomeWindow = time.Hour
	}
	if d.CapacityWindow <= 0 {
		d.CapacityWindow = 15 * time.Minute
	}
	if bg == nil {
		bg = context.Background()
	}
	return &Changes{d: d, bg: bg}
}

// Route names of the change requests.
const (
	RouteChangeCreate  = "change.create"
	RouteChangeShow    = "change.show"
	RouteChangeStatus  = "change.status"
	RouteChangeDeliver = "change.deliver"
)

// Register adds the change-request routes to g (the root group).
func (h *Changes) Register(g *echo.Group) {
	g.POST("/incidents/:id/changes", h.Create).Name = RouteChangeCreate
	g.GET("/incidents/:id/changes/:cid", h.Show).Name = RouteChangeShow // also :cid.md and :cid.json
	g.POST("/incidents/:id/changes/:cid/status", h.Status).Name = RouteChangeStatus
	g.POST("/incidents/:id/changes/:cid/deliver", h.Deliver).Name = RouteChangeDeliver
}

// Current returns the knob values Casebook knows for a scope: the engine's
// info labels, overridden by the configured engine file.
func (h *Changes) Current(ctx context.Context, scope metrics.Scope) map[string]string {
	out := map[string]string{}
	if h.d.Engine != nil && scope.Model != "" {
		if labels, err := h.d.Engine.EngineInfo(ctx, scope, h.d.Now()); err == nil {
			out = change.Current(labels)
		} else {
			h.d.Logger.DebugContext(ctx, "changes: engine info", "scope", scope.String(), "err", err)
		}
	}
	for k, v := range h.d.EngineConfig {
		out[k] = v
	}
	return out
}

// Create builds a change request from one action of the incident's
// current diagnosis, stores it and queues it for the webhook.
func (h *Changes) Create(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	p, err := h.d.Store.Page(ctx, id)
	if err != nil {
		return archiveError(err, "id")
	}
	if len(p.Diagnoses) == 0 {
		return badParam("id", "incident %d has no diagnosis to act on", id)
	}
	d := decodeDiagnosis(p.Diagnoses[0])
	actionID := strings.TrimSpace(c.FormValue("action"))
	var act *diagnose.Action
	for i := range d.Actions {
		if d.Actions[i].ID == actionID {
			act = &d.Actions[i]
		}
	}
	if act == nil {
		return badParam("action", "the current diagnosis has no action %q", truncate(actionID, 64))
	}
	scope := p.Incident.Scope
	current := h.Current(ctx, scope)
	if v := strings.TrimSpace(c.FormValue("current")); v != "" && act.Knob != "" {
		current[act.Knob] = v
	}
	var prop *change.Proposal
	if act.Knob != "" {
		pr, err := change.Propose(*act, current, p.Incident.Snapshot.Current, c.FormValue("value"))
		switch {
		case errors.Is(err, change.ErrNeedCurrent):
			return badParam("current", "Casebook does not know the current %s; enter it in the form", act.Knob)
		case errors.Is(err, change.ErrNeedValue):
			return badParam("value", "the rule %q gives no value to compute; enter the value for %s", act.Proposed, act.Knob)
		case err != nil:
			return badParam("value", "%s", strings.TrimPrefix(err.Error(), "change: "))
		}
		prop = &pr
	}
	var capacity *change.Capacity
	if change.ScaleOut(*act) && h.d.GPUs != nil {
		gpus, err := h.d.GPUs.GPUs(ctx, h.d.CapacityWindow, h.d.Now())
		if err != nil {
			h.d.Logger.WarnContext(ctx, "changes: capacity check", "err", err)
		}
		tp, _ := strconv.Atoi(current["tensor_parallel_size"])
		if act.Knob == "tensor_parallel_size" && prop != nil {
			tp, _ = strconv.Atoi(prop.Proposed)
		}
		cp := change.CheckCapacity(gpus, h.d.CapacityWindow, tp)
		capacity = &cp
	}
	req, err := change.Build(change.BuildInput{
		IncidentID: id, IncidentURL: h.baseURL(c) + views.IncidentPath(id), Title: p.Incident.Title, Scope: scope,
		Diagnosis: d, Action: *act, Proposal: prop, Schedule: h.d.Schedule, Capacity: capacity,
		By: strings.TrimSpace(c.FormValue("by")), Now: h.d.Now(),
	})
	if err != nil {
		return err
	}
	doc, err := req.JSON()
	if err != nil {
		return err
	}
	nc := store.NewChange{IncidentID: id, UID: req.ID, RootCause: d.RootCause, ActionID: act.ID, Knob: act.Knob,
		Doc: doc, Markdown: req.Markdown(), CreatedAt: req.CreatedAt, CreatedBy: req.CreatedBy, Deliver: h.d.Webhook != nil}
	if prop != nil {
		nc.Before, nc.After = prop.Current, prop.Proposed
	}
	stored, err := h.d.Store.AddChange(ctx, nc)
	if err != nil {
		return archiveError(err, "id")
	}
	if h.d.Webhook != nil {
		h.startDelivery(stored)
	}
	return c.Redirect(http.StatusSeeOther, views.ChangePath(id, stored.ID))
}

func (h *Changes) baseURL(c echo.Context) string {
	if h.d.BaseURL != "" {
		return strings.TrimSuffix(h.d.BaseURL, "/")
	}
	return c.Scheme() + "://" + c.Request().Host
}

// changeParams reads the incident and change ids and the page's format
// from the path ("12", "12.md", "12.json").
func changeParams(c echo.Context) (incident, id int64, format string, err error) {
	if incident, err = incidentID(c); err != nil {
		return 0, 0, "", err
	}
	raw := c.Param("cid")
	num, format, _ := strings.Cut(raw, ".")
	id, err = strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 || (format != "" && format != "md" && format != "json") {
		return 0, 0, "", badParam("cid", "%q is not a change request number (optionally with .md or .json)", truncate(raw, 32))
	}
	return incident, id, format, nil
}

// Show renders a change request as a page, Markdown or JSON. An applied
// change whose outcome window has passed is measured first.
func (h *Changes) Show(c echo.Context) error {
	ctx := c.Request().Context()
	incident, id, format, err := changeParams(c)
	if err != nil {
		return err
	}
	ch, err := h.d.Store.Change(ctx, incident, id)
	if err != nil {
		return changeError(err)
	}
	switch format {
	case "md":
		c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="change-%d.md"`, id))
		return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(ch.Markdown))
	case "json":
		return c.JSONBlob(http.StatusOK, ch.Doc)
	}
	p, err := h.d.Store.Page(ctx, incident)
	if err != nil {
		return archiveError(err, "id")
	}
	if ch, err = h.measure(ctx, p.Incident.Scope, ch); err != nil {
		h.d.Logger.WarnContext(ctx, "changes: outcome", "change", ch.ID, "err", err)
	}
	return render(c, http.StatusOK, views.ChangePage(h.changeView(p.Incident, ch)))
}

func changeError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, "This incident has no such change request.").SetInternal(err)
	}
	return archiveError(err, "cid")
}

// Status marks a change request applied or rolled back.
func (h *Changes) Status(c echo.Context) error {
	ctx := c.Request().Context()
	incident, id, format, err := changeParams(c)
	if err != nil || format != "" {
		return errors.Join(err, badParam("cid", "not a change request number"))
	}
	st := store.ChangeStatus(c.FormValue("status"))
	if st != store.ChangeApplied && st != store.ChangeRolledBack {
		return badParam("status", "%q is not applied or rolled_back", truncate(string(st), 32))
	}
	if err := h.d.Store.SetChangeStatus(ctx, incident, id, st, h.d.Now()); err != nil {
		return changeError(err)
	}
	return c.Redirect(http.StatusSeeOther, views.ChangePath(incident, id))
}

// Deliver queues a change request for the webhook again.
func (h *Changes) Deliver(c echo.Context) error {
	ctx := c.Request().Context()
	incident, id, format, err := changeParams(c)
	if err != nil || format != "" {
		return errors.Join(err, badParam("cid", "not a change request number"))
	}
	if h.d.Webhook == nil {
		return badParam("cid", "no webhook is configured (serve --change-webhook-url)")
	}
	if err := h.d.Store.Redeliver(ctx, incident, id); err != nil {
		return changeError(err)
	}
	ch, err := h.d.Store.Change(ctx, incident, id)
	if err != nil {
		return changeError(err)
	}
	// A new round of attempts: earlier ones stay on the page.
	ch.Attempts = nil
	h.startDelivery(ch)
	return c.Redirect(http.StatusSeeOther, views.ChangePath(incident, id))
}

// startDelivery delivers one change request in the background unless a
// delivery of it is already under way.
func (h *Changes) startDelivery(ch store.Change) {
	if _, busy := h.inflight.LoadOrStore(ch.ID, struct{}{}); busy {
		return
	}
	go func() {
		defer h.inflight.Delete(ch.ID)
		h.deliver(h.bg, ch)
	}()
}

func (h *Changes) deliver(ctx context.Context, ch store.Change) {
	w := h.d.Webhook
	done := 0
	for _, a := range ch.Attempts {
		done = max(done, a.Attempt)
	}
	w.Deliver(ctx, ch.UID, ch.Doc, done, func(a change.Attempt) {
		final := !a.OK && (!a.Retry || a.N >= w.Attempts())
		d := store.Delivery{Attempt: a.N, At: a.At, OK: a.OK, Code: a.Code, Error: a.Error}
		if err := h.d.Store.RecordDelivery(context.WithoutCancel(ctx), ch.ID, d, final); err != nil {
			h.d.Logger.ErrorContext(ctx, "changes: record delivery", "change", ch.ID, "err", err)
		}
		h.d.Logger.InfoContext(ctx, "changes: webhook attempt", "change", ch.UID, "attempt", a.N, "ok", a.OK, "code", a.Code, "err", a.Error)
	})
}

// Run re-tries pending deliveries (left by a restart or a failed round)
// and measures the applied changes whose outcome window has passed, every
// interval until ctx is done.
func (h *Changes) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if h.d.Webhook != nil {
			pending, err := h.d.Store.PendingChanges(ctx)
			if err != nil && ctx.Err() == nil {
				h.d.Logger.WarnContext(ctx, "changes: pending deliveries", "err", err)
			}
			for _, ch := range pending {
				h.startDelivery(ch)
			}
		}
		if _, err := h.MeasureDue(ctx); err != nil && ctx.Err() == nil {
			h.d.Logger.WarnContext(ctx, "changes: outcomes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// MeasureDue measures every applied change whose outcome window has
// passed and returns how many it measured.
func (h *Changes) MeasureDue(ctx context.Context) (int, error) {
	if h.d.Capture == nil {
		return 0, nil
	}
	due, err := h.d.Store.UnmeasuredChanges(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ch := range due {
		p, err := h.d.Store.Page(ctx, ch.IncidentID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got, err := h.measure(ctx, p.Incident.Scope, ch)
		if err != nil {
			errs = append(errs, fmt.Errorf("change %d: %w", ch.ID, err))
			continue
		}
		if len(got.Outcome) > 0 {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// measure evaluates an applied change's outcome once its window has
// passed, and stores it.
func (h *Changes) measure(ctx context.Context, scope metrics.Scope, ch store.Change) (store.Change, error) {
	if ch.Status != store.ChangeApplied || ch.AppliedAt.IsZero() || len(ch.Outcome) > 0 || h.d.Capture == nil {
		return ch, nil
	}
	w := h.d.OutcomeWindow
	settle := w / 4
	if h.d.Now().Before(ch.AppliedAt.Add(settle + w)) {
		return ch, nil
	}
	var req change.Request
	if err := json.Unmarshal(ch.Doc, &req); err != nil {
		return ch, fmt.Errorf("change %d: document: %w", ch.ID, err)
	}
	ids := []string{metrics.ArrivalRPS, metrics.ThroughputRPS}
	for _, e := range req.Effects {
		ids = append(ids, e.Metric)
	}
	window := func(start time.Time) ([]metrics.Point, error) {
		step := max(w/60, 15*time.Second)
		series, err := h.d.Capture.Range(ctx, scope, ids, metrics.Range{Start: start, End: start.Add(w), Step: step})
		if err != nil {
			return nil, err
		}
		return pointsOf(series), nil
	}
	before, err := window(ch.AppliedAt.Add(-w))
	if err != nil {
		return ch, err
	}
	after, err := window(ch.AppliedAt.Add(settle))
	if err != nil {
		return ch, err
	}
	o := change.Evaluate(req.Effects, before, after, ch.AppliedAt, w)
	body, err := json.Marshal(o)
	if err != nil {
		return ch, err
	}
	if err := h.d.Store.SetChangeOutcome(ctx, ch.IncidentID, ch.ID, body, o.Verdict); err != nil {
		return ch, err
	}
	ch.Outcome, ch.Verdict = body, o.Verdict
	return ch, nil
}

// pointsOf turns per-metric series into points by timestamp.
func pointsOf(series []metrics.Series) []metrics.Point {
	byT := map[int64]metrics.Values{}
	var order []int64
	for _, s := range series {
		for _, x := range s.Samples {
			k := x.T.UnixNano()
			v, ok := byT[k]
			if !ok {
				v = metrics.Values{}
				byT[k] = v
				order = append(order, k)
			}
			if _, seen := v[s.Metric]; !seen && !math.IsNaN(x.V) {
				v[s.Metric] = x.V
			}
		}
	}
	out := make([]metrics.Point, 0, len(order))
	for _, k := range order {
		out = append(out, metrics.Point{At: time.Unix(0, k).UTC(), Values: byT[k]})
	}
	return out
}

func (h *Changes) layout(title string) views.LayoutView {
	if h.d.Layout != nil {
		return h.d.Layout(title, views.NavIncidents)
	}
	return views.LayoutView{Title: title, Nav: views.NavIncidents, Assets: h.d.Assets}
}

// ChangeRows are an incident's change requests for its page.
func ChangeRows(cs []store.Change) []views.ChangeRow {
	out := make([]views.ChangeRow, 0, len(cs))
	for _, ch := range cs {
		out = append(out, changeRow(ch))
	}
	return out
}

func changeRow(ch store.Change) views.ChangeRow {
	var req change.Request
	_ = json.Unmarshal(ch.Doc, &req)
	title := req.Title
	if title == "" {
		title = ch.ActionID
	}
	return views.ChangeRow{ID: ch.ID, Title: title, Status: string(ch.Status), Delivery: ch.Delivery, Verdict: ch.Verdict,
		CreatedAt: ch.CreatedAt, Link: views.ChangePath(ch.IncidentID, ch.ID)}
}

// changeTimeline adds an incident's change requests to its timeline.
func changeTimeline(cs []store.Change) []views.TimelineEntry {
	var out []views.TimelineEntry
	for _, ch := range cs {
		r := changeRow(ch)
		text := r.Title
		switch ch.Delivery {
		case store.DeliveryPending:
			text += " (webhook: sending)"
		case store.DeliveryDelivered:
			text += " (webhook: delivered)"
		case store.DeliveryFailed:
			text += " (webhook: failed)"
		}
		out = append(out, views.TimelineEntry{At: ch.CreatedAt, Kind: "change", Who: ch.CreatedBy, Text: text, Link: r.Link})
		if !ch.AppliedAt.IsZero() {
			text := r.Title
			if ch.Verdict != "" {
				text += ": " + views.StatusWord(ch.Verdict)
			}
			kind := "applied"
			if ch.Status == store.ChangeRolledBack {
				kind = "rolled_back"
			}
			out = append(out, views.TimelineEntry{At: ch.AppliedAt, Kind: kind, Text: text, Link: r.Link})
		}
	}
	return out
}

func (h *Changes) changeView(inc store.Incident, ch store.Change) views.ChangeView {
	var req change.Request
	_ = json.Unmarshal(ch.Doc, &req)
	v := views.ChangeView{Layout: h.layout(fmt.Sprintf("Change request %d", ch.ID)), IncidentID: inc.ID, IncidentTitle: inc.Title,
		Row: changeRow(ch), UID: ch.UID, Action: req.Action.Title, Why: req.Action.Why, Risk: req.Risk, Rollback: req.Rollback,
		ArgDiff: req.VLLMArgs, Helm: req.HelmValues, Markdown: ch.Markdown, Webhook: h.d.Webhook != nil, AppliedAt: ch.AppliedAt,
		Verdict: ch.Verdict}
	if req.Change != nil {
		v.Knob, v.Before, v.After, v.Reason = req.Change.Knob, req.Change.Current, req.Change.Proposed, req.Change.Reason
		if v.Before == "" {
			v.Before = "unknown"
		}
	}
	if req.Window != nil {
		state := "Next window"
		if req.Window.Open {
			state = "Open now"
		}
		v.Window = fmt.Sprintf("%s: %s to %s (%s)", state, req.Window.Start.Format("Mon 2 Jan 2006 15:04"), req.Window.End.Format("15:04"), req.Window.Zone)
	}
	if req.Capacity != nil {
		v.Capacity = req.Capacity.Summary
		if len(req.Alternatives) > 0 {
			v.Capacity += " In-place alternatives to try first: " + strings.Join(req.Alternatives, "; ") + "."
		}
	}
	for _, e := range req.Effects {
		v.Effects = append(v.Effects, views.EffectText(diagnose.Effect{Metric: e.Metric, Direction: e.Direction, Size: e.Size}))
	}
	for _, a := range ch.Attempts {
		v.Attempts = append(v.Attempts, views.DeliveryRow{Attempt: a.Attempt, At: a.At, OK: a.OK, Code: a.Code, Error: a.Error})
	}
	if !ch.AppliedAt.IsZero() {
		v.OutcomeDue = ch.AppliedAt.Add(h.d.OutcomeWindow/4 + h.d.OutcomeWindow)
	}
	if len(ch.Outcome) > 0 {
		var o change.Outcome
		if json.Unmarshal(ch.Outcome, &o) == nil {
			for _, e := range o.Effects {
				v.Outcome = append(v.Outcome, views.OutcomeRow{Metric: views.MetricLabel(e.Metric), Direction: e.Direction,
					Before: fmt.Sprintf("%.4g", e.Before), After: fmt.Sprintf("%.4g", e.After), Change: fmt.Sprintf("%+.0f%%", 100*e.Change),
					Verdict: e.Verdict, Why: e.Why})
			}
		}
	}
	return v
}
