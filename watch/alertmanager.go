package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/delivery"
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
	if err := delivery.CheckURL(opts.URL); err != nil {
		return nil, fmt.Errorf("watch: alertmanager URL: %w", err)
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

// Post sends the alerts, retrying with backoff up to Attempts times; an
// Alertmanager that refuses them (a 4xx) is not asked again. A failure is
// logged once until a post succeeds again; it is returned too.
func (am *Alertmanager) Post(ctx context.Context, alerts []Active) error {
	body, err := json.Marshal(am.Payload(alerts))
	if err != nil {
		return fmt.Errorf("watch: encode alerts: %w", err)
	}
	b := delivery.Backoff{Initial: am.opts.Backoff, Max: 30 * am.opts.Backoff}
	r := delivery.Retry(ctx, b, 1, am.opts.Attempts, nil, func(int) delivery.Result {
		ctx, cancel := context.WithTimeout(ctx, am.opts.Timeout)
		defer cancel()
		return delivery.Post(ctx, am.opts.Client, am.endpoint, body, http.Header{"Content-Type": {"application/json"}})
	})
	if !r.OK {
		err = fmt.Errorf("watch: post alerts: %s", r.Error)
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
