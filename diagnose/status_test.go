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

func TestStatusDeviationsWaitsForFiveReadings(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		recent map[int]float64
		cur    float64
		want   bool
	}{
		{"a one-minute burst", nil, 900, false},
		{"a burst on a window's edge: two readings", map[int]float64{1: 700}, 900, false},
		{"a three-minute surge", map[int]float64{1: 700, 2: 800}, 900, false},
		{"four readings in a row", map[int]float64{1: 700, 2: 800, 3: 800}, 900, false},
		{"five readings in a row", map[int]float64{1: 700, 2: 800, 3: 800, 4: 750}, 900, true},
		{"five in a row, the earlier ones not material", map[int]float64{1: 215, 2: 215, 3: 215, 4: 215}, 900, false},
		{"a gap between the readings", map[int]float64{2: 800, 3: 800, 4: 800, 5: 800}, 900, false},
		{"high, then low, then high", map[int]float64{1: 40, 2: 800, 3: 800, 4: 800}, 900, false},
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

// TestStatusDeviationsBurstyBaseline: at a busy hour bursts put a tail
// metric at one full prefill step in runs of a few minutes. A run of
// five is what that hour already looks like; a run more than twice as
// long as those, or a fault that has filled a quarter of the hour, is a
// finding.
func TestStatusDeviationsBurstyBaseline(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	// bursty is the hour's readings, minutes before `at` to TPOT p99:
	// runs of five or six burst minutes every twenty.
	bursty := func(m int) float64 {
		if k := m % 20; k >= 7 && k < 7+5+m%40/20 {
			return 180 + float64(m%5)*4
		}
		return 25 + float64(m%3)
	}
	// fault raises the last `minutes` readings, the current one included,
	// to 300 ms.
	snapshot := func(run, fault int) metrics.Snapshot {
		s := metrics.Snapshot{At: at, Current: metrics.Values{metrics.TPOTP99: 190}}
		if fault > 0 {
			s.Current[metrics.TPOTP99] = 300
		}
		for m := 60; m >= 1; m-- {
			v := bursty(m)
			if m < 8 {
				v = 25 // the minutes before the current run are quiet
			}
			if m < run {
				v = 190
			}
			if m < fault {
				v = 300
			}
			s.History = append(s.History, metrics.Point{At: at.Add(-time.Duration(m) * time.Minute), Values: metrics.Values{metrics.TPOTP99: v}})
		}
		return s
	}
	tests := []struct {
		name       string
		run, fault int
		want       bool
	}{
		{"five burst minutes in a row, as in the hour", 5, 0, false},
		{"six in a row, as long as the hour's longest", 6, 0, false},
		{"thirteen in a row, twice as long as every burst of the hour", 13, 0, true},
		{"a fault that has filled a quarter hour", 0, 15, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot(tc.run, tc.fault)
			if !Deviations(s)[metrics.TPOTP99].Anomalous {
				t.Fatal("the plain deviation should be anomalous: the baseline's median and MAD see only the quiet minutes")
			}
			if got := StatusDeviations(s)[metrics.TPOTP99].Anomalous; got != tc.want {
				t.Errorf("anomalous = %v, want %v", got, tc.want)
			}
		})
	}
}
