package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/diagnose"
)

// AlertName is the alertname of every alert the detector forwards.
const AlertName = "CasebookDynamicThreshold"

// AlertmanagerOptions configures an Alertmanager client.
type AlertmanagerOptions struct {
	// URL is the Alertmanager's base URL ("http://alertmanager:9093").
	URL string
	// InstanceLabel names the instance label of the alerts (default "pod").
	InstanceLabel string
	// Attempts bounds the tries of one post (default 4).
	Attempts int
	// Backoff is the wait before the first retry, doubled for each next
	// one (default 500 ms).
	Backoff time.Duration
	// Timeout bounds one HTTP request (default 10 s).
	Timeout time.Duration
	Client  *http.Client
	Logger  *slog.Logger
}

// Alertmanager posts the detector's alerts to an Alertmanager's
// /api/v2/alerts. It is safe for concurrent use.
type Alertmanager struct {
	opts     AlertmanagerOptions
	endpoint string
	log      *slog.Logger

	mu     sync.Mutex
	failed bool // the last post failed (logged once until it works again)
}

// NewAlertmanager validates the URL and fills in the defaults.
func NewAlertmanager(opts AlertmanagerOptions) (*Alertmanager, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("watch: alertmanager URL %q: want http(s)://host:port", opts.URL)
	}
	if opts.InstanceLabel == "" {
		opts.InstanceLabel = "pod"
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Alertmanager{opts: opts, endpoint: strings.TrimRight(opts.URL, "/") + "/api/v2/alerts", log: opts.Logger}, nil
}

// PostableAlert is one alert of the Alertmanager v2 API.
type PostableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       *time.Time        `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Payload builds the Alertmanager alerts of active (firing or resolved)
// metric alerts.
func (am *Alertmanager) Payload(alerts []Active) []PostableAlert {
	out := make([]PostableAlert, 0, len(alerts))
	for _, act := range alerts {
		a := act.Alert
		sev := diagnose.SeverityWarning
		if abs(a.Z) >= criticalZ {
			sev = diagnose.SeverityCritical
		}
		labels := map[string]string{
			"alertname":       AlertName,
			"model_name":      a.Scope.Model,
			"casebook_metric": a.Metric,
			"severity":        string(sev),
		}
		if a.Scope.Instance != "" {
			labels[am.opts.InstanceLabel] = a.Scope.Instance
		}
		pa := PostableAlert{
			Labels: labels,
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s on %s is %.4g, forecast %.4g, band %.4g..%.4g (%+.1f standard errors)",
					a.Metric, a.Scope, a.Value, a.Forecast, a.Lower, a.Upper, a.Z),
			},
			StartsAt:     a.Start.UTC(),
			GeneratorURL: act.URL,
		}
		if !act.EndsAt.IsZero() {
			e := act.EndsAt.UTC()
			pa.EndsAt = &e
		}
		out = append(out, pa)
	}
	return out
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// Post sends the alerts, retrying with backoff up to Attempts times. A
// failure is logged once until a post succeeds again; it is returned too.
func (am *Alertmanager) Post(ctx context.Context, alerts []Active) error {
	body, err := json.Marshal(am.Payload(alerts))
	if err != nil {
		return fmt.Errorf("watch: encode alerts: %w", err)
	}
	wait := am.opts.Backoff
	for try := 1; ; try++ {
		err = am.post(ctx, body)
		if err == nil || try >= am.opts.Attempts || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
	am.mu.Lock()
	defer am.mu.Unlock()
	switch {
	case err != nil && !am.failed:
		am.failed = true
		am.log.Warn("watch: forwarding alerts to the Alertmanager failed", "url", am.endpoint, "alerts", len(alerts), "err", err)
	case err == nil && am.failed:
		am.failed = false
		am.log.Info("watch: forwarding alerts to the Alertmanager works again", "url", am.endpoint)
	}
	return err
}

func (am *Alertmanager) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, am.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, am.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("watch: alertmanager request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := am.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("watch: post alerts: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("watch: post alerts: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
