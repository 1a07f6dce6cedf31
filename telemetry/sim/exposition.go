package sim

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

type pageKind int

const (
	pageEngine  pageKind = iota // vLLM /metrics
	pageGPU                     // dcgm-exporter /metrics
	pageGateway                 // the gateway's /metrics
)

// page is one /metrics document: the series layout, built once, and the
// latest values in layout order.
type page struct {
	kind pageKind
	// scraped is how many leading labels of each series the page itself
	// exposes; the rest are the target labels Sample adds.
	scraped []int
	fams    []family
	keys    []string
	labels  [][]Label
	texts   []string // name{labels} as exposed
	vals    []float64
}

type family struct {
	name, help, typ string
	first, n        int
}

// walker visits every series of a page in a fixed order. In build mode it
// records the layout; otherwise it only stores values.
type walker struct {
	p      *page
	build  bool
	target []Label // target labels added to Sample labels, not to the text
	i      int
}

func (w *walker) family(name, help, typ string) {
	if w.build {
		w.p.fams = append(w.p.fams, family{name: name, help: help, typ: typ, first: len(w.p.texts)})
	}
}

func (w *walker) add(name string, v float64, kv ...string) {
	if w.build {
		ls := make([]Label, 0, 1+len(kv)/2+len(w.target))
		ls = append(ls, Label{"__name__", name})
		var b strings.Builder
		b.WriteString(name)
		if len(kv) > 0 {
			b.WriteByte('{')
			for j := 0; j+1 < len(kv); j += 2 {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(kv[j])
				b.WriteString(`="`)
				b.WriteString(escapeLabel(kv[j+1]))
				b.WriteByte('"')
				ls = append(ls, Label{kv[j], kv[j+1]})
			}
			b.WriteByte('}')
		}
		w.p.scraped = append(w.p.scraped, len(ls))
		ls = append(ls, w.target...)
		text := b.String()
		key := text
		for _, l := range w.target {
			key = l.Name + "=" + l.Value + "|" + key
		}
		w.p.texts = append(w.p.texts, text)
		w.p.labels = append(w.p.labels, ls)
		w.p.keys = append(w.p.keys, key)
		w.p.fams[len(w.p.fams)-1].n++
		w.p.vals = append(w.p.vals, v)
		return
	}
	w.p.vals[w.i] = v
	w.i++
}

func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// page returns the instance's page of the given kind with current values;
// fields selects the GPU page's counter set.
func (in *instance) page(kind pageKind, fields DCGMFields) *page {
	p := in.layouts[kind]
	w := &walker{p: p}
	if p == nil {
		p = &page{kind: kind}
		in.layouts[kind] = p
		w = &walker{p: p, build: true}
		if kind == pageEngine {
			w.target = []Label{{"pod", in.name}}
		}
	}
	if kind == pageEngine {
		in.walkEngine(w)
	} else {
		in.walkGPU(w, fields)
	}
	return p
}

func (p *page) emit(t time.Time, emit func(Sample) error) error {
	for i, v := range p.vals {
		if err := emit(Sample{Key: p.keys[i], Labels: p.labels[i], T: t, V: v}); err != nil {
			return err
		}
	}
	return nil
}

// render writes the page in the Prometheus text format, formatting values
// the way the real exporter does.
func (p *page) render(b *bytes.Buffer) {
	format := pyFloat
	if p.kind != pageEngine {
		format = goFloat
	}
	for _, f := range p.fams {
		b.WriteString("# HELP ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(f.help)
		b.WriteString("\n# TYPE ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(f.typ)
		b.WriteByte('\n')
		for i := f.first; i < f.first+f.n; i++ {
			b.WriteString(p.texts[i])
			b.WriteByte(' ')
			if p.kind == pageGPU {
				b.WriteString(dcgmValue(f.name, p.vals[i]))
			} else {
				b.WriteString(format(p.vals[i]))
			}
			b.WriteByte('\n')
		}
	}
}

// pyFloat formats like Python prometheus_client's floatToGoString.
func pyFloat(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	case math.IsNaN(d):
		return "NaN"
	}
	var s string
	a := math.Abs(d)
	switch {
	case d == math.Trunc(d) && a < 1e16:
		s = strconv.FormatFloat(d, 'f', -1, 64) + ".0"
	case a >= 1e-4 && a < 1e16:
		s = strconv.FormatFloat(d, 'f', -1, 64)
	default:
		s = strconv.FormatFloat(d, 'e', -1, 64)
	}
	if dot := strings.IndexByte(s, '.'); d > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mant + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// goFloat formats like client_golang's text exposition.
func goFloat(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(d, 'g', -1, 64)
}

// dcgmIntFields are the int64 DCGM fields; the rest are doubles printed
// with %f.
var dcgmIntFields = map[string]bool{
	"DCGM_FI_DEV_SM_CLOCK": true, "DCGM_FI_DEV_MEM_CLOCK": true, "DCGM_FI_DEV_MEMORY_TEMP": true,
	"DCGM_FI_DEV_GPU_TEMP": true, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": true,
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": true, "DCGM_FI_DEV_GPU_UTIL": true, "DCGM_FI_DEV_MEM_COPY_UTIL": true,
	"DCGM_FI_DEV_ENC_UTIL": true, "DCGM_FI_DEV_DEC_UTIL": true, "DCGM_FI_DEV_XID_ERRORS": true,
	"DCGM_FI_DEV_FB_FREE": true, "DCGM_FI_DEV_FB_USED": true, "DCGM_FI_DEV_FB_RESERVED": true,
	"DCGM_FI_PROF_PCIE_TX_BYTES": true, "DCGM_FI_PROF_PCIE_RX_BYTES": true,
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS": true,
}

// dcgmExposed rounds a value the way its exposition prints it, so that
// back-filled samples equal scraped ones.
func dcgmExposed(name string, v float64) float64 {
	if dcgmIntFields[name] {
		return math.Trunc(v)
	}
	return math.Round(v*1e6) / 1e6
}

func dcgmValue(name string, v float64) string {
	if dcgmIntFields[name] {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

type histFamily struct {
	name, help           string
	bucket, count, total string // series names
	h                    *histogram
}

func (in *instance) histFamilies() []histFamily {
	h := in.hist
	fams := []histFamily{
		{name: "vllm:request_prompt_tokens", help: "Number of prefill tokens processed.", h: h.prompt},
		{name: "vllm:request_generation_tokens", help: "Number of generation tokens processed.", h: h.generation},
		{name: "vllm:iteration_tokens_total", help: "Histogram of number of tokens per engine_step.", h: h.iteration},
		{name: "vllm:time_to_first_token_seconds", help: "Histogram of time to first token in seconds.", h: h.ttft},
		{name: "vllm:inter_token_latency_seconds", help: "Histogram of inter-token latency in seconds.", h: h.itl},
		{name: "vllm:request_time_per_output_token_seconds", help: "Histogram of time_per_output_token_seconds per request.", h: h.tpot},
		{name: "vllm:e2e_request_latency_seconds", help: "Histogram of e2e request latency in seconds.", h: h.e2e},
		{name: "vllm:request_queue_time_seconds", help: "Histogram of time spent in WAITING phase for request.", h: h.queue},
		{name: "vllm:request_inference_time_seconds", help: "Histogram of time spent in RUNNING phase for request.", h: h.inference},
		{name: "vllm:request_prefill_time_seconds", help: "Histogram of time spent in PREFILL phase for request.", h: h.prefill},
		{name: "vllm:request_decode_time_seconds", help: "Histogram of time spent in DECODE phase for request.", h: h.decode},
	}
	for i := range fams {
		fams[i].bucket, fams[i].count, fams[i].total = fams[i].name+"_bucket", fams[i].name+"_count", fams[i].name+"_sum"
	}
	return fams
}

func (in *instance) walkEngine(w *walker) {
	mn := in.model.spec.Name
	gauge := func(name, help string, v float64) {
		w.family(name, help, "gauge")
		w.add(name, v, "engine", "0", "model_name", mn)
	}
	counter := func(name, help string, v float64) {
		w.family(name, help, "counter")
		w.add(name, math.Floor(v), "engine", "0", "model_name", mn)
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", in.running)
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", in.waiting)
	// The simulated scheduler only ever waits for capacity: nothing is
	// deferred by LoRA budgets or KV transfers.
	w.family("vllm:num_requests_waiting_by_reason", "Number of requests waiting, by reason.", "gauge")
	w.add("vllm:num_requests_waiting_by_reason", in.waiting, "engine", "0", "model_name", mn, "reason", "capacity")
	w.add("vllm:num_requests_waiting_by_reason", 0, "engine", "0", "model_name", mn, "reason", "deferred")
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", math.Round(in.kvUsage*1e6)/1e6)
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", in.cnt.preemptions)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", in.cnt.prompt)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", in.cnt.generation)
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", in.cnt.prefixQueries)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", in.cnt.prefixHits)
	counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", in.cnt.prefixHits)
	w.family("vllm:request_success_total", "Count of successfully processed requests.", "counter")
	for i, r := range finishReasons {
		w.add("vllm:request_success_total", math.Floor(in.cnt.success[i]), "engine", "0", "finished_reason", r, "model_name", mn)
	}
	// The API server's HTTP counter (prometheus_fastapi_instrumentator,
	// status codes grouped): an engine error answers 5xx, and so does the
	// API server itself while the engine core is down; every other
	// finished request, client aborts included (a stream's 200 was
	// already sent), 2xx. It carries no model_name or engine label.
	w.family("http_requests_total", "Total number of requests by method, status and handler.", "counter")
	ok := in.cnt.success[0] + in.cnt.success[1] + in.cnt.success[2] + in.cnt.success[4]
	w.add("http_requests_total", math.Floor(ok), "handler", "/v1/chat/completions", "method", "POST", "status", "2xx")
	w.add("http_requests_total", math.Floor(in.cnt.success[3]+in.cnt.api5xx), "handler", "/v1/chat/completions", "method", "POST", "status", "5xx")
	if in.histFams == nil {
		in.histFams = in.histFamilies()
	}
	for _, hf := range in.histFams {
		w.family(hf.name, hf.help, "histogram")
		for i := range hf.h.bounds {
			w.add(hf.bucket, hf.h.counts[i], "engine", "0", "le", hf.h.pyLe[i], "model_name", mn)
		}
		w.add(hf.bucket, hf.h.count, "engine", "0", "le", "+Inf", "model_name", mn)
		w.add(hf.count, hf.h.count, "engine", "0", "model_name", mn)
		w.add(hf.total, hf.h.sum, "engine", "0", "model_name", mn)
	}
	w.family("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge")
	if !w.build {
		w.add("vllm:cache_config_info", 1) // labels are fixed until the next config change
	} else {
		in.addConfigInfo(w)
	}
	if in.cfg.NumSpeculativeTokens > 0 {
		counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", in.cnt.drafts)
		counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", in.cnt.draftTokens)
		counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", in.cnt.accepted)
		w.family("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "counter")
		for i, v := range in.cnt.acceptedPos {
			if w.build {
				w.add("vllm:spec_decode_num_accepted_tokens_per_pos_total", math.Floor(v), "engine", "0", "model_name", mn, "position", strconv.Itoa(i))
			} else {
				w.add("", math.Floor(v))
			}
		}
	}
}

// addConfigInfo writes vllm:cache_config_info as vLLM does: one label per
// CacheConfig field (CacheConfig.metrics_info) plus engine, and no
// model_name. Scheduler, model and parallel settings (max_num_seqs,
// max_model_len, tensor_parallel_size, ...) are not CacheConfig fields;
// vLLM does not export them, and neither does the simulator.
func (in *instance) addConfigInfo(w *walker) {
	cfg := in.cfg
	w.add("vllm:cache_config_info", 1,
		"block_size", strconv.Itoa(cfg.BlockSize),
		"cache_dtype", "auto",
		"enable_prefix_caching", pyBool(cfg.EnablePrefixCaching),
		"engine", "0",
		"gpu_memory_utilization", pyFloat(cfg.GPUMemoryUtilization),
		"is_attention_free", "False",
		"kv_sharing_fast_prefill", "False",
		"num_cpu_blocks", "None",
		"num_gpu_blocks", strconv.Itoa(numGPUBlocks(in.model.spec, cfg)),
		"num_gpu_blocks_override", "None",
		"prefix_caching_hash_algo", "sha256",
		"sliding_window", "None",
	)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// numGPUBlocks is the KV-cache size vLLM reports at start-up.
func numGPUBlocks(spec ModelSpec, cfg EngineConfig) int {
	return max(64, int(kvPoolTokens(spec, cfg))/cfg.BlockSize)
}

// gpuField is one exported dcgm-exporter field.
type gpuField struct {
	name, help, typ string
	v               func(g *gpuState) float64
}

var gpuFields = []gpuField{
	{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", func(g *gpuState) float64 { return math.Round(g.clock * H100.MaxSMClockMHz) }},
	{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge", func(*gpuState) float64 { return H100.MemClockMHz }},
	{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons (bitmask of DCGM_CLOCKS_EVENT_REASON_*).", "gauge", func(g *gpuState) float64 { return g.clockReasons }},
	{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", "gauge", func(g *gpuState) float64 { return math.Round(g.memTempC) }},
	{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", func(g *gpuState) float64 { return math.Round(g.tempC) }},
	{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", func(g *gpuState) float64 { return g.powerW }},
	{"DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).", "gauge", func(g *gpuState) float64 { return g.limitW }},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", func(g *gpuState) float64 { return math.Floor(g.energyMJ) }},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", "counter", func(*gpuState) float64 { return 0 }},
	{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", func(g *gpuState) float64 { return g.util }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", func(g *gpuState) float64 { return g.copyUtil }},
	{"DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", "gauge", func(*gpuState) float64 { return 0 }},
	{"DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", "gauge", func(*gpuState) float64 { return 0 }},
	{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", func(g *gpuState) float64 { return g.xid }},
	{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", func(g *gpuState) float64 { return g.fbFreeMiB }},
	{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", func(g *gpuState) float64 { return g.fbUsedMiB }},
	{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", "gauge", func(*gpuState) float64 { return H100.ReservedMiB }},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gauge", func(g *gpuState) float64 { return g.grActive }},
	{"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", "gauge", func(g *gpuState) float64 { return g.smActive }},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", "gauge", func(g *gpuState) float64 { return g.tensor }},
	{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", "gauge", func(g *gpuState) float64 { return g.dram }},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge", func(g *gpuState) float64 { return math.Round(g.pcieTX) }},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge", func(g *gpuState) float64 { return math.Round(g.pcieRX) }},
}

// profilingField reports whether a field is one of DCGM's profiling (DCP)
// fields, which dcgm-exporter's default counter file leaves out.
func profilingField(name string) bool { return strings.HasPrefix(name, "DCGM_FI_PROF_") }

func (in *instance) walkGPU(w *walker, fields DCGMFields) {
	host := in.host
	for _, f := range gpuFields {
		if fields == DCGMDefault && profilingField(f.name) {
			continue
		}
		w.family(f.name, f.help, f.typ)
		for i := range in.gpus {
			g := &in.gpus[i]
			v := dcgmExposed(f.name, f.v(g))
			if !w.build {
				w.add("", v)
				continue
			}
			w.add(f.name, v,
				"gpu", strconv.Itoa(g.index), "UUID", g.uuid, "pci_bus_id", g.bus,
				"device", "nvidia"+strconv.Itoa(g.index), "modelName", H100.Name, "Hostname", host,
				"DCGM_FI_DRIVER_VERSION", H100.Driver, "container", "vllm", "namespace", "inference", "pod", in.name)
		}
	}
}

// gatewayPage builds the gateway's page: one histogram and one counter per
// upstream instance.
func (c *Cluster) gatewayPage() *page {
	p := c.gateway
	w := &walker{p: p}
	if p == nil {
		p = &page{kind: pageGateway}
		c.gateway = p
		w = &walker{p: p, build: true}
	}
	w.family("gateway_request_duration_seconds", "Request duration seen at the gateway, from request to last byte.", "histogram")
	for _, m := range c.models {
		for _, in := range m.instances {
			h := in.hist.gateway
			for i := range h.bounds {
				w.add("gateway_request_duration_seconds_bucket", h.counts[i], "le", h.goLe[i], "model_name", m.spec.Name, "pod", in.name)
			}
			w.add("gateway_request_duration_seconds_bucket", h.count, "le", "+Inf", "model_name", m.spec.Name, "pod", in.name)
			w.add("gateway_request_duration_seconds_sum", h.sum, "model_name", m.spec.Name, "pod", in.name)
			w.add("gateway_request_duration_seconds_count", h.count, "model_name", m.spec.Name, "pod", in.name)
		}
	}
	w.family("gateway_requests_total", "Requests received by the gateway.", "counter")
	for _, m := range c.models {
		for _, in := range m.instances {
			w.add("gateway_requests_total", math.Floor(in.cnt.gatewayRequests), "model_name", m.spec.Name, "pod", in.name)
		}
	}
	return p
}

// Render writes the text exposition of one endpoint path ("/engines/<pod>/metrics",
// "/gpus/<pod>/metrics" or GatewayPath) and reports whether the path exists.
func (c *Cluster) Render(path string, b *bytes.Buffer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path == GatewayPath {
		c.gatewayPage().render(b)
		return true
	}
	var kind pageKind
	var name string
	switch {
	case strings.HasPrefix(path, "/engines/") && strings.HasSuffix(path, "/metrics"):
		kind, name = pageEngine, strings.TrimSuffix(strings.TrimPrefix(path, "/engines/"), "/metrics")
	case strings.HasPrefix(path, "/gpus/") && strings.HasSuffix(path, "/metrics"):
		kind, name = pageGPU, strings.TrimSuffix(strings.TrimPrefix(path, "/gpus/"), "/metrics")
	default:
		return false
	}
	for _, m := range c.models {
		for _, in := range m.instances {
			if in.name == name {
				in.page(kind, m.dcgm).render(b)
				return true
			}
		}
	}
	return false
}
