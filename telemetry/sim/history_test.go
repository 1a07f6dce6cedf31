package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// historyTestOptions is a short history: three days of warm-up and one
// evaluated week, with more faults than the default so each cause shows.
func historyTestOptions(seed int64) HistoryOptions {
	return HistoryOptions{Warmup: 3 * 24 * time.Hour, Weeks: 1, FaultsPerDay: 3, Seed: seed}
}

func TestHistoryDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates ten days of two scopes")
	}
	a := History(historyTestOptions(7))
	b := History(historyTestOptions(7))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two histories with the same seed differ")
	}
	c := History(historyTestOptions(8))
	if reflect.DeepEqual(a[0].Faults, c[0].Faults) {
		t.Error("histories with different seeds have the same faults")
	}
}

func TestHistoryShape(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates ten days of two scopes")
	}
	opts := historyTestOptions(3).withDefaults()
	hs := History(opts)
	if len(hs) != 2 {
		t.Fatalf("got %d scopes, want 2", len(hs))
	}
	if hs[0].Scope == hs[1].Scope {
		t.Errorf("both scopes are %v", hs[0].Scope)
	}
	end := opts.Start.Add(opts.Warmup + time.Duration(opts.Weeks)*7*24*time.Hour)
	minutes := int(end.Sub(opts.Start) / time.Minute)
	for _, h := range hs {
		if len(h.Faults) < 10 {
			t.Errorf("%v: %d faults in ten days at 3 a day", h.Scope, len(h.Faults))
		}
		for k, f := range h.Faults {
			if f.Start.Before(opts.Start.Add(historyQuiet)) || f.End.After(end) || !f.Start.Before(f.End) {
				t.Errorf("%v: fault %d %s..%s is outside %s..%s", h.Scope, k, f.Start, f.End, opts.Start, end)
			}
			if d := f.End.Sub(f.Start); d < 10*time.Minute || d > 90*time.Minute {
				t.Errorf("%v: fault %d lasts %s", h.Scope, k, d)
			}
			if k > 0 && f.Start.Before(h.Faults[k-1].End) {
				t.Errorf("%v: fault %d overlaps the one before", h.Scope, k)
			}
		}
		ttft := seriesOf(h, metrics.TTFT)
		if len(ttft) < minutes*9/10 {
			t.Errorf("%v: %d TTFT samples of %d minutes", h.Scope, len(ttft), minutes)
		}
		for j := 1; j < len(ttft); j++ {
			if !ttft[j].T.After(ttft[j-1].T) || ttft[j].T.Sub(ttft[j-1].T)%time.Minute != 0 {
				t.Fatalf("%v: TTFT samples %d and %d are at %s and %s", h.Scope, j-1, j, ttft[j-1].T, ttft[j].T)
			}
		}
	}
}

// TestHistoryFaultsMoveMetrics checks that an engine fault raises the
// error rate and an eviction storm the TTFT of their scope inside the
// window compared with the hour before it.
func TestHistoryFaultsMoveMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates ten days of two scopes")
	}
	checked := map[string]int{}
	for _, h := range History(historyTestOptions(5)) {
		for _, f := range h.Faults {
			var id string
			switch f.Cause {
			case metrics.CauseEngineErrors:
				id = metrics.ErrorRate
			case metrics.CauseKVCacheEviction:
				id = metrics.TTFT
			default:
				continue
			}
			in, before := meanIn(seriesOf(h, id), f.Start.Add(5*time.Minute), f.End),
				meanIn(seriesOf(h, id), f.Start.Add(-time.Hour), f.Start)
			if !(in > before*1.2) {
				t.Errorf("%v: %s %s..%s: %s mean %.4g inside vs %.4g the hour before", h.Scope, f.Cause, f.Start, f.End, id, in, before)
			}
			checked[f.Cause]++
		}
	}
	if checked[metrics.CauseEngineErrors] == 0 && checked[metrics.CauseKVCacheEviction] == 0 {
		t.Fatal("no engine_errors or kv_cache_eviction fault to check")
	}
}

func seriesOf(h ScopeHistory, id string) []metrics.Sample {
	for _, s := range h.Series {
		if s.Metric == id {
			return s.Samples
		}
	}
	return nil
}

func meanIn(s []metrics.Sample, from, to time.Time) float64 {
	sum, n := 0.0, 0
	for _, p := range s {
		if !p.T.Before(from) && p.T.Before(to) {
			sum += p.V
			n++
		}
	}
	return sum / float64(n)
}
