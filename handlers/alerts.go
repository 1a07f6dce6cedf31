package handlers

import (
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/route"
)

// MaxAlertBody bounds an Alertmanager webhook message. It is far above
// what incident.MaxAlertsPerMessage alerts take, so that a large group is
// handled in part (and the rest reported) instead of refused whole:
// Alertmanager does not retry a 4xx.
const MaxAlertBody = 16 << 20

// Alerts receives Alertmanager's webhook; the authentication middleware
// has already checked its bearer token.
type Alerts struct {
	Service *incident.Service
}

// Alertmanager opens and resolves incidents from a webhook message and
// answers what happened to each alert: 200, or 503 when one could not be
// stored (Alertmanager retries 5xx; alerts already handled are found
// again, not duplicated).
func (h *Alerts) Alertmanager(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxAlertBody+1))
	if err != nil {
		return badParam("body", "could not be read: %v", err)
	}
	if len(body) > MaxAlertBody {
		return &ParamError{Param: "body", Reason: fmt.Sprintf("is larger than %d bytes", MaxAlertBody), Status: http.StatusRequestEntityTooLarge}
	}
	msg, err := incident.DecodeAlertmanager(body)
	if err != nil {
		return badParam("body", "%v", err)
	}
	results := h.Service.HandleAlertmanager(c.Request().Context(), msg)
	status := http.StatusOK
	for _, r := range results {
		if r.Status == "failed" {
			status = http.StatusServiceUnavailable
		}
	}
	return c.JSON(status, map[string]any{"alerts": results})
}

// IsAlertmanagerWebhook reports a webhook request, which bounds its own
// body at MaxAlertBody instead of the console-wide limit.
func IsAlertmanagerWebhook(c echo.Context) bool {
	return c.Request().Method == http.MethodPost && c.Path() == route.APIAlertmanager.Pattern()
}
