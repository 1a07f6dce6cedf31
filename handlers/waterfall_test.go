package handlers_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

func TestBuildWaterfall(t *testing.T) {
	full := map[string]float64{
		metrics.GatewayE2E: 3000, metrics.E2E: 2800, metrics.TTFT: 200, metrics.TPOT: 13,
		metrics.ThroughputRPS: 10, metrics.GenerationTPS: 2010, metrics.QueueTime: 40,
		metrics.PrefillTime: 160, metrics.DecodeTime: 2600,
	}
	without := func(m map[string]float64, ids ...string) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = v
		}
		for _, id := range ids {
			out[id] = math.NaN()
		}
		return out
	}
	tests := []struct {
		name      string
		means     map[string]float64
		wantBars  [3]int
		wantNotes [3]string
	}{
		{"complete", full, [3]int{3, 2, 3}, [3]string{"7% of the gateway's time", "Token generation dominates", "Decode is 93%"}},
		{"no gateway", without(full, metrics.GatewayE2E), [3]int{1, 2, 3}, [3]string{"No gateway source", "", ""}},
		{"no throughput", without(full, metrics.ThroughputRPS), [3]int{3, 2, 3}, [3]string{"", "Output length unknown", ""}},
		{"no phases", without(full, metrics.QueueTime, metrics.PrefillTime, metrics.DecodeTime), [3]int{3, 2, 0}, [3]string{"", "", "no phase histograms"}},
		{"inconsistent sources", map[string]float64{metrics.E2E: 450, metrics.TTFT: 20, metrics.TPOT: 5.6, metrics.ThroughputRPS: 7, metrics.GenerationTPS: 1500},
			[3]int{1, 2, 0}, [3]string{"", "disagree", ""}},
		{"nothing", map[string]float64{}, [3]int{0, 0, 0}, [3]string{"No end-to-end latency", "missing", "no phase"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := handlers.BuildWaterfall(context.Background(), tc.means)
			if len(w.Levels) != 3 {
				t.Fatalf("%d levels", len(w.Levels))
			}
			for i, l := range w.Levels {
				if len(l.Bars) != tc.wantBars[i] {
					t.Errorf("level %d: %d bars, want %d", i+1, len(l.Bars), tc.wantBars[i])
				}
				if !strings.Contains(l.Note, tc.wantNotes[i]) {
					t.Errorf("level %d note %q lacks %q", i+1, l.Note, tc.wantNotes[i])
				}
				for _, b := range l.Bars {
					if b.X < 0 || b.W <= 0 || b.X+b.W > 1000.5 {
						t.Errorf("level %d bar %q at %v+%v is off the axis", i+1, b.Label, b.X, b.W)
					}
				}
			}
		})
	}
}

// TestBuildWaterfallChinese checks the titles, bars and notes follow the
// request's language.
func TestBuildWaterfallChinese(t *testing.T) {
	ctx := i18n.With(context.Background(), i18n.New(i18n.Chinese))
	w := handlers.BuildWaterfall(ctx, map[string]float64{metrics.GatewayE2E: 3000, metrics.E2E: 2800, metrics.DecodeTime: 2600, metrics.PrefillTime: 200})
	want := []string{"1 · 网关与引擎", "2 · 首 Token 与其余 Token", "3 · 引擎阶段"}
	for i, l := range w.Levels {
		if l.Title != want[i] {
			t.Errorf("level %d title %q, want %q", i+1, l.Title, want[i])
		}
	}
	if got := w.Levels[0].Note; !strings.Contains(got, "7% 花在引擎之外") {
		t.Errorf("level 1 note %q", got)
	}
	if got := w.Levels[2].Note; got != "解码占引擎请求时间的 93%。" {
		t.Errorf("level 3 note %q", got)
	}
	if !strings.HasPrefix(w.Scale, "满宽 = ") {
		t.Errorf("scale %q", w.Scale)
	}
}
