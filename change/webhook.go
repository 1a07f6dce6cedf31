package change

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/casebook/casebook/internal/delivery"
)

// Webhook headers.
const (
	// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>" under
	// the shared secret.
	SignatureHeader = "X-Casebook-Signature"
	// IdempotencyHeader carries the change request id: a receiver that
	// sees the same key twice must not create a second ticket.
	IdempotencyHeader = "Idempotency-Key"
	// EventHeader names the event, "change_request".
	EventHeader = "X-Casebook-Event"
)

// Sign is the signature header value for body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header value in constant time.
func Verify(secret, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(Sign(secret, body)))
}

// WebhookOptions configure a Webhook. Zero values mean the defaults.
type WebhookOptions struct {
	URL    string
	Secret string
	Client *http.Client // default: 10 s timeout
	// Attempts bounds the tries of one delivery (default 6).
	Attempts int
	// Backoff is the first retry's wait; each retry doubles it, with
	// ±50% jitter, capped at MaxBackoff (defaults 2 s and 5 min).
	Backoff, MaxBackoff time.Duration
	// Sleep waits between attempts (default: a timer that honours ctx).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Webhook posts change requests to a CMDB or ticketing system.
type Webhook struct {
	o WebhookOptions
}

// NewWebhook checks the options and fills in the defaults.
func NewWebhook(o WebhookOptions) (*Webhook, error) {
	if err := delivery.CheckURL(o.URL); err != nil {
		return nil, fmt.Errorf("change: webhook: %w", err)
	}
	if o.Secret == "" {
		return nil, errors.New("change: webhook: a shared secret is required to sign the requests")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Sleep == nil {
		o.Sleep = delivery.Sleep
	}
	return &Webhook{o: o}, nil
}

// URL is where the webhook posts.
func (w *Webhook) URL() string { return w.o.URL }

// Attempts is the most tries one delivery makes.
func (w *Webhook) Attempts() int { return w.o.Attempts }

// Attempt is the result of one try.
type Attempt struct {
	N     int       `json:"n"`
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Code  int       `json:"code,omitempty"` // HTTP status, 0 when none came back
	Error string    `json:"error,omitempty"`
	// Retry says whether a failure is worth another try (network errors,
	// 408, 425, 429 and 5xx); 4xx otherwise means the receiver refuses.
	Retry bool `json:"retry"`
}

// Post makes one try: the body as JSON, signed, with the idempotency key.
func (w *Webhook) Post(ctx context.Context, key string, body []byte, n int) Attempt {
	a := Attempt{N: n, At: time.Now().UTC()}
	r := delivery.Post(ctx, w.o.Client, w.o.URL, body, http.Header{
		"Content-Type":    {"application/json"},
		"User-Agent":      {"casebook-change-webhook"},
		SignatureHeader:   {Sign([]byte(w.o.Secret), body)},
		IdempotencyHeader: {key},
		EventHeader:       {"change_request"},
	})
	a.OK, a.Retry, a.Code, a.Error = r.OK, r.Retry, r.Code, r.Error
	return a
}

// Delay is the wait before try n+1 (n >= 1): exponential with jitter.
func (w *Webhook) Delay(n int) time.Duration {
	return delivery.Backoff{Initial: w.o.Backoff, Max: w.o.MaxBackoff}.Delay(n)
}

// Deliver tries until a try succeeds, the receiver refuses, or the
// attempts are used up; record sees every attempt (to store it). done
// counts the attempts made before (after a restart). It returns the last
// attempt.
func (w *Webhook) Deliver(ctx context.Context, key string, body []byte, done int, record func(Attempt)) Attempt {
	var last Attempt
	b := delivery.Backoff{Initial: w.o.Backoff, Max: w.o.MaxBackoff}
	r := delivery.Retry(ctx, b, done+1, w.o.Attempts, w.o.Sleep, func(n int) delivery.Result {
		last = w.Post(ctx, key, body, n)
		if record != nil {
			record(last)
		}
		return delivery.Result{OK: last.OK, Retry: last.Retry}
	})
	if r.Error != "" {
		last.Error = r.Error // the wait before the next try was cancelled
	}
	return last
}
