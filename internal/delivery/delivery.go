package delivery

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// CheckURL accepts an absolute http(s) URL with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s)://host URL", raw)
	}
	return nil
}

// Result is the outcome of one try.
type Result struct {
	OK bool
	// Retry says whether a failure is worth another try: network errors,
	// 408, 425, 429 and 5xx. Any other answer means the receiver refuses.
	Retry bool
	Code  int    // HTTP status; 0 when none came back
	Error string // what failed, with the start of the receiver's answer
}

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 64 << 10

// Post makes one POST of body with the given headers.
func Post(ctx context.Context, client *http.Client, url string, body []byte, header http.Header) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Error: err.Error()}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{Error: err.Error(), Retry: true}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	r := Result{Code: resp.StatusCode}
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		r.OK = true
		return r
	case c == 408 || c == 425 || c == 429 || c >= 500:
		r.Retry = true
	}
	r.Error = resp.Status
	if a := bytes.TrimSpace(answer); len(a) > 0 {
		r.Error += ": " + string(a[:min(len(a), 200)])
	}
	return r
}

// Backoff spaces the tries of one delivery: the wait before the second
// try is about Initial, each next one about twice the last, each drawn
// within ±50% (jitter, so that many senders do not retry in step) and
// never above Max.
type Backoff struct {
	Initial, Max time.Duration
}

// Delay is the wait after try n (n >= 1). It depends only on n, so a
// delivery resumed after a restart keeps its spacing.
func (b Backoff) Delay(n int) time.Duration {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval, e.MaxInterval = b.Initial, b.Max
	e.RandomizationFactor, e.Multiplier = 0.5, 2
	e.Reset()
	d := e.NextBackOff()
	for range min(n-1, 40) {
		d = e.NextBackOff()
	}
	return min(d, b.Max)
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry makes tries first..attempts until one succeeds or the receiver
// refuses, sleeping b.Delay between them (sleep nil means Sleep); it
// returns the last result. first > 1 resumes a delivery whose earlier
// tries were made before; try gets the try's number.
func Retry(ctx context.Context, b Backoff, first, attempts int, sleep func(context.Context, time.Duration) error, try func(n int) Result) Result {
	if sleep == nil {
		sleep = Sleep
	}
	var last Result
	for n := max(first, 1); n <= attempts; n++ {
		if n > 1 {
			if err := sleep(ctx, b.Delay(n-1)); err != nil {
				last.Error, last.Retry = err.Error(), true
				return last
			}
		}
		last = try(n)
		if last.OK || !last.Retry {
			return last
		}
	}
	return last
}
