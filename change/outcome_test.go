package change

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// TestMeasure reads the window before a change and the window after its
// settle time, and judges TTFT, which halved at steady load.
func TestMeasure(t *testing.T) {
	applied := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	const window = time.Hour
	req := Request{Effects: []ExpectedEffect{{Metric: metrics.TTFT, Direction: "down", Size: "large"}}}
	var asked []metrics.Range
	read := func(ids []string, r metrics.Range) ([]metrics.Series, error) {
		asked = append(asked, r)
		if want := []string{metrics.ArrivalRPS, metrics.ThroughputRPS, metrics.TTFT}; !slices.Equal(ids, want) {
			t.Errorf("read %v, want %v", ids, want)
		}
		ttft := 400.0
		if !r.Start.Before(applied) {
			ttft = 200
		}
		var out []metrics.Series
		for _, id := range ids {
			s := metrics.Series{Metric: id}
			for at := r.Start; at.Before(r.End); at = at.Add(r.Step) {
				v := map[string]float64{metrics.ArrivalRPS: 10, metrics.ThroughputRPS: 10, metrics.TTFT: ttft}[id]
				if at.Equal(r.Start) && id == metrics.TTFT {
					v = math.NaN() // a gap: no value, not a zero
				}
				s.Samples = append(s.Samples, metrics.Sample{T: at, V: v})
			}
			out = append(out, s)
		}
		return out, nil
	}
	o, err := Measure(req, applied, window, read)
	if err != nil {
		t.Fatal(err)
	}
	wantRanges := []metrics.Range{
		{Start: applied.Add(-window), End: applied, Step: time.Minute},
		{Start: applied.Add(window / 4), End: applied.Add(window/4 + window), Step: time.Minute},
	}
	if !slices.Equal(asked, wantRanges) {
		t.Errorf("read windows %+v, want %+v", asked, wantRanges)
	}
	if len(o.Effects) != 1 {
		t.Fatalf("effects %+v", o.Effects)
	}
	e := o.Effects[0]
	if e.Verdict != VerdictExpected || e.Before != 400 || e.After != 200 {
		t.Errorf("TTFT outcome %+v, want 400 -> 200, expected", e)
	}
	if due := OutcomeDue(applied, window); !due.Equal(applied.Add(75 * time.Minute)) {
		t.Errorf("OutcomeDue = %v", due)
	}
}
