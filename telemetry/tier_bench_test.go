package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/casebook/casebook/metrics"
)

// Run with:
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'IngestDCGM|Chart' -benchtime 1x ./telemetry/
//	go test -tags sqlite_fts5 -run '^$' -bench DemoDisk30Days -benchtime 1x -timeout 30m ./telemetry/

// dcgmFieldsPerGPU and dcgmGPUs size the ingest benchmark: DCGM's ~1,200
// fields a second on each of 64 GPUs.
const (
	dcgmFieldsPerGPU = 1200
	dcgmGPUs         = 64
	// ingestSeconds is how many seconds of collection one benchmark
	// iteration simulates.
	ingestSeconds = 120
)

// simGPUField models how one DCGM field's value moves. Most of the 1,200
// fields (ECC and retired-page counters, NVLink and PCIe error counters,
// clocks, limits, identifiers) hold still for minutes; a quarter are small
// integers that step now and then (temperatures, utilisation percentages,
// memory used in MiB); the rest are readings with three decimals that
// change every second (power, profiling activity ratios).
type simGPUField struct {
	kind  int // 0 steady, 1 stepping integer, 2 noisy reading
	value float64
}

func (f *simGPUField) next(r *rand.Rand, sec int) float64 {
	switch f.kind {
	case 0:
		if sec%600 == 0 && r.IntN(4) == 0 {
			f.value++
		}
	case 1:
		if r.IntN(5) == 0 {
			f.value += float64(r.IntN(3) - 1)
		}
	default:
		f.value = math.Round((200+100*r.Float64())*1000) / 1000
	}
	return f.value
}

// BenchmarkIngestDCGM64 appends 1,200 fields a second for each of 64 GPUs
// (76,800 samples/s) into the raw tier with the downsampler running every
// ten simulated seconds, as in production. cpu_s/wall_s is the CPU time
// this costs per second of collection (the bar is 0.5 core);
// chunk_B/sample, index_B/series and B/sample_2h_block are the raw tier's
// size once compacted, the last projected to a full 2-hour block (the
// index is written once per series and block).
//
// Timestamps dominate the size: "aligned" stamps every collection at its
// whole second, "jitter2ms" at the tick's wall-clock millisecond, which a
// busy host delays by up to 2 ms, so that the delta-of-delta of the
// timestamps is rarely zero.
func BenchmarkIngestDCGM64(b *testing.B) {
	for _, bc := range []struct {
		name   string
		jitter int
	}{{"aligned", 0}, {"jitter2ms", 3}} {
		b.Run(bc.name, func(b *testing.B) { benchIngest(b, bc.jitter) })
	}
}

func benchIngest(b *testing.B, jitter int) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		start := time.Now().Add(-time.Hour).Truncate(time.Minute)
		now := start
		ts := openTestTiers(b, b.TempDir(), TierOptions{}, &now)
		r := rand.New(rand.NewPCG(1, uint64(i)))
		n := dcgmFieldsPerGPU * dcgmGPUs
		fields := make([]simGPUField, n)
		lsets := make([]labels.Labels, n)
		refs := make([]storage.SeriesRef, n)
		for k := range fields {
			gpu, f := k/dcgmFieldsPerGPU, k%dcgmFieldsPerGPU
			switch {
			case f%20 < 12:
				fields[k].kind = 0
			case f%20 < 17:
				fields[k].kind = 1
			default:
				fields[k].kind = 2
			}
			fields[k].value = float64(r.IntN(100))
			lsets[k] = labels.FromStrings(labels.MetricName, fmt.Sprintf("DCGM_FI_FIELD_%04d", f),
				"gpu", strconv.Itoa(gpu%8), "UUID", fmt.Sprintf("GPU-%08x", gpu), "Hostname", fmt.Sprintf("gpu-node-%d", gpu/8),
				"pod", fmt.Sprintf("vllm-%d", gpu/2), "namespace", "inference", "job", "dcgm-exporter")
		}
		raw := ts.raw()
		b.StartTimer()
		cpu0, began := cpuTime(), time.Now()
		samples := 0
		for sec := 1; sec <= ingestSeconds; sec++ {
			now = start.Add(time.Duration(sec) * time.Second)
			t := now.UnixMilli()
			if jitter > 0 {
				t += int64(r.IntN(jitter))
			}
			app := raw.Appender(context.Background())
			for k := range fields {
				ref, err := app.Append(refs[k], lsets[k], t, fields[k].next(r, sec))
				if err != nil {
					b.Fatal(err)
				}
				refs[k] = ref
			}
			if err := app.Commit(); err != nil {
				b.Fatal(err)
			}
			samples += n
			if sec%10 == 0 {
				if err := ts.ds.catchUp(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		}
		cpu := cpuTime() - cpu0
		took := time.Since(began)
		b.StopTimer()
		if ts.ds.watermark(1) < start.Add(time.Minute).UnixMilli() {
			b.Fatal("the downsampler wrote nothing")
		}
		// Compact the raw head into a block to measure its size on disk.
		h := raw.Head()
		if err := raw.CompactHead(tsdb.NewRangeHead(h, h.MinTime(), h.MaxTime())); err != nil {
			b.Fatal(err)
		}
		var chunkBytes, indexBytes int64
		for _, blk := range raw.Blocks() {
			chunkBytes += dirSize(filepath.Join(blk.Dir(), "chunks"))
			if fi, err := os.Stat(filepath.Join(blk.Dir(), "index")); err == nil {
				indexBytes += fi.Size()
			}
		}
		perSample := float64(chunkBytes) / float64(samples)
		perSeries := float64(indexBytes) / float64(n)
		b.ReportMetric(float64(samples)/ingestSeconds, "samples/s")
		b.ReportMetric(cpu.Seconds()/ingestSeconds, "cpu_s/wall_s")
		b.ReportMetric(took.Seconds()/ingestSeconds, "elapsed_s/wall_s")
		b.ReportMetric(perSample, "chunk_B/sample")
		b.ReportMetric(perSeries, "index_B/series")
		b.ReportMetric(perSample+perSeries/7200, "B/sample_2h_block")
		_ = ts.close()
	}
}

// chartTiers fills the 1-minute tier with 30 days and the 1-hour tier with
// a year of one engine instance's TTFT histogram sums and counts (the
// series the ttft_ms chart reads), as the downsampler would have written
// them, and returns a Telemetry over them.
func chartTiers(b *testing.B) (*Telemetry, metrics.Scope, time.Time) {
	b.Helper()
	end := time.Now().Truncate(time.Hour)
	scope := metrics.Scope{Model: "llama-3.1-8b-instruct", Instance: "llama-8b-0"}
	ts, err := openTiers(filepath.Join(b.TempDir(), "tsdb"), TierOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ts.close() })
	base := []string{"model_name", scope.Model, "pod", scope.Instance, "engine", "0", "job", "vllm", "instance", "casebook-sim:80"}
	sum := labels.FromStrings(append([]string{labels.MetricName, "vllm:time_to_first_token_seconds_sum"}, base...)...)
	count := labels.FromStrings(append([]string{labels.MetricName, "vllm:time_to_first_token_seconds_count"}, base...)...)
	fill := func(db *tsdb.DB, from time.Time, step time.Duration) {
		app := db.Appender(context.Background())
		var s, c float64
		k := 0
		for t := from; !t.After(end); t = t.Add(step) {
			reqs := step.Seconds() * (20 + 5*math.Sin(float64(t.Unix())/86400*2*math.Pi))
			c += reqs
			s += reqs * 0.25
			if _, err := app.Append(0, sum, t.UnixMilli(), s); err != nil {
				b.Fatal(err)
			}
			if _, err := app.Append(0, count, t.UnixMilli(), c); err != nil {
				b.Fatal(err)
			}
			if k++; k%10000 == 0 {
				if err := app.Commit(); err != nil {
					b.Fatal(err)
				}
				app = db.Appender(context.Background())
			}
		}
		if err := app.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	// The data stays in the heads: cutting a month and a year of history
	// into blocks at once would take minutes of setup; a chart reads head
	// chunks as fast as block chunks.
	for _, t := range ts.tiers {
		t.db.DisableCompactions()
	}
	fill(ts.tiers[1].db, end.Add(-31*24*time.Hour), time.Minute)
	fill(ts.tiers[2].db, end.Add(-366*24*time.Hour), time.Hour)
	for level := 1; level < 3; level++ {
		if err := ts.ds.setWatermark(level, end.UnixMilli()); err != nil {
			b.Fatal(err)
		}
	}
	tel := &Telemetry{log: slog.New(slog.DiscardHandler), querier: newTieredQuerier(ts, nil),
		res: resolutions{live: DefaultScrapeInterval, tiers: ts}, tiers: ts, opts: Options{InstanceLabel: GPUInstanceLabel}}
	return tel, scope, end
}

// BenchmarkChart30dMinuteTier draws a 30-day ttft_ms chart at a 30-minute
// step (1,440 points) from the 1-minute tier; ms/chart is the bar (100 ms).
func BenchmarkChart30dMinuteTier(b *testing.B) {
	benchChart(b, 30*24*time.Hour, 30*time.Minute)
}

// BenchmarkChart1yHourTier draws a one-year ttft_ms chart at a 6-hour step
// (1,460 points) from the 1-hour tier; ms/chart is the bar (100 ms).
func BenchmarkChart1yHourTier(b *testing.B) {
	benchChart(b, 365*24*time.Hour, 6*time.Hour)
}

func benchChart(b *testing.B, span, step time.Duration) {
	tel, scope, end := chartTiers(b)
	ctx := context.Background()
	r := metrics.Range{Start: end.Add(-span), End: end, Step: step}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tel.ranges = newRangeCache(0) // measure the tier read, not the chart cache
		series, err := tel.Range(ctx, scope, []string{metrics.TTFT}, r)
		if err != nil {
			b.Fatal(err)
		}
		if got, want := len(series[0].Samples), int(span/step)-1; got < want {
			b.Fatalf("%d points, want %d", got, want)
		}
		if v := series[0].Samples[0].V; math.Abs(v-250) > 1 {
			b.Fatalf("ttft_ms = %v, want 250", v)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/chart")
}

// BenchmarkDemoDisk30Days back-fills 30 days of the demo cluster (at the
// back-fill's one-minute resolution), lets the downsampler catch up, and
// compacts every tier, then reports the bytes on disk per tier (blocks and
// WAL, as a user's du would see them). The raw tier holds the last day;
// live scraping at 5 s adds about twelve times its samples at the
// bytes/sample IngestDCGM64 reports.
func BenchmarkDemoDisk30Days(b *testing.B) {
	for i := 0; i < b.N; i++ {
		tel, _ := openDemo(b, 30*24*time.Hour)
		now := time.Now()
		deadline := now.Add(10 * time.Minute)
		for tel.tiers.ds.watermark(2) < now.Add(-2*time.Hour).UnixMilli() ||
			tel.tiers.ds.watermark(1) < now.Add(-2*time.Minute).UnixMilli() {
			if time.Now().After(deadline) {
				b.Fatal("the downsampler did not catch up in 10 minutes")
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, t := range tel.tiers.tiers {
			if err := t.db.Compact(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		st, err := tel.Storage()
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range st.Tiers {
			b.ReportMetric(float64(t.DiskBytes)/(1<<20), "MiB_"+t.Name)
			b.ReportMetric(float64(t.Series), "series_"+t.Name)
			b.Logf("%s tier: %.1f MiB, %d series, %s .. %s", t.Name, float64(t.DiskBytes)/(1<<20), t.Series,
				t.Oldest.Format(time.RFC3339), t.Newest.Format(time.RFC3339))
		}
	}
}
