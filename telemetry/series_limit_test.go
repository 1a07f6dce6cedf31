package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRemoteSeriesLimit checks that a query answering more series than
// MaxSeriesPerQuery is refused with an error naming the limit.
func TestRemoteSeriesLimit(t *testing.T) {
	series := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"metric":{"pod":"p%d"},"value":[1700000000,"1"]}`, i)
		}
		b.WriteString(`]}}`)
		return b.String()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		n := MaxSeriesPerQuery
		if strings.Contains(r.Form.Get("query"), "fleet") {
			n++
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(series(n)))
	}))
	defer srv.Close()
	q, err := NewRemoteQuerier(RemoteOptions{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := q.Instant(context.Background(), "up", time.Now()); err != nil || len(res) != MaxSeriesPerQuery {
		t.Fatalf("at the limit: %d series, %v", len(res), err)
	}
	_, err = q.Instant(context.Background(), "fleet", time.Now())
	if !errors.Is(err, ErrTooManySeries) || !strings.Contains(err.Error(), fmt.Sprint(MaxSeriesPerQuery)) {
		t.Fatalf("over the limit: %v", err)
	}
}
