package promrules

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/casebook/casebook/metrics"
)

// ScopeLabels are the labels a per-scope series keeps.
var ScopeLabels = []string{"model_name", "pod"}

// Options configure the generated rules; zero values take defaults.
type Options struct {
	// InstanceLabel names the label that identifies an engine instance
	// (default "pod").
	InstanceLabel string
	// ModelLabel names the label that carries the model on engines whose
	// series have no model_name (llama-server); the rules copy it into
	// model_name, so every engine records under the same names. Empty
	// means "model_name" (set by the scrape configuration).
	ModelLabel string
	// Window is the rate window of the 1-minute tier (default 2m, enough
	// for four samples at a 30 s scrape interval).
	Window time.Duration
	// Thresholds overrides the default alert thresholds by catalog id.
	Thresholds map[string]float64
	// For is how long an alert condition must hold (default 2m).
	For time.Duration
	// EvalInterval is how often the alerting rules are evaluated (default 15s).
	EvalInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.InstanceLabel == "" {
		o.InstanceLabel = "pod"
	}
	if o.Window <= 0 {
		o.Window = 2 * time.Minute
	}
	if o.For <= 0 {
		o.For = 2 * time.Minute
	}
	if o.EvalInterval <= 0 {
		o.EvalInterval = 15 * time.Second
	}
	return o
}

// File is a Prometheus rule file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is one rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording or an alerting rule.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// YAML renders the file.
func (f File) YAML() ([]byte, error) {
	out, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("promrules: render: %w", err)
	}
	return out, nil
}

// RecordName is the series name of a catalog metric in a tier, e.g.
// RecordName("ttft_ms", "avg", "1m") = "scope:ttft_ms:avg1m".
func RecordName(id, agg, tier string) string {
	return "scope:" + id + ":" + agg + tier
}

// ModelRecordName is the series name of a catalog metric aggregated over a
// whole model in a tier, e.g. "model:ttft_ms:avg1m". Only engine metrics
// have one: GPU series carry no model name, so a model's GPU values are
// aggregated at read time from its instances' scope:* series.
func ModelRecordName(id, agg, tier string) string {
	return "model:" + id + ":" + agg + tier
}

// gpuAggregation returns the aggregation operator of a GPU metric's
// expression (avg, min, max or sum): the operator that combines the
// per-instance records of a model exactly as the expression combines GPUs.
func gpuAggregation(m metrics.Metric) string {
	op, _, _ := strings.Cut(strings.TrimSpace(m.PromQL), " ")
	switch op {
	case "avg", "min", "max", "sum":
		return op
	}
	return "avg"
}

// ReadQuery is the PromQL that reads a catalog metric of one scope back
// from the recorded tier ("1m" or "1h"), averaged over each step: the
// long-range counterpart of m.Query. sel is the scope's selectors, model
// says whether the scope is a whole model, and step must be at least the
// tier's resolution.
func ReadQuery(m metrics.Metric, sel metrics.Selectors, model bool, tier string, step time.Duration) string {
	win := metrics.FormatDuration(step)
	if m.Source == metrics.SourceGPU {
		inner := "avg_over_time(" + RecordName(m.ID, "avg", tier) + "{" + sel.GPU + "}[" + win + "])"
		return gpuAggregation(m) + " (" + inner + ")"
	}
	name := RecordName(m.ID, "avg", tier)
	if model {
		name = ModelRecordName(m.ID, "avg", tier)
	}
	return "avg (avg_over_time(" + name + "{" + sel.Engine + "}[" + win + "]))"
}

func by(o Options) []string {
	return []string{"model_name", o.InstanceLabel}
}

// Recording returns the recording rules of the 1m and 1h tiers.
func Recording(opts Options) File {
	o := opts.withDefaults()
	labels := by(o)
	minute := Group{Name: "casebook-1m", Interval: "1m"}
	hour := Group{Name: "casebook-1h", Interval: "1h"}
	for _, m := range metrics.Catalog {
		expr := m.QueryBy(metrics.Selectors{InstanceLabel: o.InstanceLabel, ModelLabel: o.ModelLabel}, o.Window, labels)
		minute.Rules = append(minute.Rules, Rule{Record: RecordName(m.ID, "avg", "1m"), Expr: expr})
		if isGauge(m) {
			// Extremes inside the minute, from a 15 s subquery of the expression.
			sub := "(" + expr + ")[1m:15s]"
			minute.Rules = append(minute.Rules,
				Rule{Record: RecordName(m.ID, "min", "1m"), Expr: "min_over_time(" + sub + ")"},
				Rule{Record: RecordName(m.ID, "max", "1m"), Expr: "max_over_time(" + sub + ")"},
			)
		}
		avg := RecordName(m.ID, "avg", "1m")
		lo, hi := avg, avg
		if isGauge(m) {
			lo, hi = RecordName(m.ID, "min", "1m"), RecordName(m.ID, "max", "1m")
		}
		hour.Rules = append(hour.Rules,
			Rule{Record: RecordName(m.ID, "avg", "1h"), Expr: "avg_over_time(" + avg + "[1h])"},
			Rule{Record: RecordName(m.ID, "min", "1h"), Expr: "min_over_time(" + lo + "[1h])"},
			Rule{Record: RecordName(m.ID, "max", "1h"), Expr: "max_over_time(" + hi + "[1h])"},
		)
		if m.Source != metrics.SourceGPU {
			// Whole-model series: a model's mean latency is its total
			// time over its total requests, not a mean of instance means.
			mavg := ModelRecordName(m.ID, "avg", "1m")
			minute.Rules = append(minute.Rules, Rule{Record: mavg, Expr: m.QueryBy(metrics.Selectors{InstanceLabel: o.InstanceLabel, ModelLabel: o.ModelLabel}, o.Window, []string{"model_name"})})
			hour.Rules = append(hour.Rules, Rule{Record: ModelRecordName(m.ID, "avg", "1h"), Expr: "avg_over_time(" + mavg + "[1h])"})
		}
	}
	return File{Groups: []Group{minute, hour}}
}

// isGauge reports whether a metric is read from gauges, whose value inside a
// minute has extremes worth keeping; rate-style metrics are already means.
func isGauge(m metrics.Metric) bool {
	return !strings.Contains(m.PromQL, "rate(")
}

// Threshold is a fixed alerting threshold on one catalog metric.
type Threshold struct {
	Metric   string
	Op       string // ">" or "<"
	Value    float64
	Severity string
}

// DefaultThresholds are conservative fixed fallbacks, one per catalog
// metric, chosen from what a user would notice (seconds of TTFT, errors,
// a saturated cache, a hot GPU), not from any one deployment. Metrics whose
// healthy level depends entirely on the deployment (rates, counts, clocks)
// alert on a fall or rise relative to the same time a day earlier.
var DefaultThresholds = []Threshold{
	{metrics.GatewayE2E, ">", 30000, "warning"},
	{metrics.E2E, ">", 30000, "warning"},
	{metrics.E2EP99, ">", 60000, "warning"},
	{metrics.TTFT, ">", 2000, "warning"},
	{metrics.TTFTP99, ">", 5000, "warning"},
	{metrics.TPOT, ">", 50, "warning"},
	{metrics.TPOTP99, ">", 100, "warning"},
	{metrics.QueueTime, ">", 1000, "warning"},
	{metrics.PrefillTime, ">", 2000, "warning"},
	{metrics.DecodeTime, ">", 30000, "warning"},
	{metrics.QueueDepth, ">", 100, "warning"},
	{metrics.GPUMemUsedFrac, ">", 0.98, "warning"},
	{metrics.KVCacheUsage, ">", 0.95, "warning"},
	{metrics.DRAMActive, ">", 0.9, "info"},
	{metrics.GPUTemp, ">", 85, "warning"},
	{metrics.KVCacheHitRate, "<", 0.3, "info"},
	{metrics.RejectionRate, ">", 0.5, "warning"},
	{metrics.ErrorRate, ">", 0.05, "critical"},
	{metrics.PreemptionRate, ">", 1, "warning"},
	{metrics.SMUtil, "<", 0.3, "info"},
	{metrics.TensorActive, "<", 0.05, "info"},
}

// relativeDrop lists metrics that alert when they fall below half (or rise
// above double) their value a day earlier, for want of a universal level.
var relative = map[string]string{
	metrics.ThroughputRPS:    "<",
	metrics.GenerationTPS:    "<",
	metrics.PromptTPS:        ">",
	metrics.ArrivalRPS:       ">",
	metrics.RunningSeqs:      "<",
	metrics.MeanPromptTokens: ">",
	metrics.SMClock:          "<",
	metrics.MemClock:         "<",
	metrics.Power:            ">",
}

// Alerts returns the fixed-threshold alerting rules, one per catalog metric.
func Alerts(opts Options) (File, error) {
	o := opts.withDefaults()
	labels := by(o)
	fixed := map[string]Threshold{}
	for _, th := range DefaultThresholds {
		fixed[th.Metric] = th
	}
	for id, v := range o.Thresholds {
		th, ok := fixed[id]
		if !ok {
			m, known := metrics.Lookup(id)
			if !known {
				return File{}, fmt.Errorf("promrules: threshold for unknown metric %q", id)
			}
			th = Threshold{Metric: id, Op: ">", Severity: "warning"}
			if m.Bad == metrics.Down {
				th.Op = "<"
			}
		}
		th.Value = v
		fixed[id] = th
	}
	g := Group{Name: "casebook-fixed-thresholds", Interval: metrics.FormatDuration(o.EvalInterval)}
	for _, m := range metrics.Catalog {
		expr := m.QueryBy(metrics.Selectors{InstanceLabel: o.InstanceLabel, ModelLabel: o.ModelLabel}, o.Window, labels)
		var cond, summary string
		sev := "warning"
		if th, ok := fixed[m.ID]; ok {
			cond = "(" + expr + ") " + th.Op + " " + strconv.FormatFloat(th.Value, 'g', -1, 64)
			summary = fmt.Sprintf("%s %s %g %s", m.ID, th.Op, th.Value, m.Unit)
			sev = th.Severity
		} else if op, ok := relative[m.ID]; ok {
			factor := "0.5"
			if op == ">" {
				factor = "2"
			}
			// The day-earlier level is a 10-minute mean, so one odd minute
			// yesterday does not set today's bar.
			cond = "(" + expr + ") " + op + " " + factor + " * avg_over_time((" + expr + ")[10m:1m] offset 1d)"
			summary = fmt.Sprintf("%s %s %sx its value a day earlier", m.ID, op, factor)
		} else {
			continue
		}
		g.Rules = append(g.Rules, Rule{
			Alert: alertName(m.ID),
			Expr:  cond,
			For:   metrics.FormatDuration(o.For),
			Labels: map[string]string{
				"severity":        sev,
				"casebook_metric": m.ID,
				"dimension":       string(m.Dimension),
			},
			Annotations: map[string]string{
				"summary":     summary + " on {{ $labels.model_name }}/{{ $labels." + o.InstanceLabel + " }}",
				"description": m.Help,
			},
		})
	}
	sort.SliceStable(g.Rules, func(i, j int) bool { return g.Rules[i].Alert < g.Rules[j].Alert })
	return File{Groups: []Group{g}}, nil
}

// alertName turns "ttft_p99_ms" into "CasebookTtftP99Ms".
func alertName(id string) string {
	var b strings.Builder
	b.WriteString("Casebook")
	for _, part := range strings.Split(id, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
