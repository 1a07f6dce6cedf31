package change

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestWebhookSignsRetriesAndStops(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	codes := []int{503, 500, 201}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		bodies = append(bodies, b)
		w.WriteHeader(codes[min(len(got)-1, len(codes)-1)])
	}))
	defer srv.Close()
	var waits []time.Duration
	w, err := NewWebhook(WebhookOptions{URL: srv.URL, Secret: "s3cret", Attempts: 5, Backoff: time.Second,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"cr-1"}`)
	var attempts []Attempt
	last := w.Deliver(context.Background(), "cr-1", body, 0, func(a Attempt) { attempts = append(attempts, a) })
	if !last.OK || last.Code != 201 || len(attempts) != 3 {
		t.Fatalf("last %+v after %d attempts", last, len(attempts))
	}
	if attempts[0].OK || !attempts[0].Retry || attempts[0].Code != 503 {
		t.Errorf("first attempt %+v", attempts[0])
	}
	for i, r := range got {
		if r.Header.Get(IdempotencyHeader) != "cr-1" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d headers %v", i, r.Header)
		}
		if !Verify([]byte("s3cret"), bodies[i], r.Header.Get(SignatureHeader)) || Verify([]byte("other"), bodies[i], r.Header.Get(SignatureHeader)) {
			t.Errorf("request %d signature %q does not verify", i, r.Header.Get(SignatureHeader))
		}
	}
	// Exponential backoff with ±50% jitter: [0.5, 1.5] s, then [1, 3] s.
	if len(waits) != 2 || waits[0] < 500*time.Millisecond || waits[0] > 1500*time.Millisecond || waits[1] < time.Second || waits[1] > 3*time.Second {
		t.Errorf("waits %v", waits)
	}

	// A 4xx other than 408/425/429 is final.
	codes = []int{422}
	got, attempts = nil, nil
	last = w.Deliver(context.Background(), "cr-2", body, 0, func(a Attempt) { attempts = append(attempts, a) })
	if last.OK || last.Retry || len(attempts) != 1 {
		t.Errorf("422: %+v after %d", last, len(attempts))
	}
	// Attempts are bounded, and a resumed delivery counts earlier ones.
	codes = []int{500}
	attempts = nil
	last = w.Deliver(context.Background(), "cr-3", body, 3, func(a Attempt) { attempts = append(attempts, a) })
	if last.OK || len(attempts) != 2 || attempts[1].N != 5 {
		t.Errorf("bounded: %+v, %d attempts", last, len(attempts))
	}
	for _, bad := range []WebhookOptions{{URL: "ftp://x", Secret: "s"}, {URL: srv.URL}} {
		if _, err := NewWebhook(bad); err == nil {
			t.Errorf("NewWebhook(%+v) accepted", bad)
		}
	}
}
