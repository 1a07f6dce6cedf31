package forecast

import (
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

func TestSimulateFollowsLoadPhysically(t *testing.T) {
	ids := []string{metrics.ArrivalRPS, metrics.QueueTime, metrics.GPUTemp, metrics.MeanPromptTokens}
	series := Simulate(SimOptions{Seed: 3, Weeks: 1, Warmup: Day, Metrics: ids})
	// Weekday afternoon peak against the night, from medians of an hour.
	swing := map[string]float64{}
	for _, s := range series {
		var peak, night []float64
		for _, p := range s.Samples {
			if p.T.Weekday() != time.Tuesday {
				continue
			}
			switch p.T.Hour() {
			case 14:
				peak = append(peak, p.V)
			case 3:
				night = append(night, p.V)
			}
		}
		swing[s.Metric.ID] = median(peak) / median(night)
	}
	if swing[metrics.ArrivalRPS] < 2 {
		t.Errorf("arrivals: peak/night %.2f, want the traffic cycle (>= 2)", swing[metrics.ArrivalRPS])
	}
	if swing[metrics.QueueTime] < swing[metrics.ArrivalRPS] {
		t.Errorf("queue time swings %.2f, less than traffic %.2f: queues grow faster than load", swing[metrics.QueueTime], swing[metrics.ArrivalRPS])
	}
	if s := swing[metrics.GPUTemp]; s < 1.02 || s > 1.5 {
		t.Errorf("GPU temperature peak/night %.2f, want a mild rise", s)
	}
	if s := swing[metrics.MeanPromptTokens]; s < 0.9 || s > 1.1 {
		t.Errorf("prompt length peak/night %.2f, want none", s)
	}
}
