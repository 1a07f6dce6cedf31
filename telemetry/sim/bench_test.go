package sim

import (
	"bytes"
	"testing"
	"time"
)

// BenchmarkScrape measures one Advance by a 5 s scrape interval plus
// rendering every endpoint of the default cluster.
func BenchmarkScrape(b *testing.B) {
	start := time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)
	c := New(Options{Seed: 1, Start: start})
	c.Advance(start.Add(time.Minute))
	var buf bytes.Buffer
	t := start.Add(time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		t = t.Add(5 * time.Second)
		c.Advance(t)
		for _, tg := range c.Targets() {
			buf.Reset()
			c.Render(tg.EnginePath, &buf)
			buf.Reset()
			c.Render(tg.GPUPath, &buf)
		}
		buf.Reset()
		c.Render(GatewayPath, &buf)
	}
}

// BenchmarkBackfillWeek measures seven days of back-fill at one-minute
// steps for the default cluster; it reports samples emitted per run.
func BenchmarkBackfillWeek(b *testing.B) {
	start := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		c := New(Options{Seed: 1, Start: start})
		n := 0
		err := c.Backfill(start, start.Add(7*24*time.Hour), time.Minute, func(Sample) error { n++; return nil })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "samples/op")
	}
}

// BenchmarkScenarios2000 measures generating a 2,000-case corpus.
func BenchmarkScenarios2000(b *testing.B) {
	for b.Loop() {
		if got := Scenarios(ScenarioOptions{N: 2000, Seed: 1}); len(got) != 2000 {
			b.Fatalf("got %d cases", len(got))
		}
	}
}
