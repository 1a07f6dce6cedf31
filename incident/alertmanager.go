package incident

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// MaxAlertsPerMessage is how many alerts of one webhook message open or
// resolve incidents. Alertmanager does not retry a 4xx, so a larger group
// is not refused: the rest are answered "dropped", counted on the
// incidents the message opened, and logged.
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

// AlertResult says what the service did with one alert.
type AlertResult struct {
	Fingerprint string `json:"fingerprint"`
	// Status is "opened", "existing", "resolved", "skipped", "dropped"
	// (past MaxAlertsPerMessage) or "failed" (not stored; worth a retry).
	Status     string `json:"status"`
	IncidentID int64  `json:"incident_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// maxAlertDepth bounds the nesting of a webhook body.
const maxAlertDepth = 8

// The store keeps times as int64 nanoseconds since 1970; an alert time
// outside that range would wrap to another century.
var (
	earliestTime = time.Unix(0, math.MinInt64).Add(time.Second)
	latestTime   = time.Unix(0, math.MaxInt64).Add(-time.Second)
)

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
	if m.TruncatedAlerts < 0 {
		return m, fmt.Errorf("field \"truncatedAlerts\" is %d, below zero", m.TruncatedAlerts)
	}
	for i, a := range m.Alerts {
		switch {
		case a.Status != "firing" && a.Status != "resolved":
			return m, fmt.Errorf("alerts[%d].status is %q, not firing or resolved", i, a.Status)
		case a.Fingerprint == "" || len(a.Fingerprint) > 64:
			return m, fmt.Errorf("alerts[%d].fingerprint is empty or longer than 64 characters", i)
		case a.StartsAt.IsZero():
			return m, fmt.Errorf("alerts[%d].startsAt is missing", i)
		case !inStoreRange(a.StartsAt):
			return m, fmt.Errorf("alerts[%d].startsAt %s is outside the years %d..%d the archive can store", i, a.StartsAt.Format(time.RFC3339), earliestTime.Year()+1, latestTime.Year()-1)
		case !a.EndsAt.IsZero() && !inStoreRange(a.EndsAt):
			return m, fmt.Errorf("alerts[%d].endsAt %s is outside the years %d..%d the archive can store", i, a.EndsAt.Format(time.RFC3339), earliestTime.Year()+1, latestTime.Year()-1)
		}
	}
	return m, nil
}

func inStoreRange(t time.Time) bool { return t.After(earliestTime) && t.Before(latestTime) }

// alertWorkers bounds how many alerts of one message are handled at once:
// capturing evidence is the slow part, and the archive group-commits
// concurrent opens.
const alertWorkers = 4

// HandleAlertmanager acts on a webhook message: a firing alert opens an
// incident (once per fingerprint and startsAt, so retries are harmless); a
// resolved one marks its incident's alert resolved. The first
// MaxAlertsPerMessage alerts are handled and the rest answered "dropped";
// the incidents the message opens record how many it dropped and how many
// Alertmanager itself truncated. The result lists what happened to each
// alert, in order.
func (s *Service) HandleAlertmanager(ctx context.Context, msg AlertmanagerMessage) []AlertResult {
	results := make([]AlertResult, len(msg.Alerts))
	n := min(len(msg.Alerts), MaxAlertsPerMessage)
	for i, a := range msg.Alerts[n:] {
		results[n+i] = AlertResult{Fingerprint: a.Fingerprint, Status: "dropped",
			Reason: fmt.Sprintf("the message carried %d alerts; Casebook handles the first %d of a message", len(msg.Alerts), MaxAlertsPerMessage)}
	}
	lost := lostAlerts{dropped: len(msg.Alerts) - n, truncated: msg.TruncatedAlerts}
	if lost.dropped > 0 || lost.truncated > 0 {
		s.o.Logger.WarnContext(ctx, "alertmanager: alerts of a message not handled", "group", msg.GroupKey,
			"dropped", lost.dropped, "truncated_by_alertmanager", lost.truncated)
	}
	sem := make(chan struct{}, alertWorkers)
	var wg sync.WaitGroup
	for i, a := range msg.Alerts[:n] {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = s.handleAlert(ctx, msg, a, lost)
		}()
	}
	wg.Wait()
	return results
}

// lostAlerts counts the alerts of a message that opened nothing: dropped
// here past the limit, or truncated by Alertmanager's max_alerts.
type lostAlerts struct{ dropped, truncated int }

func (s *Service) handleAlert(ctx context.Context, msg AlertmanagerMessage, a AlertmanagerAlert, lost lostAlerts) AlertResult {
	if a.Status == "firing" {
		return s.openFromAlert(ctx, msg, a, lost)
	}
	r := AlertResult{Fingerprint: a.Fingerprint}
	id, err := s.o.Archive.ResolveAlert(ctx, a.Fingerprint, a.StartsAt, a.EndsAt)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.Status, r.Reason = "skipped", "no incident was opened for this alert"
	case err != nil:
		s.o.Logger.ErrorContext(ctx, "alertmanager: resolve", "fingerprint", a.Fingerprint, "err", err)
		r.Status, r.Reason = "failed", "could not be stored"
	default:
		r.Status, r.IncidentID = "resolved", id
		if inc, err := s.o.Archive.Incident(ctx, id); err == nil {
			s.CompleteWindows(ctx, &inc) // archive the minutes after the trigger now
		}
	}
	return r
}

func (s *Service) openFromAlert(ctx context.Context, msg AlertmanagerMessage, a AlertmanagerAlert, lost lostAlerts) AlertResult {
	r := AlertResult{Fingerprint: a.Fingerprint}
	if inc, err := s.o.Archive.IncidentByAlert(ctx, a.Fingerprint, a.StartsAt); err == nil {
		r.Status, r.IncidentID = "existing", inc.ID
		return r
	}
	scope, why := s.alertScope(ctx, a, msg.CommonLabels)
	if why != "" {
		r.Status, r.Reason = "skipped", why
		return r
	}
	labels, annotations := cleanMap(a.Labels), cleanMap(a.Annotations)
	detail := map[string]any{
		"alertname": labels["alertname"], "labels": labels, "annotations": annotations,
		"generatorURL": cleanText(a.GeneratorURL), "externalURL": cleanText(msg.ExternalURL), "receiver": cleanText(msg.Receiver),
	}
	if lost.dropped > 0 {
		detail["dropped_alerts"] = lost.dropped
	}
	if lost.truncated > 0 {
		detail["truncated_alerts"] = lost.truncated
	}
	raw, _ := json.Marshal(detail)
	if len(raw) > store.MaxDetailBytes {
		delete(detail, "labels")
		delete(detail, "annotations")
		detail["truncated"] = true
		raw, _ = json.Marshal(detail)
	}
	title := annotations["summary"]
	if title == "" {
		title = labels["alertname"] + " on " + scope.String()
	}
	sev := labels["severity"]
	if sev != "critical" && sev != "warning" && sev != "info" {
		sev = ""
	}
	tr := Trigger{Kind: store.TriggerAlertmanager, Scope: scope, At: a.StartsAt, Title: title, Detail: raw, Severity: sev,
		Alert: &store.Alert{Fingerprint: a.Fingerprint, StartsAt: a.StartsAt, State: store.AlertFiring}}
	inc, created, err := s.Open(ctx, tr)
	if err != nil {
		s.o.Logger.ErrorContext(ctx, "alertmanager: open incident", "fingerprint", a.Fingerprint, "err", err)
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

// alertScope finds the model and instance an alert is about, or says why
// it names none. The model is the engine's model_name label (or model);
// the instance is the configured instance label, its exported_ form first
// (behind a ServiceMonitor with honorLabels false, a GPU exporter's alert
// carries the workload's pod as exported_pod and the exporter's own pod as
// pod). An alert that names an instance but no model (every DCGM alert) is
// mapped to the model whose engine series carry that instance.
func (s *Service) alertScope(ctx context.Context, a AlertmanagerAlert, common map[string]string) (metrics.Scope, string) {
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
	il := s.o.InstanceLabel
	sc := metrics.Scope{Model: get("model_name", "model"), Instance: get("exported_"+il, il, "pod_name")}
	switch {
	case len(sc.Model) > metrics.MaxNameLength:
		return sc, fmt.Sprintf("the model_name label is %d bytes; model names are at most %d", len(sc.Model), metrics.MaxNameLength)
	case len(sc.Instance) > metrics.MaxNameLength:
		return sc, fmt.Sprintf("the %s label is %d bytes; instance names are at most %d", il, len(sc.Instance), metrics.MaxNameLength)
	case sc.Model != "":
		return sc, ""
	case sc.Instance == "":
		return sc, fmt.Sprintf("the alert has neither a model_name (or model) label nor an instance label (%s), so it names no engine", il)
	}
	scopes, err := s.o.Capture.Scopes(ctx)
	if err != nil {
		return sc, "the alert names no model_name and the engines' scopes could not be read to find the model of " + il + " " + sc.Instance
	}
	for _, x := range scopes {
		if x.Instance == sc.Instance {
			return x, ""
		}
	}
	return sc, fmt.Sprintf("the alert names no model_name, and no engine series carry %s %q", il, sc.Instance)
}

// cleanText makes alert text safe to show and store: valid UTF-8 without
// control characters or the invisible marks that reorder text (bidi
// overrides and isolates).
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r) && r != '\n' && r != '\t':
			return -1
		case r >= '\u202A' && r <= '\u202E', r >= '\u2066' && r <= '\u2069', r == '\u200E', r == '\u200F', r == '\u061C':
			return -1
		}
		return r
	}, s)
}

func cleanMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[cleanText(k)] = cleanText(v)
	}
	return out
}
