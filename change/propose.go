package change

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

// Errors Propose returns when it cannot give a concrete value.
var (
	// ErrNoKnob means the action is an operational step, not a setting.
	ErrNoKnob = errors.New("change: the action changes no knob")
	// ErrNeedCurrent means the rule is relative and the current value is
	// unknown: ask for it.
	ErrNeedCurrent = errors.New("change: the current value is unknown")
	// ErrNeedValue means the rule names no computable value (for example
	// "the p99 of real prompt length"): ask for the proposed value.
	ErrNeedValue = errors.New("change: the rule gives no value to compute")
)

// Proposal is the concrete change one action makes to one knob.
type Proposal struct {
	Knob     string `json:"knob"`
	Flag     string `json:"flag,omitempty"`
	HelmPath string `json:"helm_path"` // "" without a chart preset, or when the chart has no path for the knob
	Current  string `json:"current"`   // "" when unknown
	Proposed string `json:"proposed"`  // in the knob's format
	Rule     string `json:"rule"`      // the action's rule, as written
	Reason   string `json:"reason"`    // how the value was reached
	// Engine is the engine whose flags the change is written in; empty
	// means vLLM. Flag is then that engine's (see Knob.ForEngine).
	Engine metrics.Engine `json:"engine,omitempty"`
}

// ForEngine writes the proposal in engine e's terms: its flag for the
// knob. It fails, saying why, when e has no equivalent of the knob.
func (p Proposal) ForEngine(e metrics.Engine) (Proposal, error) {
	k, ok := LookupKnob(p.Knob)
	if !ok {
		return p, fmt.Errorf("change: unknown knob %q", p.Knob)
	}
	ek, has, note := k.ForEngine(e)
	if !has {
		return p, fmt.Errorf("change: %s has no equivalent of %s: %s", metrics.EngineName(e), p.Knob, note)
	}
	p.Engine, p.Flag = e, ek.Flag
	if e == metrics.EngineVLLM {
		p.Engine = ""
	}
	return p, nil
}

// Propose computes the concrete value of an action's rule. current maps
// knob ids to their current values (from Current or a configuration
// file); observed holds the incident's snapshot values, which rules like
// "running_seqs x 0.75" read. A relative rule without a current value
// returns ErrNeedCurrent; override, when not empty, is the value the user
// entered and wins over the rule.
func Propose(a diagnose.Action, current map[string]string, observed metrics.Values, override string) (Proposal, error) {
	return ProposeIn("", a, current, observed, override)
}

// ProposeIn is Propose with the value's reason in lang ("zh-CN"; English
// otherwise).
func ProposeIn(lang string, a diagnose.Action, current map[string]string, observed metrics.Values, override string) (Proposal, error) {
	l := locale(lang)
	if a.Knob == "" {
		return Proposal{}, ErrNoKnob
	}
	k, ok := LookupKnob(a.Knob)
	if !ok {
		return Proposal{}, fmt.Errorf("change: propose %s: unknown knob %q", a.ID, a.Knob)
	}
	p := Proposal{Knob: k.Name, Flag: k.Flag, Rule: a.Proposed}
	cur, haveCur := math.NaN(), false
	if s, ok := current[k.Name]; ok && strings.TrimSpace(s) != "" {
		x, err := k.Parse(s)
		if err != nil {
			return p, fmt.Errorf("change: propose %s: current value: %w", a.ID, err)
		}
		cur, haveCur = x, true
		p.Current = k.Format(x)
	}
	if strings.TrimSpace(override) != "" {
		x, err := k.Parse(override)
		if err != nil {
			return p, fmt.Errorf("change: propose %s: %w", a.ID, err)
		}
		p.Proposed, p.Reason = k.Format(x), l.T("cr.reason_hand")
		return p, nil
	}
	x, reason, err := evalRule(l, k, a.Proposed, cur, haveCur, observed)
	if err != nil {
		return p, fmt.Errorf("change: propose %s: %w", a.ID, err)
	}
	p.Proposed, p.Reason = k.Format(x), reason
	if haveCur && p.Proposed == p.Current {
		p.Reason += l.T("cr.reason_at_limit")
	}
	return p, nil
}

// evalRule reads one rule of the small grammar the action tables use:
//
//	0.95 | true            a literal value
//	current x F            the current value times F ("x2", "double")
//	current + N, +N, -N    the current value plus or minus N
//	<metric id> x F        an observed metric (e.g. running_seqs) times F
//
// The result is clamped to the knob's range and rounded to its type.
func evalRule(l *i18n.Locale, k Knob, rule string, cur float64, haveCur bool, observed metrics.Values) (float64, string, error) {
	r := strings.TrimSpace(rule)
	if r == "" {
		return 0, "", ErrNeedValue
	}
	relative := strings.HasPrefix(r, "+") || strings.HasPrefix(r, "-")
	if x, err := k.Parse(r); err == nil && !relative {
		return x, l.T("cr.reason_fixed", k.Format(x)), nil
	}
	if k.Type == TypeBool {
		return 0, "", fmt.Errorf("%w: %q", ErrNeedValue, rule)
	}
	fields := strings.Fields(strings.ToLower(r))
	switch {
	case r == "double":
		fields = []string{"current", "x", "2"}
	case r == "half":
		fields = []string{"current", "x", "0.5"}
	case relative:
		fields = []string{"current", r[:1], strings.TrimSpace(r[1:])}
	}
	if len(fields) != 3 {
		return 0, "", fmt.Errorf("%w: %q", ErrNeedValue, rule)
	}
	base, op, arg := fields[0], fields[1], fields[2]
	f, err := strconv.ParseFloat(arg, 64)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %q", ErrNeedValue, rule)
	}
	var x0 float64
	var what string
	switch {
	case base == "current":
		if !haveCur {
			return 0, "", ErrNeedCurrent
		}
		x0, what = cur, l.T("cr.reason_current", k.Format(cur))
	default:
		if _, ok := metrics.Lookup(base); !ok {
			return 0, "", fmt.Errorf("%w: %q", ErrNeedValue, rule)
		}
		v, ok := observed[base]
		if !ok || math.IsNaN(v) {
			return 0, "", fmt.Errorf("%w: the incident has no %s reading", ErrNeedValue, base)
		}
		x0, what = v, l.T("cr.reason_observed", base, fmt.Sprintf("%.4g", v))
	}
	var x float64
	switch op {
	case "x", "*":
		x = x0 * f
	case "+":
		x = x0 + f
	case "-":
		x = x0 - f
	default:
		return 0, "", fmt.Errorf("%w: %q", ErrNeedValue, rule)
	}
	y := k.clamp(x)
	reason := l.T("cr.reason_rule", what, op, arg, k.Format(y))
	if y != k.clamp(math.Round(x*1e6)/1e6) || x < k.Min || x > k.Max {
		reason = l.T("cr.reason_clamped", what, op, arg, k.Format(k.Min), k.Format(k.Max), k.Format(y))
	}
	return y, reason, nil
}

// Current reads knob values from engine info labels (vLLM's
// vllm:cache_config_info labels, or any map of knob id to value). Python
// booleans ("True") are accepted; labels that are not knobs are ignored.
func Current(labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range Knobs {
		if v, ok := labels[k.Name]; ok && v != "" {
			out[k.Name] = v
		}
	}
	return out
}

// maxConfigBytes bounds a configuration file.
const maxConfigBytes = 1 << 20

// ParseConfig reads the engine configuration a user points at: either a
// JSON object of knob ids (or vLLM's dashed names) to values, or a vLLM
// argument list ("--max-num-seqs 256 --enable-prefix-caching", one per
// line or on one line).
func ParseConfig(data []byte) (map[string]string, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("change: parse config: %d bytes is over the %d-byte limit", len(data), maxConfigBytes)
	}
	s := strings.TrimSpace(string(data))
	out := map[string]string{}
	if strings.HasPrefix(s, "{") {
		var raw map[string]any
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return nil, fmt.Errorf("change: parse config: %w", err)
		}
		for name, v := range raw {
			name = strings.ReplaceAll(name, "-", "_")
			if obj, ok := v.(map[string]any); ok {
				// A JSON-valued flag such as speculative_config.
				for _, k := range Knobs {
					if k.ConfigKey != "" && strings.ReplaceAll(strings.TrimPrefix(k.Flag, "--"), "-", "_") == name && obj[k.ConfigKey] != nil {
						out[k.Name] = fmt.Sprint(obj[k.ConfigKey])
					}
				}
				continue
			}
			k, ok := LookupKnob(name)
			if !ok {
				continue
			}
			out[k.Name] = fmt.Sprint(v)
		}
		return out, nil
	}
	args := strings.Fields(s)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			continue
		}
		if k, ok := jsonFlagKnob(a); ok {
			val, next, err := jsonFlagValue(args, i, k)
			if err != nil {
				return nil, fmt.Errorf("change: parse config: %w", err)
			}
			if val != "" {
				out[k.Name] = val
			}
			i = next
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		neg := false
		if strings.HasPrefix(name, "no-") {
			name, neg = strings.TrimPrefix(name, "no-"), true
		}
		k, ok := LookupKnob(strings.ReplaceAll(name, "-", "_"))
		if !ok {
			continue
		}
		switch {
		case k.Type == TypeBool && !hasVal:
			val = strconv.FormatBool(!neg)
		case !hasVal:
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return nil, fmt.Errorf("change: parse config: %s has no value", a)
			}
			i++
			val = args[i]
		}
		if _, err := k.Parse(val); err != nil {
			return nil, fmt.Errorf("change: parse config: %w", err)
		}
		out[k.Name] = val
	}
	return out, nil
}

// jsonFlagKnob returns the knob a JSON-valued flag argument sets
// ("--speculative-config" or "--speculative-config=...").
func jsonFlagKnob(arg string) (Knob, bool) {
	flag, _, _ := strings.Cut(arg, "=")
	for _, k := range Knobs {
		if k.ConfigKey != "" && k.Flag == flag {
			return k, true
		}
	}
	return Knob{}, false
}

// jsonFlagValue reads the JSON object of a JSON-valued flag starting at
// args[i] (its words rejoined, shell quotes stripped) and returns the
// knob's value in it ("" when the object does not set it) and the index of
// the object's last word.
func jsonFlagValue(args []string, i int, k Knob) (string, int, error) {
	_, first, inline := strings.Cut(args[i], "=")
	words := []string{first}
	j := i
	if !inline {
		j++
		if j >= len(args) {
			return "", i, fmt.Errorf("%s has no value", k.Flag)
		}
		words = []string{args[j]}
	}
	text := strings.Join(words, " ")
	for strings.Count(text, "{") > strings.Count(text, "}") && j+1 < len(args) {
		j++
		text += " " + args[j]
	}
	text = strings.Trim(text, `'"`)
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		return "", j, fmt.Errorf("%s: %q is not a JSON object: %v", k.Flag, text, err)
	}
	v, ok := obj[k.ConfigKey]
	if !ok {
		return "", j, nil
	}
	val := fmt.Sprint(v)
	if _, err := k.Parse(val); err != nil {
		return "", j, err
	}
	return val, j, nil
}
