//go:build integration

package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/promrules"
	"github.com/casebook/casebook/telemetry/sim"
)

// TestVictoriaMetricsRemote runs the remote mode against Debian's
// VictoriaMetrics single-node server instead of Prometheus: an hour of the
// simulator's history is imported through VictoriaMetrics' Prometheus
// import API, the server scrapes the live simulator itself, vmalert
// evaluates `casebook rules` into it, and Casebook reads the recorded tier
// and diagnoses a throttled GPU group from what VictoriaMetrics answers.
func TestVictoriaMetricsRemote(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := sim.New(sim.Options{Seed: 5})
	simSrv := httptest.NewServer(cluster.Handler())
	defer simSrv.Close()
	simHost := strings.TrimPrefix(simSrv.URL, "http://")

	port := testenv.FreePort(t)
	dir := t.TempDir()
	scrapeCfg := testenv.WriteFile(t, dir, "scrape.yml", cluster.PrometheusConfig(simHost))
	vm := testenv.Start(t, "victoria-metrics", testenv.LookBinary(t, "victoria-metrics", "victoria-metrics"), port, "/health",
		"-httpListenAddr=127.0.0.1:"+strconv.Itoa(port),
		"-storageDataPath="+dir+"/vm-data",
		"-promscrape.config="+scrapeCfg,
		"-retentionPeriod=1y",
		"-search.latencyOffset=1s", // serve the newest samples at once, as Prometheus does
		"-dedup.minScrapeInterval=0",
	)

	// An hour and a quarter of history, imported with the labels the live
	// scrape gives the same series, so the baseline and the live samples
	// are one series each.
	now := time.Now().Truncate(time.Second)
	start := now.Add(-75 * time.Minute)
	if err := importHistory(ctx, vm.URL, cluster, start, now, 15*time.Second, simHost); err != nil {
		t.Fatal(err)
	}
	// Then a throttled GPU group on one instance, live from now on.
	target := cluster.Targets()[0]
	scope := metrics.Scope{Model: target.Model, Instance: target.Instance}
	if _, err := cluster.Inject(sim.Fault{Cause: metrics.CauseGPUThrottling, Scope: scope, Severity: 0.9, Start: now}); err != nil {
		t.Fatal(err)
	}
	go cluster.Run(ctx, time.Second)

	rules := promrules.Recording(promrules.Options{Window: 30 * time.Second})
	for i := range rules.Groups {
		rules.Groups[i].Interval = "1s"
	}
	rulesYAML, err := rules.YAML()
	if err != nil {
		t.Fatal(err)
	}
	rulesPath := testenv.WriteFile(t, dir, "casebook-recording.yml", string(rulesYAML))
	alertPort := testenv.FreePort(t)
	testenv.Start(t, "vmalert", testenv.LookBinary(t, "vmalert", "victoria-metrics"), alertPort, "/health",
		"-httpListenAddr=127.0.0.1:"+strconv.Itoa(alertPort),
		"-rule="+rulesPath,
		"-datasource.url="+vm.URL,
		"-remoteWrite.url="+vm.URL,
		"-remoteWrite.flushInterval=1s",
		"-evaluationInterval=1s",
	)

	tel, err := Open(ctx, Options{PrometheusURL: vm.URL, ScrapeInterval: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()

	// The recorded tier: vmalert's records are read back through the same
	// query API, and agree with the raw expression.
	ids := []string{metrics.ThroughputRPS, metrics.SMUtil}
	testenv.WaitFor(t, ctx, 90*time.Second, "vmalert's recorded series in VictoriaMetrics", func() (bool, error) {
		r := metrics.Range{Start: time.Now().Add(-48*time.Hour + 30*time.Second), End: time.Now().Add(31 * time.Second), Step: time.Minute}
		if _, err := tel.Range(ctx, metrics.Scope{Model: scope.Model}, ids, r); err != nil {
			return false, err
		}
		for _, id := range ids {
			if tel.noRecords.absent(id+"/1m", time.Now()) {
				tel.noRecords = recordAbsence{}
				return false, nil
			}
		}
		return true, nil
	})
	sel, _, err := tel.scopeSelectors(ctx, metrics.Scope{Model: scope.Model})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := metrics.Lookup(metrics.ThroughputRPS)
	rec, err := tel.querier.Instant(ctx, promrules.ReadQuery(m, sel, true, "1m", 3*time.Second), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := firstValue(m, rec); !ok {
		t.Fatalf("no recorded %s for %s from VictoriaMetrics", m.ID, scope.Model)
	}

	// The diagnosis, from a snapshot whose hour of history VictoriaMetrics
	// holds, once the fault has run for a couple of minutes.
	e := diagnose.New(diagnose.Options{})
	var d diagnose.Diagnosis
	testenv.WaitFor(t, ctx, 150*time.Second, "gpu_throttling diagnosed through VictoriaMetrics", func() (bool, error) {
		snap, err := tel.Snapshot(ctx, scope, time.Now())
		if err != nil {
			return false, err
		}
		if len(snap.History) < 30 {
			return false, nil
		}
		prev := d.RootCause
		d = e.Diagnose(snap)
		if d.RootCause != prev {
			t.Logf("%d history points: diagnosed %s (%.2f)", len(snap.History), d.RootCause, d.Confidence)
		}
		return d.RootCause == metrics.CauseGPUThrottling, nil
	})
	t.Logf("diagnosed %s at confidence %.2f: %s", d.RootCause, d.Confidence, d.Title)

	// The control: the healthy instance beside it is not called throttled.
	healthy := cluster.Targets()[1]
	snap, err := tel.Snapshot(ctx, metrics.Scope{Model: healthy.Model, Instance: healthy.Instance}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if hd := e.Diagnose(snap); hd.RootCause == metrics.CauseGPUThrottling {
		t.Errorf("healthy %s diagnosed %s too", healthy.Instance, hd.RootCause)
	}
}

// importHistory back-fills the simulator from start to end into
// VictoriaMetrics through /api/v1/import/prometheus, labelling each series
// with the job and instance its live scrape will carry.
func importHistory(ctx context.Context, base string, c *sim.Cluster, start, end time.Time, step time.Duration, instance string) error {
	var buf bytes.Buffer
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/import/prometheus", bytes.NewReader(buf.Bytes()))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("import: %s", resp.Status)
		}
		buf.Reset()
		return nil
	}
	err := c.Backfill(start, end, step, func(s sim.Sample) error {
		var name string
		var rest []string
		for _, l := range s.Labels {
			if l.Name == "__name__" {
				name = l.Value
				continue
			}
			rest = append(rest, l.Name+"="+strconv.Quote(l.Value))
		}
		job := "vllm"
		switch {
		case strings.HasPrefix(name, "DCGM_"):
			job = "dcgm-exporter"
		case strings.HasPrefix(name, "gateway_"):
			job = "gateway"
		}
		rest = append(rest, "job="+strconv.Quote(job), "instance="+strconv.Quote(instance))
		fmt.Fprintf(&buf, "%s{%s} %s %d\n", name, strings.Join(rest, ","), strconv.FormatFloat(s.V, 'g', -1, 64), s.T.UnixMilli())
		if buf.Len() > 4<<20 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	// Make the imported samples searchable before the first query.
	resp, err := http.Get(base + "/internal/force_flush")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
