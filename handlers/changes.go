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

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
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

// Capture reads the metric windows around a change. *telemetry.Telemetry
// implements it.
type Capture interface {
	Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)
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
	// HelmChart is the deployment chart preset whose values a change
	// request also shows (serve --helm-chart); zero: vLLM arguments only.
	HelmChart change.HelmChart
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
	d ChangeDeps
	// Jobs deliver requests to the webhook and measure outcomes in the
	// background; serve runs them.
	Jobs *change.Jobs
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
	jobs := &change.Jobs{Store: d.Store, Webhook: d.Webhook, OutcomeWindow: d.OutcomeWindow, Logger: d.Logger, Now: d.Now}
	if d.Capture != nil {
		jobs.Capture = d.Capture.Range
	}
	return &Changes{d: d, Jobs: jobs.Start(bg)}
}

// APIList returns an incident's change requests as JSON: each with its
// document, status, delivery attempts and outcome.
func (h *Changes) APIList(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	if _, err := h.d.Store.Page(ctx, id); err != nil {
		return archiveError(err, "id")
	}
	cs, err := h.d.Store.Changes(ctx, id)
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []store.Change{}
	}
	return c.JSON(http.StatusOK, map[string]any{"changes": cs})
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
	d := incident.DecodeDiagnosis(p.Diagnoses[0])
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
	// The document is written in the language of the person asking for
	// it, as a ticket they file would be.
	lang := i18n.From(ctx).Code()
	current := h.Current(ctx, scope)
	if v := strings.TrimSpace(c.FormValue("current")); v != "" && act.Knob != "" {
		current[act.Knob] = v
	}
	var prop *change.Proposal
	if act.Knob != "" {
		pr, err := change.ProposeIn(lang, *act, current, p.Incident.Snapshot.Current, c.FormValue("value"))
		switch {
		case errors.Is(err, change.ErrNeedCurrent):
			return badParam("current", "Casebook does not know the current %s; enter it in the form", act.Knob)
		case errors.Is(err, change.ErrNeedValue):
			return badParam("value", "the rule %q gives no value to compute; enter the value for %s", act.Proposed, act.Knob)
		case err != nil:
			return badParam("value", "%s", strings.TrimPrefix(err.Error(), "change: "))
		}
		if e := p.Incident.Snapshot.Engine; e != "" {
			// The scope runs another engine: the change is written in its
			// flags, or refused when it has no equivalent.
			if pr, err = pr.ForEngine(e); err != nil {
				return badParam("action", "%s", strings.TrimPrefix(err.Error(), "change: "))
			}
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
		cp := change.CheckCapacityIn(lang, gpus, h.d.CapacityWindow, tp)
		capacity = &cp
	}
	req, err := change.Build(change.BuildInput{
		IncidentID: id, IncidentURL: h.baseURL(c) + route.URL(route.IncidentShow, id), Title: p.Incident.Title, Scope: scope,
		Diagnosis: d, Action: *act, Proposal: prop, Schedule: h.d.Schedule, Capacity: capacity, Chart: h.d.HelmChart,
		By: strings.TrimSpace(c.FormValue("by")), Now: h.d.Now(), Lang: lang,
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
		h.Jobs.Deliver(stored)
	}
	return c.Redirect(http.StatusSeeOther, route.URL(route.ChangeShow, id, stored.ID))
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
	if ch, err = h.Jobs.Measure(ctx, p.Incident.Scope, ch); err != nil {
		h.d.Logger.WarnContext(ctx, "changes: outcome", "change", ch.ID, "err", err)
	}
	return render(c, http.StatusOK, views.ChangePage(h.changeView(ctx, p.Incident, ch)))
}

func changeError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return HTTPError(http.StatusNotFound, "error.no_change").SetInternal(err)
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
	return c.Redirect(http.StatusSeeOther, route.URL(route.ChangeShow, incident, id))
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
	h.Jobs.Deliver(ch) // a new round of attempts; earlier ones stay on the page
	return c.Redirect(http.StatusSeeOther, route.URL(route.ChangeShow, incident, id))
}

// withEngineKnobs says, on a diagnosis panel of a scope that runs another
// engine than vLLM, how that engine sets each action's knob.
func withEngineKnobs(p views.DiagnosisPanelView, e metrics.Engine) views.DiagnosisPanelView {
	if e == "" || e == metrics.EngineVLLM {
		return p
	}
	p.Engine, p.EngineKnobs = metrics.EngineName(e), map[string]string{}
	for _, a := range p.D.Actions {
		if a.Knob != "" {
			p.EngineKnobs[a.Knob] = change.EngineKnob(a.Knob, e)
		}
	}
	return p
}
