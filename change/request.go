package change

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// Request is a change request document: what to change, why, what it is
// expected to do, what can go wrong, how to undo it and when to deploy
// it. Its JSON is what the webhook sends and what the .json page serves.
type Request struct {
	// ID is a random id, stable for the request's life; the webhook sends
	// it as the Idempotency-Key.
	ID string `json:"id"`
	// Lang is the language of the document's human texts ("zh-CN");
	// empty for English. Ids, knobs and field names are never translated.
	Lang        string        `json:"lang,omitempty"`
	IncidentID  int64         `json:"incident_id"`
	IncidentURL string        `json:"incident_url"`
	CreatedAt   time.Time     `json:"created_at"`
	CreatedBy   string        `json:"created_by,omitempty"`
	Title       string        `json:"title"`
	Scope       metrics.Scope `json:"scope"`
	Diagnosis   Diagnosis     `json:"diagnosis"`
	Action      Action        `json:"action"`
	// Change is the configuration change; nil for an operational step.
	Change *Proposal `json:"change,omitempty"`
	// VLLMArgs is the change as an argument diff of the scope's engine
	// (vLLM's, or Proposal.Engine's; "-" before, "+"
	// after lines); empty for a knob without a flag.
	VLLMArgs string `json:"vllm_args_diff,omitempty"`
	// HelmValues is the change as a Helm values fragment (YAML).
	HelmValues string           `json:"helm_values,omitempty"`
	Effects    []ExpectedEffect `json:"expected_effects"`
	Risk       string           `json:"risk"`
	Rollback   string           `json:"rollback"`
	// Window is the next deployment window; nil when none is configured.
	Window *Window `json:"deploy_window,omitempty"`
	// Capacity is the idle-GPU check behind scale-out advice; nil for
	// other actions or when no GPU data was available.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Alternatives are the diagnosis's in-place actions, suggested first
	// when the capacity check found no room to scale out.
	Alternatives []string `json:"in_place_alternatives,omitempty"`
}

// Diagnosis is the part of the diagnosis a change request carries.
type Diagnosis struct {
	RootCause  string   `json:"root_cause"`
	Title      string   `json:"title"`
	Confidence float64  `json:"confidence"`
	Severity   string   `json:"severity"`
	Evidence   []string `json:"evidence,omitempty"`
}

// Action is the part of the action a change request carries.
type Action struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Why   string `json:"why"`
}

// ExpectedEffect is one metric the change is expected to move.
type ExpectedEffect struct {
	Metric    string `json:"metric"`
	Name      string `json:"name"`
	Dimension string `json:"dimension"`
	Direction string `json:"direction"`
	Size      string `json:"size"`
}

// BuildInput is what Build needs. Proposal is required for an action
// with a knob (see Propose).
type BuildInput struct {
	IncidentID  int64
	IncidentURL string
	Title       string // the incident's title
	Scope       metrics.Scope
	Diagnosis   diagnose.Diagnosis
	Action      diagnose.Action
	Proposal    *Proposal
	Schedule    *Schedule // nil: no deployment window
	Capacity    *Capacity
	// Chart is the deployment chart whose values the request also shows
	// the change in; the zero chart shows vLLM arguments only.
	Chart HelmChart
	By    string
	Now   time.Time
	// Lang is the language the document is written in ("zh-CN"); empty
	// or any other value writes English.
	Lang string
}

func mustKnob(name string) Knob {
	k, _ := LookupKnob(name)
	return k
}

// Build assembles a change request.
func Build(in BuildInput) (Request, error) {
	if in.Action.ID == "" {
		return Request{}, errors.New("change: build: the action has no id")
	}
	if in.Action.Knob != "" && in.Proposal == nil {
		return Request{}, fmt.Errorf("change: build %s: the action changes %s but no value was proposed", in.Action.ID, in.Action.Knob)
	}
	lang, l := "", locale(in.Lang)
	if l.IsChinese() {
		lang = diagnose.LangZH
		in.Diagnosis = diagnose.Localize(in.Diagnosis, lang)
		in.Action = diagnose.ActionIn(lang, in.Diagnosis.RootCause, in.Action)
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Request{}, fmt.Errorf("change: build: id: %w", err)
	}
	r := Request{
		ID: "cr-" + hex.EncodeToString(b[:]), IncidentID: in.IncidentID, IncidentURL: in.IncidentURL,
		CreatedAt: in.Now.UTC(), CreatedBy: in.By, Scope: in.Scope, Lang: lang,
		Diagnosis: Diagnosis{RootCause: in.Diagnosis.RootCause, Title: in.Diagnosis.Title,
			Confidence: in.Diagnosis.Confidence, Severity: string(in.Diagnosis.Severity)},
		Action:   Action{ID: in.Action.ID, Title: in.Action.Title, Why: in.Action.Why},
		Risk:     in.Action.Risk,
		Rollback: in.Action.Rollback,
		Capacity: in.Capacity,
	}
	for i, e := range in.Diagnosis.Evidence {
		if i == 5 {
			break
		}
		r.Diagnosis.Evidence = append(r.Diagnosis.Evidence, e.Text)
	}
	for _, e := range in.Action.Effects {
		mt, _ := metrics.Lookup(e.Metric)
		name, size := e.Metric, e.Size
		if lang != "" {
			name, size = diagnose.MetricLabelIn(lang, e.Metric), diagnose.EffectSizeIn(lang, e.Size)
		}
		r.Effects = append(r.Effects, ExpectedEffect{Metric: e.Metric, Name: name, Dimension: string(mt.Dimension), Direction: e.Direction, Size: size})
	}
	if in.Capacity != nil && in.Capacity.Replicas == 0 {
		for _, a := range in.Diagnosis.Actions {
			if a.ID != in.Action.ID && !ScaleOut(a) {
				r.Alternatives = append(r.Alternatives, a.Title)
			}
		}
	}
	r.Title = in.Action.Title
	if in.Proposal != nil {
		p := *in.Proposal
		r.Change = &p
		r.VLLMArgs = argDiff(p)
		if path, _ := helmPath(mustKnob(p.Knob), in.Chart); path != "" {
			r.Change.HelmPath = path
		}
		r.HelmValues = helmFragment(p, in.Chart, in.Scope.Model)
		from := p.Current
		if from == "" {
			from = "?"
		}
		r.Title = l.T("cr.doc_title", in.Action.Title, p.Knob, from, p.Proposed)
	}
	if in.Scope.Model != "" {
		r.Title += l.T("cr.doc_scope", in.Scope.String())
	}
	if in.Schedule != nil {
		if w, ok := in.Schedule.Next(in.Now); ok {
			r.Window = &w
		}
	}
	return r, nil
}

// flagValue renders one knob value as the vLLM arguments that set it.
func flagValue(k Knob, v string) string {
	if k.ConfigKey != "" {
		return k.Flag + " '{\"" + k.ConfigKey + "\": " + v + "}'"
	}
	if k.Type == TypeBool {
		on := true
		if x, err := k.Parse(v); err == nil && x == 0 {
			on = false
		}
		switch {
		case inverted(k.Flag) && on:
			return "(without " + k.Flag + ")"
		case inverted(k.Flag):
			return k.Flag
		case !on:
			return "--no-" + strings.TrimPrefix(k.Flag, "--")
		}
		return k.Flag
	}
	return k.Flag + " " + v
}

func argDiff(p Proposal) string {
	k, ok := LookupKnob(p.Knob)
	if ok {
		k, ok, _ = k.ForEngine(p.Engine)
	}
	if !ok || k.Flag == "" {
		return ""
	}
	var b strings.Builder
	if p.Current != "" {
		b.WriteString("- " + flagValue(k, p.Current) + "\n")
	} else {
		b.WriteString("- " + k.Flag + " <current value unknown>\n")
	}
	b.WriteString("+ " + flagValue(k, p.Proposed) + "\n")
	return b.String()
}

// argItem is one knob value as a single container argument (no shell
// quoting: Kubernetes passes it to vLLM as is).
func argItem(k Knob, v string) string {
	switch {
	case k.ConfigKey != "":
		return k.Flag + `={"` + k.ConfigKey + `": ` + v + "}"
	case k.Type == TypeBool:
		return flagValue(k, v)
	}
	return k.Flag + "=" + v
}

// helmPath is where a chart sets a knob: its own values path, else the
// chart's argument list (isArgs true); "" when the chart has neither.
func helmPath(k Knob, c HelmChart) (path string, isArgs bool) {
	if p := c.Values[k.Name]; p != "" {
		return p, false
	}
	if k.Flag != "" && c.Args != "" {
		return c.Args, true
	}
	return "", false
}

// helmFragment writes the change as nested YAML keys along the chart's
// values path for the knob, with the previous value as a comment; a knob
// the chart sets through the engine's argument list becomes a list item.
// model replaces MODEL in list selectors. Without a chart it is empty.
func helmFragment(p Proposal, c HelmChart, model string) string {
	k, ok := LookupKnob(p.Knob)
	if !ok {
		return ""
	}
	path, isArgs := helmPath(k, c)
	if path == "" {
		return ""
	}
	var b strings.Builder
	depth := 0
	keys := strings.Split(path, ".")
	for i, key := range keys {
		ind := strings.Repeat("  ", depth)
		name, sel, isList := strings.Cut(strings.TrimSuffix(key, "]"), "[")
		b.WriteString(ind + name + ":")
		if isList {
			sk, sv, _ := strings.Cut(sel, "=")
			sv = strings.ReplaceAll(sv, "MODEL", model)
			b.WriteString("\n" + ind + "  - " + sk + ": " + sv)
			depth += 2
			if i < len(keys)-1 {
				b.WriteString("\n")
			}
			continue
		}
		depth++
		if i < len(keys)-1 {
			b.WriteString("\n")
		}
	}
	if isArgs {
		b.WriteString("\n" + strings.Repeat("  ", depth) + "- " + strconv.Quote(argItem(k, p.Proposed)) + "  # merge into the list")
		if p.Current != "" {
			b.WriteString("; replaces " + argItem(k, p.Current))
		}
		b.WriteString("\n")
		return b.String()
	}
	b.WriteString(" " + p.Proposed)
	if p.Current != "" {
		b.WriteString("  # was " + p.Current)
	}
	b.WriteString("\n")
	return b.String()
}

// JSON is the request's JSON document, indented.
func (r Request) JSON() ([]byte, error) {
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("change: json: %w", err)
	}
	return append(out, '\n'), nil
}

// DecodeRequest reads a request's JSON document, as JSON wrote it.
func DecodeRequest(doc []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(doc, &r); err != nil {
		return Request{}, fmt.Errorf("change: decode request: %w", err)
	}
	return r, nil
}
