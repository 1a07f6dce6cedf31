package delivery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"http://am:9093": true, "https://cmdb.example/hook": true,
		"": false, "am:9093": false, "ftp://x": false, "http://": false, "/relative": false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}

func TestPostClassifiesAnswers(t *testing.T) {
	tests := []struct {
		code      int
		ok, retry bool
	}{
		{200, true, false}, {202, true, false},
		{400, false, false}, {401, false, false}, {404, false, false},
		{408, false, true}, {425, false, true}, {429, false, true}, {500, false, true}, {503, false, true},
	}
	for _, tc := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Test") != "yes" || r.Method != http.MethodPost {
				w.WriteHeader(418)
				return
			}
			w.WriteHeader(tc.code)
			_, _ = w.Write([]byte(" the receiver says why \n"))
		}))
		r := Post(context.Background(), srv.Client(), srv.URL, []byte(`{}`), http.Header{"X-Test": {"yes"}})
		srv.Close()
		if r.OK != tc.ok || r.Retry != tc.retry || r.Code != tc.code {
			t.Errorf("%d: %+v, want ok %v retry %v", tc.code, r, tc.ok, tc.retry)
		}
		if !tc.ok && !strings.Contains(r.Error, "the receiver says why") {
			t.Errorf("%d: error %q lacks the receiver's answer", tc.code, r.Error)
		}
	}
	// A receiver that cannot be reached is worth a retry.
	r := Post(context.Background(), http.DefaultClient, "http://127.0.0.1:1", nil, nil)
	if r.OK || !r.Retry || r.Code != 0 {
		t.Errorf("unreachable: %+v", r)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 20 * time.Second}
	for n := 1; n <= 12; n++ {
		want := time.Second << (n - 1)
		if want > b.Max {
			want = b.Max
		}
		for range 50 {
			d := b.Delay(n)
			if d < want/2 || d > want*3/2 {
				t.Fatalf("Delay(%d) = %s, want within ±50%% of %s", n, d, want)
			}
		}
	}
}

func TestRetry(t *testing.T) {
	var slept []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	b := Backoff{Initial: time.Second, Max: time.Minute}
	answers := []Result{{Retry: true}, {Retry: true}, {OK: true}}
	var tries []int
	r := Retry(context.Background(), b, 1, 5, sleep, func(n int) Result { tries = append(tries, n); return answers[len(tries)-1] })
	if !r.OK || len(tries) != 3 || len(slept) != 2 {
		t.Fatalf("result %+v after tries %v and %d sleeps; want OK at the third", r, tries, len(slept))
	}
	// A refusal ends the delivery.
	tries, slept = nil, nil
	r = Retry(context.Background(), b, 1, 5, sleep, func(n int) Result { tries = append(tries, n); return Result{Code: 400} })
	if r.OK || len(tries) != 1 || len(slept) != 0 {
		t.Errorf("refused: %+v after tries %v", r, tries)
	}
	// A resumed delivery makes only the tries that are left.
	tries, slept = nil, nil
	Retry(context.Background(), b, 4, 5, sleep, func(n int) Result { tries = append(tries, n); return Result{Retry: true} })
	if len(tries) != 2 || tries[0] != 4 || len(slept) != 2 {
		t.Errorf("resumed at 4 of 5: tries %v, %d sleeps", tries, len(slept))
	}
	// A cancelled wait stops it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tries = nil
	r = Retry(ctx, b, 1, 5, nil, func(n int) Result { tries = append(tries, n); return Result{Retry: true} })
	if len(tries) != 1 || !strings.Contains(r.Error, context.Canceled.Error()) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("cancelled: %+v after tries %v", r, tries)
	}
}
