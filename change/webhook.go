package change

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
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
	// Backoff is the first retry's wait; each retry doubles it, with up
	// to 50% jitter, capped at MaxBackoff (defaults 2 s and 5 min).
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
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("change: webhook: %q is not an http(s) URL", o.URL)
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
		o.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		a.Error = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "casebook-change-webhook")
	req.Header.Set(SignatureHeader, Sign([]byte(w.o.Secret), body))
	req.Header.Set(IdempotencyHeader, key)
	req.Header.Set(EventHeader, "change_request")
	resp, err := w.o.Client.Do(req)
	if err != nil {
		a.Error, a.Retry = err.Error(), true
		return a
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	a.Code = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		a.OK = true
	case resp.StatusCode == 408 || resp.StatusCode == 425 || resp.StatusCode == 429 || resp.StatusCode >= 500:
		a.Error, a.Retry = resp.Status, true
	default:
		a.Error = resp.Status
	}
	return a
}

// Delay is the wait before try n+1 (n >= 1): exponential with jitter.
func (w *Webhook) Delay(n int) time.Duration {
	d := w.o.Backoff << min(n-1, 20)
	if d <= 0 || d > w.o.MaxBackoff {
		d = w.o.MaxBackoff
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Deliver tries until a try succeeds, the receiver refuses, or the
// attempts are used up; record sees every attempt (to store it). done
// counts the attempts made before (after a restart). It returns the last
// attempt.
func (w *Webhook) Deliver(ctx context.Context, key string, body []byte, done int, record func(Attempt)) Attempt {
	var last Attempt
	for n := done + 1; n <= w.o.Attempts; n++ {
		if n > 1 {
			if err := w.o.Sleep(ctx, w.Delay(n-1)); err != nil {
				last.Error = err.Error()
				return last
			}
		}
		last = w.Post(ctx, key, body, n)
		if record != nil {
			record(last)
		}
		if last.OK || !last.Retry {
			return last
		}
	}
	return last
}
