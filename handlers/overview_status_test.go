package handlers

import (
	"testing"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

func TestScopeImpact(t *testing.T) {
	tests := []struct {
		name string
		dim  metrics.Dimension
		in   views.Status
		want views.Status
	}{
		{"latency critical stays critical", metrics.Latency, views.StatusCritical, views.StatusCritical},
		{"quality critical stays critical", metrics.Quality, views.StatusCritical, views.StatusCritical},
		{"load-driven throughput is at most a warning", metrics.Throughput, views.StatusCritical, views.StatusWarning},
		{"utilization is at most a warning", metrics.Utilization, views.StatusCritical, views.StatusWarning},
		{"warnings pass through", metrics.Utilization, views.StatusWarning, views.StatusWarning},
		{"ok passes through", metrics.Latency, views.StatusOK, views.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scopeImpact(tc.dim, tc.in); got != tc.want {
				t.Errorf("scopeImpact(%s, %v) = %v, want %v", tc.dim, tc.in, got, tc.want)
			}
		})
	}
}
