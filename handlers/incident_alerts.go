package handlers

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// MaxAlertBody bounds an Alertmanager webhook message.
const MaxAlertBody = 1 << 20

// MaxAlertsPerMessage bounds the alerts processed from one message.
const MaxAlertsPerMessage = 500

// AlertmanagerMessage is the webhook body (payload version "4"). Unknown
// keys are ignored: Alertmanager adds new ones from time to time.
type AlertmanagerMessage struct {
	Version           string              `json:"version"`
	GroupKey          string              `json:"groupKey"`
	TruncatedAlerts   int                 `json:"truncatedAlerts"`
	Status            string              `json:"status"`
	Receiver          string              `json:"receiver"`
	GroupLabels       map[string]string   `json:"groupLabels"`
	CommonLabels      map[string]string   `json:"commonLabels"`
	CommonAnnotations map[string]string   `json:"commonAnnotations"`
	ExternalURL       string              `json:"externalURL"`
	Alerts            []AlertmanagerAlert `json:"alerts"`
}

// AlertmanagerAlert is one alert of a webhook message.
type AlertmanagerAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// AlertResult says what the webhook did with one alert.
type AlertResult struct {
	Fingerprint string `json:"fingerprint"`
	Status      string `json:"status"` // "opened", "existing", "resolved", "skipped"
	IncidentID  int64  `json:"incident_id,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// maxAlertDepth bounds the nesting of a webhook body.
const maxAlertDepth = 8

// DecodeAlertmanager parses and validates a webhook body. Every problem is
// an error naming the field.
func DecodeAlertmanager(body []byte) (AlertmanagerMessage, error) {
	var m AlertmanagerMessage
	// A webhook message nests four levels (message, alerts, alert, labels).
	if err := metrics.CheckJSONDepth(body, maxAlertDepth); err != nil {
		return m, fmt.Errorf("the body is nested deeper than %d levels; an Alertmanager message has four", maxAlertDepth)
	}
	if err := json.Unmarshal(body, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return m, fmt.Errorf("field %q should be %s, not %s", te.Field, te.Type, te.Value)
		}
		return m, fmt.Errorf("the body is not valid JSON: %v", err)
	}
	if m.Version != "4" {
		return m, fmt.Errorf("field \"version\" is %q; this endpoint accepts Alertmanager webhook version \"4\"", m.Version)
	}
	if len(m.Alerts) == 0 {
		return m, errors.New("field \"alerts\" is empty")
	}
	if len(m.Alerts) > MaxAlertsPerMessage {
		return m, fmt.Errorf("field \"alerts\" has %d entries; the limit is %d", len(m.Alerts), MaxAlertsPerMessage)
	}
	for i, a := range m.Alerts {
		switch {
		case a.Status != "firing" && a.Status != "resolved":
			return m, fmt.Errorf("alerts[%d].status is %q, not firing or resolved", i, a.Status)
		case a.Fingerprint == "" || len(a.Fingerprint) > 64:
			return m, fmt.Errorf("alerts[%d].fingerprint is empty or longer than 64 characters", i)
		case a.StartsAt.IsZero():
			return m, fmt.Errorf("alerts[%d].startsAt is missing", i)
		}
	}
	return m, nil
}

// alertScope finds the model and instance an alert is about: the vLLM
// model_name label (or model), and the pod label (or instance_name).
func alertScope(a AlertmanagerAlert, common map[string]string) (metrics.Scope, bool) {
	get := func(keys ...string) string {
		for _, k := range keys {
			if v := a.Labels[k]; v != "" {
				return v
			}
			if v := common[k]; v != "" {
				return v
			}
		}
		return ""
	}
	s := metrics.Scope{Model: get("model_name", "model"), Instance: get("pod")}
	if s.Model == "" || len(s.Model) > metrics.MaxNameLength || len(s.Instance) > metrics.MaxNameLength {
		return s, false
	}
	return s, true
}

func (h *Incidents) authorised(c echo.Context) bool {
	if webhookToken(c) {
		return true
	}
	if h.d.AlertToken == "" {
		return false
	}
	got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	if !ok {
		return false
	}
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(h.d.AlertToken))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// Alertmanager receives the Alertmanager webhook. A firing alert opens an
// incident (once per fingerprint and startsAt, so retries are harmless); a
// resolved one marks its incident's alert resolved. The reply lists what
// happened to each alert.
func (h *Incidents) Alertmanager(c echo.Context) error {
	if h.d.AlertToken == "" && !webhookToken(c) {
		return echo.NewHTTPError(http.StatusForbidden, "the Alertmanager webhook is disabled: no alert token is configured")
	}
	if !h.authorised(c) {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="casebook"`)
		return echo.NewHTTPError(http.StatusUnauthorized, "missing or wrong bearer token")
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxAlertBody+1))
	if err != nil {
		return badParam("body", "could not be read: %v", err)
	}
	if len(body) > MaxAlertBody {
		return &ParamError{Param: "body", Reason: fmt.Sprintf("is larger than %d bytes", MaxAlertBody), Status: http.StatusRequestEntityTooLarge}
	}
	msg, err := DecodeAlertmanager(body)
	if err != nil {
		return badParam("body", "%v", err)
	}
	// Alerts are handled concurrently, a few at a time: capturing evidence
	// is the slow part, and the archive group-commits concurrent opens.
	results := make([]AlertResult, len(msg.Alerts))
	sem := make(chan struct{}, alertWorkers)
	var wg sync.WaitGroup
	for i, a := range msg.Alerts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = h.handleAlert(c, msg, a)
		}()
	}
	wg.Wait()
	failed := false
	for _, r := range results {
		failed = failed || r.Status == "failed"
	}
	status := http.StatusOK
	if failed {
		status = http.StatusServiceUnavailable // Alertmanager retries 5xx
	}
	return c.JSON(status, map[string]any{"alerts": results})
}

// alertWorkers bounds how many alerts of one message are handled at once.
const alertWorkers = 4

func (h *Incidents) handleAlert(c echo.Context, msg AlertmanagerMessage, a AlertmanagerAlert) AlertResult {
	ctx := c.Request().Context()
	if a.Status == "firing" {
		return h.openFromAlert(c, msg, a)
	}
	r := AlertResult{Fingerprint: a.Fingerprint}
	id, err := h.d.Archive.ResolveAlert(ctx, a.Fingerprint, a.StartsAt, a.EndsAt)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.Status, r.Reason = "skipped", "no incident was opened for this alert"
	case err != nil:
		h.d.Logger.ErrorContext(ctx, "alertmanager: resolve", "fingerprint", a.Fingerprint, "err", err)
		r.Status, r.Reason = "failed", "could not be stored"
	default:
		r.Status, r.IncidentID = "resolved", id
		if inc, err := h.d.Archive.Incident(ctx, id); err == nil {
			h.completeWindows(ctx, &inc) // archive the minutes after the trigger now
		}
	}
	return r
}

func (h *Incidents) openFromAlert(c echo.Context, msg AlertmanagerMessage, a AlertmanagerAlert) AlertResult {
	ctx := c.Request().Context()
	r := AlertResult{Fingerprint: a.Fingerprint}
	if inc, err := h.d.Archive.IncidentByAlert(ctx, a.Fingerprint, a.StartsAt); err == nil {
		r.Status, r.IncidentID = "existing", inc.ID
		return r
	}
	scope, ok := alertScope(a, msg.CommonLabels)
	if !ok {
		r.Status, r.Reason = "skipped", "the alert has no model_name (or model) label, so it names no model"
		return r
	}
	detail, _ := json.Marshal(map[string]any{
		"alertname": a.Labels["alertname"], "labels": a.Labels, "annotations": a.Annotations,
		"generatorURL": a.GeneratorURL, "externalURL": msg.ExternalURL, "receiver": msg.Receiver,
	})
	if len(detail) > store.MaxDetailBytes {
		detail, _ = json.Marshal(map[string]any{"alertname": a.Labels["alertname"], "truncated": true})
	}
	title := a.Annotations["summary"]
	if title == "" {
		title = a.Labels["alertname"] + " on " + scope.String()
	}
	sev := a.Labels["severity"]
	if sev != "critical" && sev != "warning" && sev != "info" {
		sev = ""
	}
	tr := Trigger{Kind: store.TriggerAlertmanager, At: a.StartsAt, Title: title, Detail: detail, Severity: sev,
		Alert: &store.Alert{Fingerprint: a.Fingerprint, StartsAt: a.StartsAt, State: store.AlertFiring}}
	inc, created, err := h.Open(ctx, scope, tr, nil, nil)
	if err != nil {
		h.d.Logger.ErrorContext(ctx, "alertmanager: open incident", "fingerprint", a.Fingerprint, "err", err)
		r.Status, r.Reason = "failed", "could not be stored"
		return r
	}
	r.IncidentID = inc.ID
	r.Status = "opened"
	if !created {
		r.Status = "existing"
	}
	return r
}
