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
		felt views.Status // latency and quality
		want views.Status
	}{
		{"latency critical stays critical", metrics.Latency, views.StatusCritical, views.StatusCritical, views.StatusCritical},
		{"quality critical stays critical", metrics.Quality, views.StatusCritical, views.StatusCritical, views.StatusCritical},
		{"load alone is worth a look, no more", metrics.Throughput, views.StatusCritical, views.StatusOK, views.StatusInfo},
		{"utilization alone is worth a look, no more", metrics.Utilization, views.StatusWarning, views.StatusOK, views.StatusInfo},
		{"utilization beside a latency warning is a warning", metrics.Utilization, views.StatusCritical, views.StatusWarning, views.StatusWarning},
		{"throughput beside a critical quality is a warning", metrics.Throughput, views.StatusCritical, views.StatusCritical, views.StatusWarning},
		{"utilization beside latency info stays info", metrics.Utilization, views.StatusWarning, views.StatusInfo, views.StatusInfo},
		{"ok passes through", metrics.Latency, views.StatusOK, views.StatusOK, views.StatusOK},
		{"ok load stays ok", metrics.Utilization, views.StatusOK, views.StatusCritical, views.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := scopeImpact(tc.dim, tc.in, tc.felt); got != tc.want {
				t.Errorf("scopeImpact(%s, %v, felt %v) = %v, want %v", tc.dim, tc.in, tc.felt, got, tc.want)
			}
		})
	}
}
