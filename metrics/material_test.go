package metrics

import "testing"

func TestMaterial(t *testing.T) {
	tests := []struct {
		name        string
		id          string
		mean, value float64
		want        bool
	}{
		{"KV usage 0.2 % to 1.8 %: clear, and harmless", KVCacheUsage, 0.002, 0.018, false},
		{"KV usage 30 % to 45 %: still under half full", KVCacheUsage, 0.30, 0.45, false},
		{"KV usage 60 % to 95 %", KVCacheUsage, 0.60, 0.95, true},
		{"TTFT 21 ms to 24 ms", TTFT, 21, 24, false},
		{"TTFT 21 ms to 60 ms", TTFT, 21, 60, true},
		{"TTFT 800 ms to 900 ms: an eighth", TTFT, 800, 900, false},
		{"TTFT 800 ms to 1,100 ms", TTFT, 800, 1100, true},
		{"TTFT p99 480 ms to 600 ms: a quarter of a tail", TTFTP99, 480, 600, false},
		{"TTFT p99 480 ms to 4.8 s", TTFTP99, 480, 4800, true},
		{"queue 22 ms to 55 ms", QueueTime, 22, 55, false},
		{"queue 30 ms to 520 ms", QueueTime, 30, 520, true},
		{"throughput down 5 %", ThroughputRPS, 20, 19, false},
		{"throughput down 30 %", ThroughputRPS, 20, 14, true},
		{"errors 0 to 0.05 %", ErrorRate, 0, 0.0005, false},
		{"errors 0 to 2 %", ErrorRate, 0, 0.02, true},
		{"SM clock down 1 %", SMClock, 1980, 1960, false},
		{"SM clock down 30 %", SMClock, 1980, 1400, true},
		{"a metric without a floor", AbortRate, 0, 1e-9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Material(tc.id, tc.mean, tc.value); got != tc.want {
				t.Errorf("Material(%s, %v, %v) = %v, want %v", tc.id, tc.mean, tc.value, got, tc.want)
			}
		})
	}
	for _, m := range Catalog {
		if _, ok := MaterialityOf(m.ID); !ok && m.ID != AbortRate && m.ID != APIErrorRate && m.ID != XIDErrors &&
			m.ID != QueueCapacity && m.ID != CachedPromptTPS && m.ID != SpecAcceptLength {
			t.Errorf("catalog metric %s has no materiality floor", m.ID)
		}
	}
}

func TestTailJudgeable(t *testing.T) {
	tests := []struct {
		name string
		id   string
		v    Values
		want bool
	}{
		{"p99 with five hundred requests a minute", TTFTP99, Values{ThroughputRPS: 500.0 / 60}, true},
		{"p99 of a hundred requests is set by the slowest few", TTFTP99, Values{ThroughputRPS: 100.0 / 60}, false},
		{"p99 of thirty requests is their maximum", TPOTP99, Values{ThroughputRPS: 0.5}, false},
		{"p99 without a throughput is judged", E2EP99, Values{}, true},
		{"means are always judged", TTFT, Values{ThroughputRPS: 0.01}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TailJudgeable(tc.id, tc.v); got != tc.want {
				t.Errorf("TailJudgeable(%s, %v) = %v, want %v", tc.id, tc.v, got, tc.want)
			}
		})
	}
}
