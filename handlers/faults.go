package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// Faults serves the demo fault-injection panel. Its routes answer 404 when
// no simulator is wired.
type Faults struct{ d *Deps }

// MaxFaultDuration bounds an injected fault's duration.
const MaxFaultDuration = 7 * 24 * time.Hour

func (h *Faults) injector() (FaultInjector, error) {
	if h.d.Faults == nil {
		return nil, echo.ErrNotFound
	}
	return h.d.Faults, nil
}

// List shows the injection form and the active faults.
func (h *Faults) List(c echo.Context) error {
	fi, err := h.injector()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	scopes, err := h.d.Telemetry.Scopes(ctx)
	if err != nil {
		return fmt.Errorf("faults: list scopes: %w", err)
	}
	vm := views.FaultsView{Layout: h.d.layout(i18n.T(ctx, "nav.faults"), views.NavFaults), Now: h.d.Now()}
	for _, id := range metrics.FaultCauses() {
		vm.Causes = append(vm.Causes, views.FaultCauseOption{ID: id, Title: views.CauseTitle(id)})
	}
	for _, s := range scopes {
		vm.Scopes = append(vm.Scopes, s.String())
	}
	for _, f := range fi.Faults() {
		until := i18n.T(ctx, "faults.until_cleared")
		if f.Duration > 0 {
			until = i18n.From(ctx).Time(f.Start.Add(f.Duration))
		}
		vm.Active = append(vm.Active, views.FaultRow{
			Cause: f.Cause, Scope: f.Scope.String(), Severity: strconv.FormatFloat(f.Severity, 'f', 2, 64),
			Start: f.Start, Until: until,
		})
	}
	switch {
	case c.QueryParam("injected") != "":
		vm.Flash = i18n.T(ctx, "faults.injected", views.CauseTitleIn(ctx, c.QueryParam("injected")))
	case c.QueryParam("cleared") != "":
		vm.Flash = i18n.T(ctx, "faults.cleared")
	}
	return render(c, http.StatusOK, views.FaultsPage(vm))
}

// Create injects a fault from the form and redirects to the list.
func (h *Faults) Create(c echo.Context) error {
	fi, err := h.injector()
	if err != nil {
		return err
	}
	f := Fault{Cause: c.FormValue("cause")}
	if !slices.Contains(metrics.FaultCauses(), f.Cause) {
		return badParam("cause", "%q is not an injectable root cause; use one of %s", f.Cause, strings.Join(metrics.FaultCauses(), ", "))
	}
	model, inst, _ := strings.Cut(c.FormValue("scope"), "/")
	f.Scope = metrics.Scope{Model: model, Instance: inst}
	if err := checkName("scope", model); err != nil {
		return err
	}
	scopes, err := h.d.Telemetry.Scopes(c.Request().Context())
	if err != nil {
		return fmt.Errorf("faults: list scopes: %w", err)
	}
	if !slices.Contains(scopes, f.Scope) {
		return badParam("scope", "no scope %q has reported metrics", f.Scope.String())
	}
	sev, err := strconv.ParseFloat(c.FormValue("severity"), 64)
	if err != nil || sev < 0 || sev > 1 {
		return badParam("severity", "must be a number from 0 to 1, not %q", c.FormValue("severity"))
	}
	f.Severity = sev
	if raw := strings.TrimSpace(c.FormValue("duration")); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 || d > MaxFaultDuration {
			return badParam("duration", "must be a positive Go duration up to 168h (e.g. 30m), not %q", raw)
		}
		f.Duration = d
	}
	f.Start = h.d.Now()
	id, err := fi.Inject(f)
	if err != nil {
		return badParam("cause", "the simulator refused the fault: %v", err)
	}
	return redirect(c, route.URLQuery(route.Faults, url.Values{"injected": {id}}))
}

// Clear removes every active fault and redirects to the list.
func (h *Faults) Clear(c echo.Context) error {
	fi, err := h.injector()
	if err != nil {
		return err
	}
	fi.ClearFaults()
	return redirect(c, route.URLQuery(route.Faults, url.Values{"cleared": {"1"}}))
}
