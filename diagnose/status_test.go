package diagnose

import (
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// statusSnapshot is an hour of one-minute TTFT readings near 200 ms with a
// small wiggle, ending at `at`, where recent maps minutes before `at` to
// the reading then; cur is the current reading.
func statusSnapshot(at time.Time, recent map[int]float64, cur float64) metrics.Snapshot {
	s := metrics.Snapshot{At: at, Current: metrics.Values{metrics.TTFT: cur}}
	for m := 60; m >= 1; m-- {
		v := 200 + float64(m%5)
		if r, ok := recent[m]; ok {
			v = r
		}
		s.History = append(s.History, metrics.Point{At: at.Add(-time.Duration(m) * time.Minute), Values: metrics.Values{metrics.TTFT: v}})
	}
	return s
}

func TestStatusDeviationsWaitsForThreeReadings(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		recent map[int]float64
		cur    float64
		want   bool
	}{
		{"a one-minute burst", nil, 900, false},
		{"a burst on a window's edge: two readings", map[int]float64{1: 700}, 900, false},
		{"three readings in a row", map[int]float64{1: 700, 2: 800}, 900, true},
		{"three in a row, the earlier ones not material", map[int]float64{1: 215, 2: 215}, 900, false},
		{"a gap between the readings", map[int]float64{2: 800, 3: 800}, 900, false},
		{"high, then low, then high", map[int]float64{1: 40, 2: 800}, 900, false},
		{"steady", nil, 203, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := statusSnapshot(at, tc.recent, tc.cur)
			all := Deviations(s)[metrics.TTFT]
			got := StatusDeviations(s)[metrics.TTFT]
			if got.Anomalous != tc.want {
				t.Errorf("anomalous = %v, want %v (z %.1f)", got.Anomalous, tc.want, got.Z)
			}
			if got.Z != all.Z || got.Mean != all.Mean {
				t.Errorf("StatusDeviations changed the score: %+v, Deviations %+v", got, all)
			}
		})
	}
}

func TestStatusDeviationsWithoutTime(t *testing.T) {
	s := statusSnapshot(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC), nil, 900)
	s.At = time.Time{}
	if StatusDeviations(s)[metrics.TTFT].Anomalous {
		t.Error("a snapshot without a time has no earlier readings; nothing may be flagged")
	}
	if !Deviations(s)[metrics.TTFT].Anomalous {
		t.Error("the plain deviation should still be anomalous")
	}
}
