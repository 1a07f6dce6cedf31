package handlers

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// Diagnoses runs the diagnosis engine: "Diagnose now" on a live view and
// the JSON API.
type Diagnoses struct{ d *Deps }

// Create captures a snapshot of the scope at the form's "at" time (default
// now) and diagnoses it. With an IncidentOpener it opens an incident and
// redirects to it; otherwise it shows the diagnosis.
func (h *Diagnoses) Create(c echo.Context) error {
	ctx := c.Request().Context()
	scope, _, err := resolveScope(ctx, h.d.Telemetry, c)
	if err != nil {
		return err
	}
	now := h.d.Now().UTC()
	at := now
	if raw := c.FormValue("at"); raw != "" {
		t, err := parseTime(raw)
		if err != nil {
			return badParam("at", "%v", err)
		}
		if t.After(now) {
			t = now
		}
		at = t
	}
	snap, err := h.d.Telemetry.Snapshot(ctx, scope, at)
	if err != nil {
		return fmt.Errorf("diagnoses: snapshot of %s at %s: %w", scope, at.Format(time.RFC3339), err)
	}
	h.d.Diagnoses.Inc()
	if h.d.Incidents != nil {
		inc, err := h.d.Incidents.DiagnoseNow(ctx, snap)
		if err != nil {
			return fmt.Errorf("diagnoses: open incident for %s: %w", scope, err)
		}
		return redirect(c, route.URL(route.IncidentShow, inc.ID))
	}
	diag := h.d.Diagnoser.Diagnose(snap)
	back := views.ScopePath(scope, views.RangeQuery("", at.Add(-time.Hour), at))
	vm := views.DiagnosisView{
		Layout:   h.d.layout(i18n.T(c.Request().Context(), "diagnosis.of", scope.String()), ""),
		Scope:    scope,
		At:       snap.At,
		BackHref: back,
		Panel:    withEngineKnobs(views.NewDiagnosisPanel(diag), snap.Engine),
	}
	vm.Charts = h.evidenceCharts(c, snap, diag)
	return render(c, http.StatusOK, views.DiagnosisPage(vm))
}

// maxEvidenceCharts bounds the charts on the diagnosis page.
const maxEvidenceCharts = 4

// evidenceCharts draws the two hours before the snapshot for the leading
// evidence metrics, with the baseline's mean ± 3σ shaded over the window it
// was computed from. Charts are a courtesy: a failing query only logs.
func (h *Diagnoses) evidenceCharts(c echo.Context, snap metrics.Snapshot, diag diagnose.Diagnosis) []views.Chart {
	ctx := c.Request().Context()
	var ids []string
	for _, e := range diag.Evidence {
		if _, ok := metrics.Lookup(e.Metric); ok && !slices.Contains(ids, e.Metric) && len(ids) < maxEvidenceCharts {
			ids = append(ids, e.Metric)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	r := metrics.Range{Start: snap.At.Add(-2 * time.Hour), End: snap.At, Step: time.Minute}
	series, err := h.d.Telemetry.Range(ctx, snap.Scope, ids, r)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "diagnoses: evidence charts", "scope", snap.Scope.String(), "err", err)
		return nil
	}
	dev := h.d.Deviations(snap)
	var out []views.Chart
	for i, s := range series {
		if i >= len(ids) {
			break
		}
		m, _ := metrics.Lookup(ids[i])
		spec := views.ChartSpec{
			ID: "evidence-" + m.ID, Title: views.MetricLabel(m.ID), Unit: m.Unit,
			Start: r.Start, End: r.End, Step: r.Step,
			Series: []views.ChartSeries{{Metric: m.ID, Samples: s.Samples}},
		}
		if d, ok := dev[m.ID]; ok && d.Std > 0 {
			from, to := snap.At.Add(-65*time.Minute), snap.At.Add(-6*time.Minute)
			lo, hi := math.Max(d.Mean-3*d.Std, m.Min), d.Mean+3*d.Std
			if m.Max > 0 {
				hi = math.Min(hi, m.Max)
			}
			spec.Band = &views.ChartBand{
				Name:  "baseline ±3σ",
				Lower: []metrics.Sample{{T: from, V: lo}, {T: to, V: lo}},
				Upper: []metrics.Sample{{T: from, V: hi}, {T: to, V: hi}},
			}
		}
		out = append(out, views.NewChart(spec))
	}
	return out
}

// APIError is the JSON body of a rejected API request.
type APIError struct {
	Error string `json:"error"`
}

// API diagnoses one snapshot posted as JSON (the snapshot contract) and
// answers with one diagnosis, its texts in the request's language. Bad
// input is a 400 whose error is the decoder's message.
func (h *Diagnoses) API(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, metrics.MaxSnapshotBytes+1))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return c.JSON(http.StatusRequestEntityTooLarge, APIError{"request body is over the size limit"})
		}
		return fmt.Errorf("diagnoses: read body: %w", err)
	}
	snap, err := metrics.DecodeSnapshot(body)
	if err != nil {
		return c.JSON(http.StatusBadRequest, APIError{err.Error()})
	}
	diag := h.d.Diagnoser.Diagnose(snap)
	h.d.Diagnoses.Inc()
	// Field names and ids are the contract; the texts follow the
	// request's language (English unless it asks for another).
	return c.JSON(http.StatusOK, diagnose.Localize(diag, i18n.From(c.Request().Context()).Code()))
}
