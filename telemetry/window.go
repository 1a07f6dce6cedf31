package telemetry

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// GPUInstanceLabel is the default instance label of engines, and the label
// that joins the demo cluster's dcgm-exporter series to its engines:
// dcgm-exporter in Kubernetes mode labels every GPU with the pod that holds
// it. Other sources' GPU join label is detected (see DetectGPUJoin).
const GPUInstanceLabel = "pod"

// resolutions describes how dense the stored data is, so that every rate
// window holds at least two samples.
type resolutions struct {
	// live is the interval of live data (the scrape interval, or the
	// remote Prometheus' scrape interval).
	live time.Duration
	// coarse is the interval of back-filled data before coarseEnd.
	coarse    time.Duration
	coarseEnd time.Time // zero when nothing was back-filled coarsely
	// tiers, in the embedded mode, serve older data from the 1-minute and
	// 1-hour aggregates.
	tiers *tierSet
}

// at returns the coarsest resolution of the data from `from` on, for a
// query that may read tiers as coarse as level c.
func (r resolutions) at(from time.Time, c int) time.Duration {
	res := r.live
	if !r.coarseEnd.IsZero() && from.Before(r.coarseEnd) && r.coarse > r.live {
		res = r.coarse
	}
	if r.tiers != nil {
		res = max(res, r.tiers.resolutionAt(from, c))
	}
	return res
}

// rateWindow applies the $__rate_interval rule: max(step + resolution,
// 4 x resolution). A rate over it always has at least two samples, and
// consecutive steps overlap so that no sample falls between windows.
func rateWindow(step, res time.Duration) time.Duration {
	w := max(step+res, 4*res)
	return roundUp(w, time.Second)
}

// rangeWindow returns the rate window of a range query over [start, end]
// at step: the resolution is the coarsest of the data any window reads.
// Hourly aggregates sit exactly on the hour, with none of a scrape's
// jitter, so over them step + resolution (two aggregates at least) is
// enough: four hours would smear an hour's incident over four points.
func (r resolutions) rangeWindow(start time.Time, step time.Duration) time.Duration {
	c := levelForStep(step)
	res := r.live
	w := rateWindow(step, res)
	// A wider window may reach coarser data; three rounds cover raw, 1m
	// and 1h.
	for range 3 {
		next := r.at(start.Add(-w), c)
		if next == res {
			break
		}
		res = next
		w = rateWindow(step, res)
	}
	if res == tierLevels[2] {
		w = roundUp(max(step, res)+res, time.Second)
	}
	return w
}

// currentWindow returns the window of an instant "current" value at `at`:
// one minute where live data is dense, widened to four samples where the
// data is coarser (the back-filled past).
func (r resolutions) currentWindow(at time.Time) time.Duration {
	w := max(time.Minute, 4*r.live)
	if res := r.at(at.Add(-w), 0); res != r.live {
		w = max(time.Minute, 4*res)
	}
	return roundUp(w, time.Second)
}

func roundUp(d, unit time.Duration) time.Duration {
	if d%unit == 0 {
		return d
	}
	return (d/unit + 1) * unit
}

// selectors returns the catalog matchers of a scope. instances are the
// model's instances, used to join GPU series to a model scope; join names
// the GPU labels that hold an engine's pod and namespace, and namespaces
// are the namespaces the scope's engines run in (empty when their series
// carry none). gpuOK is false when no GPU series can belong to the scope
// (no join label, or a model without known instances), in which case GPU
// metrics must not be queried at all, since an empty matcher would select
// every GPU.
func selectors(scope metrics.Scope, instanceLabel string, instances []string, join GPUJoin, namespaces []string) (sel metrics.Selectors, gpuOK bool) {
	eng := []string{"model_name=" + quote(scope.Model)}
	sel.InstanceLabel = instanceLabel
	sel.Model, sel.Instance = scope.Model, scope.Instance
	gl := join.InstanceLabel
	if scope.Instance != "" {
		eng = append(eng, instanceLabel+"="+quote(scope.Instance))
		if gl != "" {
			sel.GPU = gl + "=" + quote(scope.Instance)
			gpuOK = true
		}
	} else if len(instances) > 0 && gl != "" {
		sel.GPU = gl + "=~" + quote(alternation(instances))
		gpuOK = true
	}
	if gpuOK && join.NamespaceLabel != "" && len(namespaces) > 0 {
		sel.GPU += "," + join.NamespaceLabel + "=~" + quote(alternation(namespaces))
	}
	sel.Engine = strings.Join(eng, ",")
	return sel, gpuOK
}

// alternation is a regular expression matching exactly the given values.
func alternation(vals []string) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(parts, "|")
}

// quote renders s as a PromQL string literal. PromQL strings follow Go's
// escaping rules, so strconv.Quote is exact, including for quotes,
// backslashes and non-printable bytes.
func quote(s string) string { return strconv.Quote(s) }
