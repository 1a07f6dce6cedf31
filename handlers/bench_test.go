package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/web"
)

// weekTel is a fake cluster with 7 days of one-minute data per scope.
var weekTel = sync.OnceValue(func() *handlerstest.Telemetry {
	return handlerstest.NewTelemetry(handlerstest.Options{Incident: incidentScope})
})

// BenchmarkPages measures server time of the overview and the live view
// (routing, middleware, data reshaping, chart layout and rendering) over a
// week of one-minute data, and reports the p50 and p95 per request.
//
//	go test -tags sqlite_fts5 -run XXX -bench Pages -benchtime 200x ./handlers/
func BenchmarkPages(b *testing.B) {
	tel := weekTel()
	srv := web.New(web.Options{
		Telemetry:  tel,
		Diagnoser:  &handlerstest.Diagnoser{Result: handlerstest.EvictionDiagnosis()},
		Deviations: handlerstest.Deviations,
		Now:        func() time.Time { return tel.End },
	})
	for _, bc := range []struct{ name, path string }{
		{"overview", "/"},
		{"live-1h", "/scopes/llama-70b/llama-70b-1?range=1h"},
		{"live-24h", "/scopes/llama-70b/llama-70b-1?range=24h"},
		{"live-7d", "/scopes/llama-70b/llama-70b-1?range=7d"},
		{"live-7d-model", "/scopes/llama-70b?range=7d"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			durations := make([]time.Duration, 0, b.N)
			size := 0
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, bc.path, nil)
				rec := httptest.NewRecorder()
				start := time.Now()
				srv.ServeHTTP(rec, req)
				durations = append(durations, time.Since(start))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d", bc.path, rec.Code)
				}
				size = rec.Body.Len()
			}
			slices.Sort(durations)
			q := func(p float64) float64 {
				return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(q(.5), "ms-p50")
			b.ReportMetric(q(.95), "ms-p95")
			b.ReportMetric(float64(size)/1024, "KiB/page")
		})
	}
}
