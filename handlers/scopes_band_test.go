package handlers_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/web"
)

// bandFake forecasts a flat band for the metrics it knows.
type bandFake struct{ known map[string]bool }

func (b bandFake) Band(scope metrics.Scope, metric string, start, end time.Time, step time.Duration) ([]metrics.Sample, []metrics.Sample, bool) {
	if !b.known[metric] {
		return nil, nil, false
	}
	var lo, hi []metrics.Sample
	for t := start; t.Before(end); t = t.Add(step) {
		lo = append(lo, metrics.Sample{T: t, V: 1})
		hi = append(hi, metrics.Sample{T: t, V: 2})
	}
	return lo, hi, true
}

func TestLiveChartsDrawTheForecastBand(t *testing.T) {
	tel := sharedTel()
	tests := []struct {
		name  string
		fc    *bandFake
		bands int
	}{
		{"no forecaster", nil, 0},
		{"a model of one latency metric", &bandFake{map[string]bool{metrics.E2E: true}}, 1},
		{"latency and throughput", &bandFake{map[string]bool{metrics.E2E: true, metrics.TTFT: true, metrics.GenerationTPS: true}}, 2},
		{"no model yet", &bandFake{map[string]bool{}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{Result: handlerstest.EvictionDiagnosis()},
				Deviations: handlerstest.Deviations, Now: func() time.Time { return tel.End }}
			if tc.fc != nil {
				opts.Forecaster = *tc.fc
			}
			s := web.New(opts)
			srv := httptest.NewServer(s)
			defer srv.Close()
			res, err := http.Get(srv.URL + "/scopes/llama-70b/llama-70b-1?range=1h")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var b strings.Builder
			if _, err := io.Copy(&b, res.Body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if n := strings.Count(b.String(), `<path class="band"`); n != tc.bands {
				t.Errorf("%d bands drawn, want %d", n, tc.bands)
			}
		})
	}
}
