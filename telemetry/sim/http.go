package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// maxFaultBody bounds a POST /faults body.
const maxFaultBody = 4 << 10

// Handler serves the engine, GPU and gateway /metrics endpoints, each
// engine's OpenAI-compatible /engines/<pod>/v1/models, /targets (JSON),
// /faults (GET lists, POST injects, DELETE clears all or ?id=) and
// /prometheus.yml (a scrape configuration for this server; ?labels=
// kubernetes for the labels a ServiceMonitor gives).
func (c *Cluster) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /engines/{pod}/v1/models", c.serveModels)
	mux.HandleFunc("GET /targets", c.serveTargets)
	mux.HandleFunc("GET /faults", c.serveFaultList)
	mux.HandleFunc("POST /faults", c.serveFaultInject)
	mux.HandleFunc("DELETE /faults", c.serveFaultClear)
	mux.HandleFunc("GET /prometheus.yml", c.servePrometheusConfig)
	mux.HandleFunc("GET /", c.serveMetrics)
	return mux
}

func (c *Cluster) serveMetrics(w http.ResponseWriter, r *http.Request) {
	b := pagePool.Get().(*bytes.Buffer)
	defer pagePool.Put(b)
	b.Reset()
	if !c.Render(r.URL.Path, b) {
		http.Error(w, "no such endpoint; see /targets", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// pagePool keeps the buffers pages are rendered into: a fleet's engines
// are scraped every few seconds, and growing a fresh buffer for each page
// would be most of what the process allocates.
var pagePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// modelCard is one entry of vLLM's /v1/models answer.
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      any    `json:"parent"`
	MaxModelLen int    `json:"max_model_len"`
}

// serveModels answers like vLLM's /v1/models: the served model and its
// max_model_len, the one engine limit vLLM reports outside its flags.
func (c *Cluster) serveModels(w http.ResponseWriter, r *http.Request) {
	pod := r.PathValue("pod")
	c.mu.Lock()
	var card *modelCard
	for _, m := range c.models {
		for _, in := range m.instances {
			if in.name == pod {
				card = &modelCard{ID: m.spec.Name, Object: "model", Created: c.now.Unix(), OwnedBy: "vllm",
					Root: m.spec.Name, MaxModelLen: in.cfg.MaxModelLen}
			}
		}
	}
	c.mu.Unlock()
	if card == nil {
		httpError(w, http.StatusNotFound, fmt.Sprintf("no engine %q; see /targets", pod))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelCard{*card}})
}

func (c *Cluster) serveTargets(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, c.Targets())
}

// faultJSON is the wire form of a fault.
type faultJSON struct {
	ID       string   `json:"id,omitempty"`
	Cause    string   `json:"cause"`
	Model    string   `json:"model"`
	Instance string   `json:"instance,omitempty"`
	Severity *float64 `json:"severity,omitempty"`
	Start    string   `json:"start,omitempty"`
	// Duration is a Go duration ("15m") or a number of seconds; empty or 0
	// means until cleared.
	Duration json.RawMessage `json:"duration,omitempty"`
}

func (c *Cluster) serveFaultList(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	live := c.live()
	c.mu.Unlock()
	out := make([]faultJSON, 0, len(live))
	for _, f := range live {
		sev := f.Severity
		d, _ := json.Marshal(f.Duration.String())
		if f.Duration == 0 {
			d = nil
		}
		out = append(out, faultJSON{ID: f.id, Cause: f.Cause, Model: f.Scope.Model, Instance: f.Scope.Instance,
			Severity: &sev, Start: f.Start.Format(time.RFC3339), Duration: d})
	}
	writeJSON(w, http.StatusOK, out)
}

func (c *Cluster) serveFaultInject(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFaultBody))
	if err != nil {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", maxFaultBody))
		return
	}
	f, err := parseFaultJSON(body)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	id, err := c.Inject(f)
	if err != nil {
		httpError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "sim: inject: "))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": id})
}

// parseFaultJSON decodes and checks a POST /faults body.
func parseFaultJSON(body []byte) (Fault, error) {
	var in faultJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Fault{}, fmt.Errorf("malformed fault JSON: %v", err)
	}
	if dec.More() {
		return Fault{}, errors.New("trailing data after the fault JSON object")
	}
	if in.Cause == "" {
		return Fault{}, errors.New(`"cause" is missing`)
	}
	if in.Model == "" {
		return Fault{}, errors.New(`"model" is missing`)
	}
	f := Fault{Cause: in.Cause, Scope: metrics.Scope{Model: in.Model, Instance: in.Instance}, Severity: 0.7}
	if in.Severity != nil {
		f.Severity = *in.Severity
		if math.IsNaN(f.Severity) || f.Severity < 0 || f.Severity > 1 {
			return Fault{}, fmt.Errorf(`"severity" %g is outside 0..1`, f.Severity)
		}
	}
	if in.Start != "" {
		t, err := time.Parse(time.RFC3339, in.Start)
		if err != nil {
			return Fault{}, fmt.Errorf(`"start" is not an RFC 3339 time: %v`, err)
		}
		f.Start = t
	}
	if len(in.Duration) > 0 && string(in.Duration) != "null" {
		d, err := parseDurationJSON(in.Duration)
		if err != nil {
			return Fault{}, err
		}
		f.Duration = d
	}
	return f, nil
}

func parseDurationJSON(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf(`"duration" %q is not a non-negative duration like "15m"`, s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs < 0 || secs > 365*24*3600 || math.IsNaN(secs) {
		return 0, fmt.Errorf(`"duration" must be a duration like "15m" or a number of seconds up to a year`)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func (c *Cluster) serveFaultClear(w http.ResponseWriter, r *http.Request) {
	if id := r.URL.Query().Get("id"); id != "" {
		if !c.RemoveFault(id) {
			httpError(w, http.StatusNotFound, fmt.Sprintf("no fault %q", id))
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cluster) servePrometheusConfig(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if host == "" {
		host = "127.0.0.1:9100"
	}
	style, err := ParseScrapeLabels(r.URL.Query().Get("labels"))
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/yaml; charset=utf-8")
	_, _ = io.WriteString(w, c.PrometheusConfigFor(host, style))
}

// ScrapeLabels names how a scrape configuration labels the targets.
type ScrapeLabels string

const (
	// ScrapeLabelsStatic gives every target the pod it serves and keeps
	// the exporter's own pod labels (honor_labels): GPU series' pod is the
	// engine's pod.
	ScrapeLabelsStatic ScrapeLabels = "static"
	// ScrapeLabelsKubernetes labels targets as a ServiceMonitor does with
	// dcgm-exporter's Helm chart defaults (honorLabels false): each target
	// gets its own pod and namespace, so the exporter's pod and namespace
	// labels arrive renamed exported_pod and exported_namespace, and pod
	// names the dcgm-exporter pod of the node.
	ScrapeLabelsKubernetes ScrapeLabels = "kubernetes"
)

// ParseScrapeLabels reads a ScrapeLabels name; empty means static.
func ParseScrapeLabels(s string) (ScrapeLabels, error) {
	switch ScrapeLabels(s) {
	case "", ScrapeLabelsStatic:
		return ScrapeLabelsStatic, nil
	case ScrapeLabelsKubernetes:
		return ScrapeLabelsKubernetes, nil
	}
	return "", fmt.Errorf("scrape labels %q: want %q or %q", s, ScrapeLabelsStatic, ScrapeLabelsKubernetes)
}

// Namespaces of the simulated cluster's pods, as a Kubernetes scrape
// labels them.
const (
	EngineNamespace   = "inference"
	ExporterNamespace = "gpu-operator"
)

// PrometheusConfig returns a Prometheus scrape configuration for this
// cluster served at host:port, with static labels (see ScrapeLabelsStatic).
func (c *Cluster) PrometheusConfig(host string) string {
	return c.PrometheusConfigFor(host, ScrapeLabelsStatic)
}

// PrometheusConfigFor returns a Prometheus scrape configuration for this
// cluster served at host:port, labelling targets in the given style. The
// gateway's series name their upstream pod themselves.
func (c *Cluster) PrometheusConfigFor(host string, style ScrapeLabels) string {
	var b strings.Builder
	b.WriteString("# Scrape configuration for the Casebook simulated cluster.\nscrape_configs:\n")
	c.mu.Lock()
	jobs := c.scrapeJobs(style)
	c.mu.Unlock()
	for _, j := range jobs {
		fmt.Fprintf(&b, "  - job_name: %s\n    scrape_interval: 5s\n", j.name)
		if j.honor {
			b.WriteString("    honor_labels: true\n")
		}
		b.WriteString("    static_configs:\n")
		for _, t := range j.targets {
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels:\n          __metrics_path__: %q\n", host, t.path)
			for _, l := range t.labels {
				fmt.Fprintf(&b, "          %s: %q\n", l.Name, l.Value)
			}
		}
	}
	return b.String()
}

// scrapeJob is one job of the scrape configuration: its targets' paths
// and labels, and whether the scraped labels win a collision with them.
type scrapeJob struct {
	name    string
	honor   bool
	targets []scrapeTarget
}

type scrapeTarget struct {
	path   string
	labels []Label
}

// scrapeJobs lays out the scrape configuration of the given style: the
// engines, the exporters and the gateway. The caller holds c.mu.
func (c *Cluster) scrapeJobs(style ScrapeLabels) []scrapeJob {
	var eng, gpu []scrapeTarget
	for _, m := range c.models {
		for _, in := range m.instances {
			et := scrapeTarget{path: "/engines/" + in.name + "/metrics", labels: []Label{{"pod", in.name}}}
			gt := scrapeTarget{path: "/gpus/" + in.name + "/metrics", labels: []Label{{"pod", in.name}}}
			if style == ScrapeLabelsKubernetes {
				et.labels = append(et.labels, Label{"namespace", EngineNamespace})
				gt.labels = []Label{{"pod", "dcgm-exporter-" + in.host}, {"namespace", ExporterNamespace}, {"container", "exporter"}}
			}
			eng = append(eng, et)
			gpu = append(gpu, gt)
		}
	}
	// With static labels the exporter's series keep their native pod
	// (honor_labels) and the target label keeps each exporter's up series
	// apart; a ServiceMonitor does not honour them.
	return []scrapeJob{
		{name: "vllm", targets: eng},
		{name: "dcgm-exporter", honor: style == ScrapeLabelsStatic, targets: gpu},
		{name: "gateway", honor: true, targets: []scrapeTarget{{path: GatewayPath}}},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// ParseFaultSpec parses the command-line form cause[:model[/instance]][:severity].
// The model may be its served name or its pod prefix; the severity
// defaults to 0.7. Without a model the fault applies to the first model.
func ParseFaultSpec(spec string, models []string) (Fault, error) {
	parts := strings.Split(spec, ":")
	if len(parts) > 3 || parts[0] == "" {
		return Fault{}, fmt.Errorf("fault %q: want cause[:model[/instance]][:severity]", spec)
	}
	f := Fault{Cause: parts[0], Severity: 0.7}
	rest := parts[1:]
	if n := len(rest); n > 0 {
		if sev, err := strconv.ParseFloat(rest[n-1], 64); err == nil {
			if sev < 0 || sev > 1 || math.IsNaN(sev) {
				return Fault{}, fmt.Errorf("fault %q: severity %g is outside 0..1", spec, sev)
			}
			f.Severity = sev
			rest = rest[:n-1]
		} else if n == 2 {
			return Fault{}, fmt.Errorf("fault %q: severity %q is not a number", spec, rest[n-1])
		}
	}
	if len(rest) == 1 && rest[0] != "" {
		model, inst, _ := strings.Cut(rest[0], "/")
		f.Scope = metrics.Scope{Model: model, Instance: inst}
	} else if len(models) > 0 {
		f.Scope.Model = models[0]
	}
	return f, nil
}
