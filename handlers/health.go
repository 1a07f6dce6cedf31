package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Health answers liveness and readiness probes.
type Health struct{ d *Deps }

// Live answers 200 while the process serves requests.
func (h *Health) Live(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// Ready answers 200 when at least one metric source answers and every
// store can write, and 503 saying what is wrong otherwise; a 200 still
// lists the failing sources.
func (h *Health) Ready(c echo.Context) error {
	var refused []string
	for _, st := range h.d.Stores {
		if err := st.WriteError(); err != nil {
			refused = append(refused, err.Error())
		}
	}
	if len(refused) > 0 {
		return c.String(http.StatusServiceUnavailable, "not ready: writes are refused\n"+strings.Join(refused, "\n")+"\n")
	}
	st := h.d.Telemetry.Status()
	if len(st) == 0 {
		return c.String(http.StatusServiceUnavailable, "not ready: no metric source is configured\n")
	}
	var failing []string
	ok := false
	for _, s := range st {
		if s.OK {
			ok = true
			continue
		}
		failing = append(failing, s.Name+": "+s.Err)
	}
	if !ok {
		return c.String(http.StatusServiceUnavailable, "not ready: no metric source is reachable\n"+strings.Join(failing, "\n")+"\n")
	}
	// Ready with a degraded source (e.g. GPUs that do not join their
	// engines): say which, for the operator reading the probe.
	return c.String(http.StatusOK, "ready\n"+strings.Join(failing, "\n")+strings.Repeat("\n", min(len(failing), 1)))
}
