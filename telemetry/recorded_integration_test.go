//go:build integration

package telemetry

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/promrules"
	"github.com/casebook/casebook/telemetry/sim"
)

// TestRecordedTiersOnRealPrometheus loads `casebook rules` into a real
// Prometheus (evaluated every second instead of every minute), lets it
// scrape the simulator, and reads a two-day chart in remote mode: the
// chart must come from the recorded tier and agree with the raw
// expression.
func TestRecordedTiersOnRealPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster := sim.New(sim.Options{Seed: 3})
	go cluster.Run(ctx, time.Second)
	simSrv := httptest.NewServer(cluster.Handler())
	defer simSrv.Close()

	rules := promrules.Recording(promrules.Options{Window: 30 * time.Second})
	for i := range rules.Groups {
		rules.Groups[i].Interval = "1s"
	}
	rulesYAML, err := rules.YAML()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rulesPath := testenv.WriteFile(t, dir, "casebook-recording.yml", string(rulesYAML))
	scrape := cluster.PrometheusConfig(strings.TrimPrefix(simSrv.URL, "http://"))
	prom := testenv.Prometheus(t, fmt.Sprintf("global:\n  scrape_interval: 5s\n  evaluation_interval: 1s\nrule_files: [%q]\n%s", rulesPath, scrape))

	tel, err := Open(ctx, Options{PrometheusURL: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Close()
	scope := metrics.Scope{Model: sim.Models[0].Name}
	ids := []string{metrics.ThroughputRPS, metrics.SMUtil}

	var recorded []metrics.Series
	testenv.WaitFor(t, ctx, 90*time.Second, "recorded series for a two-day chart", func() (bool, error) {
		now := time.Now()
		// The last step lands just after now, where the newest records are.
		r := metrics.Range{Start: now.Add(-48*time.Hour + 30*time.Second), End: now.Add(31 * time.Second), Step: time.Minute}
		s, err := tel.Range(ctx, scope, ids, r)
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if tel.noRecords.absent(id+"/1m", time.Now()) {
				tel.noRecords = recordAbsence{} // not recorded yet: try again
				return false, nil
			}
		}
		recorded = s
		return len(s[0].Samples) > 0 && len(s[1].Samples) > 0, nil
	})

	if len(recorded) != len(ids) {
		t.Fatalf("range returned %d series", len(recorded))
	}
	// The records mean what the raw expressions mean: at one instant,
	// the recorded series and the expression over the same window agree
	// (the rules run every second, so they trail by at most that).
	sel, _, _, err := tel.scopeSelectors(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, id := range ids {
		m, _ := metrics.Lookup(id)
		rec, err := tel.querier.Instant(ctx, promrules.ReadQuery(m, sel, true, "1m", 3*time.Second), now)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := tel.querier.Instant(ctx, m.Query(sel, 30*time.Second), now)
		if err != nil {
			t.Fatal(err)
		}
		rv, ok1 := firstValue(m, rec)
		xv, ok2 := firstValue(m, raw)
		if !ok1 || !ok2 {
			t.Fatalf("%s: recorded %v (%v), raw %v (%v)", id, rv, ok1, xv, ok2)
		}
		if xv > 0 && math.Abs(rv-xv)/xv > 0.25 {
			t.Errorf("%s: the recorded tier says %.4g, the raw expression %.4g", id, rv, xv)
		}
		t.Logf("%s: recorded %.4g, raw %.4g", id, rv, xv)
	}
}
