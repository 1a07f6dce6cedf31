package diagnose

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	m "github.com/casebook/casebook/metrics"
)

// LangZH is the language code of the Simplified Chinese texts; any other
// code selects the English ones the engine writes.
const LangZH = "zh-CN"

// A diagnosis is computed and stored in English (its JSON is a contract);
// Localize rewrites its human texts in another language when it is shown.
// Ids, numbers and the structure stay as they are, so a localized
// diagnosis has the same evidence, actions and notes as the English one.

// Localize returns d with its title, evidence sentences, actions and
// notes in lang; d itself for English.
func Localize(d Diagnosis, lang string) Diagnosis {
	if lang != LangZH {
		return d
	}
	out := d
	if d.Title == "" || d.Title == causeTitle(d.RootCause) {
		out.Title = CauseTitleIn(lang, d.RootCause)
	}
	out.Evidence = make([]Evidence, len(d.Evidence))
	for i, e := range d.Evidence {
		e.Text = EvidenceTextIn(lang, e)
		out.Evidence[i] = e
	}
	out.Actions = make([]Action, len(d.Actions))
	for i, a := range d.Actions {
		out.Actions[i] = ActionIn(lang, d.RootCause, a)
	}
	if d.Notes != nil {
		out.Notes = make([]string, len(d.Notes))
		for i, n := range d.Notes {
			out.Notes[i] = NoteIn(lang, n)
		}
	}
	return out
}

// CauseTitleIn is a root cause's title in lang; the English title (or the
// id of a cause the taxonomy does not know) otherwise.
func CauseTitleIn(lang, id string) string {
	if lang == LangZH {
		if c, ok := zhCauses[id]; ok {
			return c.Title
		}
	}
	return causeTitle(id)
}

// CauseWhatIn is the taxonomy's explanation of a root cause in lang.
func CauseWhatIn(lang, id string) string {
	if lang == LangZH {
		if c, ok := zhCauses[id]; ok {
			return c.What
		}
	}
	if c, ok := m.LookupCause(id); ok {
		return c.What
	}
	return ""
}

// CauseSignatureIn is how a root cause typically shows in the metrics,
// in lang.
func CauseSignatureIn(lang, id string) string {
	if lang == LangZH {
		if c, ok := zhCauses[id]; ok {
			return c.Signature
		}
	}
	if c, ok := m.LookupCause(id); ok {
		return c.Signature
	}
	return ""
}

// MetricLabelIn is a catalog metric's short label in lang (the id of an
// unknown metric).
func MetricLabelIn(lang, id string) string {
	if lang == LangZH {
		if t, ok := zhMetrics[id]; ok {
			return t.Label
		}
	}
	if md, ok := m.Lookup(id); ok {
		return md.Label
	}
	return id
}

// metricNameIn is a catalog metric's full name in lang, as evidence
// sentences use it.
func metricNameIn(lang, id string) string {
	if lang == LangZH {
		if t, ok := zhMetrics[id]; ok {
			return t.Name
		}
	}
	if md, ok := m.Lookup(id); ok {
		return md.Name
	}
	return id
}

// EvidenceTextIn writes an evidence line's sentence in lang from its
// numbers, with the rule's remark the English sentence carries.
func EvidenceTextIn(lang string, e Evidence) string {
	if lang != LangZH {
		return e.Text
	}
	d := Deviation{Mean: e.BaselineMean, Z: e.Z, Std: 1}
	if e.Z == 0 && strings.Contains(e.Text, "(no baseline)") {
		d.Std = 0
	}
	return evidenceSentence(zhEvidence, lang, e.Metric, e.Value, d, zhRemarks[remarkOf(e.Text)])
}

// remarkOf finds the remark an English evidence sentence ends with.
func remarkOf(text string) string {
	best := ""
	for k, r := range remarks {
		if strings.HasSuffix(text, " "+r) && (best == "" || len(r) > len(remarks[best])) {
			best = k
		}
	}
	return best
}

// evidenceFormats are the five sentence shapes of an evidence line: no
// baseline, within it, a multiple of it, above and below it.
type evidenceFormats struct {
	NoBaseline, Within, Times, Up, Down string
}

var enEvidence = evidenceFormats{
	NoBaseline: "%s is %s (no baseline).",
	Within:     "%s is %s, within its baseline of %s (z %+.1f).",
	Times:      "%s is %s, %.1fx its baseline of %s (z %+.1f).",
	Up:         "%s is %s, up from its baseline of %s (z %+.1f).",
	Down:       "%s is %s, down from its baseline of %s (z %+.1f).",
}

// evidenceSentence fills the shapes of f; remark, when set, follows.
func evidenceSentence(f evidenceFormats, lang, id string, x float64, d Deviation, remark string) string {
	name := metricNameIn(lang, id)
	v, b := formatValue(id, x), formatValue(id, d.Mean)
	var s string
	switch {
	case d.Std == 0 && d.Z == 0:
		s = fmt.Sprintf(f.NoBaseline, name, v)
	case math.Abs(d.Z) < 2:
		s = fmt.Sprintf(f.Within, name, v, b, d.Z)
	case d.Mean > 0 && x/d.Mean >= 1.5:
		s = fmt.Sprintf(f.Times, name, v, x/d.Mean, b, d.Z)
	case d.Z > 0:
		s = fmt.Sprintf(f.Up, name, v, b, d.Z)
	default:
		s = fmt.Sprintf(f.Down, name, v, b, d.Z)
	}
	if remark != "" {
		sep := " "
		if lang == LangZH {
			sep = ""
		}
		s += sep + remark
	}
	return s
}

// ActionIn is an action of cause with its title, reasoning, risk and
// rollback in lang; a unchanged when no translation exists.
func ActionIn(lang, cause string, a Action) Action {
	if lang != LangZH {
		return a
	}
	t, ok := zhActions[cause][a.ID]
	if !ok {
		return a
	}
	a.Title, a.Why, a.Risk, a.Rollback = t.Title, t.Why, t.Risk, t.Rollback
	return a
}

// ProposedIn is an action's proposed value in lang ("double" -> "翻倍");
// numbers and knob values stay as written.
func ProposedIn(lang, p string) string {
	if lang == LangZH {
		if t, ok := zhProposed[p]; ok {
			return t
		}
	}
	return p
}

// EffectSizeIn is an expected effect's size in lang ("+5 pts").
func EffectSizeIn(lang, size string) string {
	if lang != LangZH {
		return size
	}
	for _, r := range zhEffectWords {
		size = strings.ReplaceAll(size, r[0], r[1])
	}
	return size
}

// noteShape is one kind of note: its English format, the same in lang,
// and whether it is a literal sentence rather than a format. A
// translation that reorders the arguments uses fmt's explicit indexes.
type noteShape struct {
	en, zh string
	// literal notes are written as they stand, not through a format
	// (a "%" in them is a percent sign).
	literal bool
	re      *regexp.Regexp
}

// NoteIn translates a note the engine wrote in English: it recognises the
// note's shape, reads its arguments back and writes the translation with
// them (cause titles translated too). A note of no known shape is kept.
func NoteIn(lang, note string) string {
	if lang != LangZH {
		return note
	}
	for _, sh := range zhNotes {
		args := sh.re.FindStringSubmatch(note)
		if args == nil {
			continue
		}
		if sh.literal {
			return sh.zh
		}
		vals := make([]any, 0, len(args)-1)
		verbs := formatVerbs(sh.en)
		for i, a := range args[1:] {
			vals = append(vals, noteArg(lang, verbs[i], a))
		}
		return fmt.Sprintf(sh.zh, vals...)
	}
	return note
}

var verbRE = regexp.MustCompile(`%(?:\.0f%%|\.0f|d|s)`)

// formatVerbs lists the verbs of a format string the notes use.
func formatVerbs(f string) []string { return verbRE.FindAllString(f, -1) }

// noteArg turns a matched argument back into the value its verb prints.
func noteArg(lang, verb, s string) any {
	switch verb {
	case "%d":
		n, _ := strconv.Atoi(s)
		return n
	case "%.0f", "%.0f%%":
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	for _, c := range m.Causes {
		if c.Title == s {
			return CauseTitleIn(lang, c.ID)
		}
	}
	return s
}

// noteRegexp turns a note's English format into a pattern that reads its
// arguments back.
func noteRegexp(f string, literal bool) *regexp.Regexp {
	if literal {
		return regexp.MustCompile("^" + regexp.QuoteMeta(f) + "$")
	}
	var b strings.Builder
	b.WriteString("^")
	rest := f
	for {
		loc := verbRE.FindStringIndex(rest)
		if loc == nil {
			b.WriteString(regexp.QuoteMeta(rest))
			break
		}
		b.WriteString(regexp.QuoteMeta(rest[:loc[0]]))
		switch rest[loc[0]:loc[1]] {
		case "%d":
			b.WriteString(`(-?\d+)`)
		case "%.0f":
			b.WriteString(`(-?\d+)`)
		case "%.0f%%":
			b.WriteString(`(-?\d+)%`)
		default:
			b.WriteString(`(.+?)`)
		}
		rest = rest[loc[1]:]
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
