package sim

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// TestWriteOpenMetricsAsScraped parses the back-fill with Prometheus's own
// OpenMetrics parser and checks it against what a scrape stores: the
// labels of each job in the ServiceMonitor style, one sample per series
// per step, and at the end the values of Backfill at the same instant.
func TestWriteOpenMetricsAsScraped(t *testing.T) {
	from, to := monday, monday.Add(10*time.Minute)
	c := New(Options{Seed: 4, Start: from, DCGMFields: DCGMDefault})
	var buf bytes.Buffer
	if err := c.WriteOpenMetrics(&buf, "sim:9100", ScrapeLabelsKubernetes, from, to, time.Minute); err != nil {
		t.Fatal(err)
	}
	type point struct {
		ls labels.Labels
		t  int64
		v  float64
	}
	var pts []point
	p := textparse.NewOpenMetricsParser(buf.Bytes(), labels.NewSymbolTable())
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("promtool's parser rejects the back-fill: %v", err)
		}
		if e != textparse.EntrySeries {
			continue
		}
		_, ts, v := p.Series()
		if ts == nil {
			t.Fatal("a sample without a timestamp")
		}
		var ls labels.Labels
		p.Labels(&ls)
		pts = append(pts, point{ls, *ts, v})
	}

	// The same cluster's Backfill, keyed by series name and scraped labels.
	ref := New(Options{Seed: 4, Start: from, DCGMFields: DCGMDefault})
	atEnd := map[string]float64{}
	series := 0
	if err := ref.Backfill(from, to, time.Minute, func(s Sample) error {
		if s.T.Equal(from) {
			series++
		}
		if s.T.Equal(to) {
			atEnd[s.Key] = s.V
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := series * 11; len(pts) != want {
		t.Fatalf("%d samples, want %d series x 11 steps = %d", len(pts), series, want)
	}

	seen := map[string]bool{}
	for _, pt := range pts {
		ls := pt.ls
		name := ls.Get("__name__")
		if ls.Get("instance") != "sim:9100" {
			t.Fatalf("%s: instance %q", ls, ls.Get("instance"))
		}
		switch job := ls.Get("job"); job {
		case "dcgm-exporter":
			// The exporter's own pod is the target; the workload's pod
			// arrives renamed, as behind a ServiceMonitor.
			if ls.Get("exported_pod") == "" || ls.Get("exported_namespace") != EngineNamespace ||
				ls.Get("namespace") != ExporterNamespace || ls.Get("pod") != "dcgm-exporter-"+ls.Get("Hostname") ||
				ls.Get("container") != "exporter" || ls.Get("exported_container") != "vllm" {
				t.Fatalf("GPU series %s: not labelled as a ServiceMonitor scrape stores it", ls)
			}
		case "vllm":
			if ls.Get("pod") == "" || ls.Get("namespace") != EngineNamespace || ls.Has("exported_pod") {
				t.Fatalf("engine series %s: want the target's pod and namespace", ls)
			}
		case "gateway":
			if ls.Get("pod") == "" || ls.Has("exported_pod") {
				t.Fatalf("gateway series %s: honor_labels keeps its upstream pod", ls)
			}
		default:
			t.Fatalf("%s: unknown job %q", ls, job)
		}
		if pt.t != to.UnixMilli() {
			continue
		}
		key := ls.String()
		if seen[key] {
			t.Fatalf("%s twice at one instant", key)
		}
		seen[key] = true
		if name == "DCGM_FI_DEV_SM_CLOCK" && pt.v < 100 {
			t.Errorf("%s: SM clock %g MHz", ls, pt.v)
		}
	}
	if len(seen) != len(atEnd) {
		t.Fatalf("%d series at the end, Backfill has %d", len(seen), len(atEnd))
	}
	// Same numbers as Backfill at the end, up to the exporter's rounding.
	var sum, refSum float64
	for _, pt := range pts {
		if pt.t == to.UnixMilli() {
			sum += pt.v
		}
	}
	for _, v := range atEnd {
		refSum += v
	}
	if d := sum - refSum; d > 1e-6*refSum+float64(len(atEnd)) || d < -1e-6*refSum-float64(len(atEnd)) {
		t.Errorf("values at the end sum to %g, Backfill's to %g", sum, refSum)
	}
}

func TestWriteOpenMetricsRejects(t *testing.T) {
	c := New(Options{Seed: 1, Start: monday})
	for name, call := range map[string]func() error{
		"no host": func() error {
			return c.WriteOpenMetrics(io.Discard, "", ScrapeLabelsStatic, monday, monday, time.Minute)
		},
		"zero step": func() error { return c.WriteOpenMetrics(io.Discard, "h:1", ScrapeLabelsStatic, monday, monday, 0) },
		"backwards": func() error {
			return c.WriteOpenMetrics(io.Discard, "h:1", ScrapeLabelsStatic, monday, monday.Add(-time.Minute), time.Minute)
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
