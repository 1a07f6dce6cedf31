//go:build integration

package telemetry

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry/sim"
)

// TestGPUJoinBehindServiceMonitorLabels has a real Prometheus scrape the
// simulator the way a ServiceMonitor scrapes dcgm-exporter with its Helm
// chart's defaults (honor_labels false: the workload's pod arrives as
// exported_pod, pod names the exporter), with dcgm-exporter's default
// counter file (no profiling fields). Casebook must find the join itself,
// put each GPU under the right engine, and say what the default field set
// lacks.
func TestGPUJoinBehindServiceMonitorLabels(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cluster := sim.New(sim.Options{Seed: 7, DCGMFields: sim.DCGMDefault})
	targets := cluster.Targets()
	hot, cool := targets[0], targets[1] // two instances of the first model
	if hot.Model != cool.Model {
		t.Fatalf("targets %v: want two instances of one model first", targets)
	}
	// A throttled GPU group on one instance, at full severity from the
	// start: its SM clock must show on that instance's scope only.
	if _, err := cluster.Inject(sim.Fault{Cause: metrics.CauseGPUThrottling, Scope: metrics.Scope{Model: hot.Model, Instance: hot.Instance},
		Severity: 0.9, Start: time.Now().Add(-10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	go cluster.Run(ctx, time.Second)
	simSrv := httptest.NewServer(cluster.Handler())
	defer simSrv.Close()
	scrape := cluster.PrometheusConfigFor(strings.TrimPrefix(simSrv.URL, "http://"), sim.ScrapeLabelsKubernetes)
	prom := testenv.Prometheus(t, "global:\n  scrape_interval: 5s\n"+scrape)

	tel, err := Open(ctx, Options{PrometheusURL: prom.URL, ScrapeInterval: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()

	var join GPUJoin
	testenv.WaitFor(t, ctx, 2*time.Minute, "GPU series joined to every engine", func() (bool, error) {
		tel.join.mu.Lock()
		tel.join.ok = false // recompute: the first scrapes may not all be in
		tel.join.mu.Unlock()
		j, err := tel.GPUJoin(ctx)
		if err != nil {
			return false, err
		}
		join = j
		return j.OK() && len(j.Joined) == len(targets), nil
	})
	if join.InstanceLabel != "exported_pod" || join.NamespaceLabel != "exported_namespace" || !join.Detected {
		t.Fatalf("join %+v: want exported_pod and exported_namespace, detected", join)
	}
	// The scrape really did rename: pod is the exporter's own pod.
	rs, err := tel.querier.Instant(ctx, `count(DCGM_FI_DEV_GPU_UTIL{pod=~"dcgm-exporter-.+", exported_pod=`+quote(hot.Instance)+`})`, time.Now())
	if err != nil || len(rs) == 0 {
		t.Fatalf("no GPU series with the exporter's pod and the engine's exported_pod: %v", err)
	}

	snap := func(s sim.Target) metrics.Snapshot {
		t.Helper()
		sn, err := tel.Snapshot(ctx, metrics.Scope{Model: s.Model, Instance: s.Instance}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}
	var hs, cs metrics.Snapshot
	testenv.WaitFor(t, ctx, time.Minute, "a minute of GPU data on both instances", func() (bool, error) {
		hs, cs = snap(hot), snap(cool)
		_, ok1 := hs.Current.Get(metrics.SMClock)
		_, ok2 := cs.Current.Get(metrics.SMClock)
		return ok1 && ok2, nil
	})
	hc, _ := hs.Current.Get(metrics.SMClock)
	cc, _ := cs.Current.Get(metrics.SMClock)
	if !(hc < 0.95*cc) {
		t.Errorf("SM clock of the throttled instance %s is %.0f MHz, of the healthy %s %.0f MHz: the GPUs are not under their own engines",
			hot.Instance, hc, cool.Instance, cc)
	}
	for _, s := range []metrics.Snapshot{hs, cs} {
		if _, ok := s.Current.Get(metrics.SMUtil); !ok {
			t.Errorf("%s: SM activity missing; the default field set has DCGM_FI_DEV_GPU_UTIL", s.Scope)
		}
		if v, ok := s.Current.Get(metrics.TensorActive); ok {
			t.Errorf("%s: tensor activity %g from a default field set without profiling fields", s.Scope, v)
		}
		if _, ok := s.Current.Get(metrics.Power); !ok {
			t.Errorf("%s: board power missing", s.Scope)
		}
	}
	t.Logf("SM clock: throttled %s %.0f MHz, healthy %s %.0f MHz", hot.Instance, hc, cool.Instance, cc)

	cov, err := tel.Coverage(ctx, metrics.Scope{Model: hot.Model, Instance: hot.Instance})
	if err != nil {
		t.Fatal(err)
	}
	if !cov.GPUsJoined {
		t.Errorf("coverage says the GPUs did not join: %s", cov.Join.Summary())
	}
	why := map[string]string{}
	for _, r := range cov.Missing() {
		why[r.ID] = r.Why
	}
	if !strings.Contains(why[metrics.TensorActive], "default-counters.csv") {
		t.Errorf("tensor activity missing because %q; want the default counter file named", why[metrics.TensorActive])
	}
	for _, r := range cov.Resolved() {
		if r.ID == metrics.SMUtil && r.Using[0] != "DCGM_FI_DEV_GPU_UTIL" {
			t.Errorf("SM activity from %v, want DCGM_FI_DEV_GPU_UTIL", r.Using)
		}
	}
	if _, missing := why[metrics.SMUtil]; missing {
		t.Errorf("SM activity missing: %s", why[metrics.SMUtil])
	}
}
