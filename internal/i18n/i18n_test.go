package i18n

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
)

// sameInBoth are entries whose Chinese text is the English one on
// purpose: a value the console records as typed.
var sameInBoth = map[string]bool{
	"review.local": true, // the name a review without one is recorded under
	"trace.trace":  true, // "trace" is the word Chinese profiling texts use
}

var verb = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*(\d+)?(\.\d+)?(\[\d+\])?[a-zA-Z]`)

// TestCatalogComplete fails when an entry lacks its English or Chinese
// text, when a key is given twice, or when the two texts take different
// arguments.
func TestCatalogComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if m.Key == "" || m.En == "" || m.Zh == "" {
			t.Errorf("entry %q: missing key, English or Chinese text (en %q, zh %q)", m.Key, m.En, m.Zh)
		}
		if seen[m.Key] {
			t.Errorf("key %q is given twice", m.Key)
		}
		seen[m.Key] = true
		if !sameInBoth[m.Key] && !strings.ContainsFunc(m.Zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) && m.Zh == m.En && strings.ContainsFunc(m.En, unicode.IsLetter) {
			t.Errorf("key %q: the Chinese text is the English one", m.Key)
		}
		if ne, nz := len(verb.FindAllString(m.En, -1)), len(verb.FindAllString(m.Zh, -1)); ne != nz {
			t.Errorf("key %q: English takes %d arguments, Chinese %d", m.Key, ne, nz)
		}
		if m.EnOne != "" && len(verb.FindAllString(m.EnOne, -1)) != len(verb.FindAllString(m.En, -1)) {
			t.Errorf("key %q: the singular takes other arguments than the plural", m.Key)
		}
	}
	if len(seen) < 100 {
		t.Errorf("only %d keys", len(seen))
	}
}

// TestPrinting checks plurals, number grouping, argument order and
// fallback per language.
func TestPrinting(t *testing.T) {
	en, zh := New(English), New(Chinese)
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"en one", en.T("share.days", 1), "1 day"},
		{"en other", en.T("share.days", 7), "7 days"},
		{"zh", zh.T("share.days", 7), "7 天"},
		{"en grouping", en.T("queue.total", 1234), "1,234 unreviewed in all"},
		{"zh grouping", zh.T("queue.total", 1234), "共 1,234 个未复核"},
		{"en args", en.T("queue.empty_model_cause", "llama", "Queue backlog"), "No unreviewed incidents of llama, diagnosed Queue backlog."},
		{"zh args", zh.T("queue.empty_model_cause", "llama", "队列积压"), "llama 没有诊断为 队列积压 的未复核事件。"},
		{"unknown key", zh.T("no.such.key"), "no.such.key"},
		{"en time", en.Time(time.Date(2026, 3, 1, 14, 5, 0, 0, time.UTC)), "2026-03-01 14:05 UTC"},
		{"zh time", zh.Time(time.Date(2026, 3, 1, 14, 5, 0, 0, time.UTC)), "2026年3月1日 14:05 UTC"},
		{"zero time", zh.Time(time.Time{}), "–"},
		{"context default", T(context.Background(), "nav.incidents"), "Incidents"},
		{"context zh", T(With(context.Background(), zh), "nav.incidents"), "事件"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
}

// TestMatch checks the order of the language sources and what each
// accepts.
func TestMatch(t *testing.T) {
	cases := []struct {
		name                           string
		query, cookie, account, accept string
		want                           string
	}{
		{name: "nothing", want: "en"},
		{name: "browser zh", accept: "zh-CN,zh;q=0.9,en;q=0.8", want: "zh-CN"},
		{name: "browser plain zh", accept: "zh", want: "zh-CN"},
		{name: "browser en first", accept: "en-US,en;q=0.9,zh-CN;q=0.5", want: "en"},
		{name: "browser other", accept: "fr-FR,fr;q=0.9", want: "en"},
		{name: "browser garbage", accept: ";;;===", want: "en"},
		{name: "account over browser", account: "zh-CN", accept: "en", want: "zh-CN"},
		{name: "cookie over account", cookie: "en", account: "zh-CN", want: "en"},
		{name: "query over cookie", query: "zh-CN", cookie: "en", want: "zh-CN"},
		{name: "bad query skipped", query: "xx-!!", cookie: "zh-CN", want: "zh-CN"},
		{name: "unsupported query skipped", query: "fr", accept: "zh", want: "zh-CN"},
		{name: "case-insensitive", query: "ZH-cn", want: "zh-CN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Code(Match(tc.query, tc.cookie, tc.account, tc.accept)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
