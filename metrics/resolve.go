package metrics

import (
	"strconv"
	"strings"
)

// Resolution says whether a source can compute one catalog metric and
// through which of its alternatives.
type Resolution struct {
	ID     string
	Source Source
	// OK is true when one alternative's series are all present; Using is
	// then its series and Note the source generation it belongs to.
	OK    bool
	Using []string
	Note  string
	// Missing lists the series the metric lacks (those of its first
	// alternative) and Why explains the absence in words.
	Missing []string
	Why     string
}

// Resolve checks every catalog metric against the series a source has.
// has reports whether a series is present; it is asked for plain names
// ("vllm:kv_cache_usage_perc") and for names with one label matcher
// (`vllm:request_success_total{finished_reason="error"}`), which
// SplitSeries takes apart.
func Resolve(has func(series string) bool) []Resolution {
	out := make([]Resolution, 0, len(Catalog))
	for _, m := range Catalog {
		out = append(out, m.Resolve(has))
	}
	return out
}

// Resolve checks one metric against the series a source has.
func (m Metric) Resolve(has func(series string) bool) Resolution {
	r := Resolution{ID: m.ID, Source: m.Source}
	for _, a := range m.Alts {
		if all(a.Series, has) {
			r.OK, r.Using, r.Note = true, a.Series, a.Note
			return r
		}
	}
	if len(m.Alts) == 0 {
		r.Why = "the catalog has no series for it"
		if m.Absent != "" {
			r.Why = m.Absent // an engine without an equivalent (ForEngine)
		}
		return r
	}
	for _, s := range m.Alts[0].Series {
		if !has(s) {
			r.Missing = append(r.Missing, s)
		}
	}
	r.Why = m.whyMissing()
	return r
}

func all(series []string, has func(string) bool) bool {
	for _, s := range series {
		if !has(s) {
			return false
		}
	}
	return true
}

// whyMissing explains an unresolved metric: the documented reason a
// healthy source may lack it, else the names that were looked for.
func (m Metric) whyMissing() string {
	var names []string
	for _, a := range m.Alts {
		names = append(names, strings.Join(a.Series, " + "))
	}
	looked := "none of " + strings.Join(names, ", or ") + " is exported"
	if len(names) == 1 {
		looked = names[0] + " is not exported"
	}
	if m.Absent != "" {
		return looked + ": " + m.Absent
	}
	return looked
}

// SplitSeries takes a series reference of the catalog apart: a metric
// name, optionally followed by one label matcher in braces
// (`name{label="value"}`). label is "" for a plain name.
func SplitSeries(s string) (name, label, value string) {
	open := strings.IndexByte(s, '{')
	if open < 0 || !strings.HasSuffix(s, "}") {
		return s, "", ""
	}
	name = s[:open]
	l, v, ok := strings.Cut(s[open+1:len(s)-1], "=")
	if !ok {
		return s, "", ""
	}
	uv, err := strconv.Unquote(v)
	if err != nil {
		return s, "", ""
	}
	return name, l, uv
}
