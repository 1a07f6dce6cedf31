package i18n

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

// The console's languages. English comes first: it is the fallback for a
// request that names none of them, and for a key a catalog lacks.
var (
	English = language.English
	Chinese = language.MustParse("zh-CN")
)

// Supported lists the languages in matching order, English first.
var Supported = []language.Tag{English, Chinese}

// CookieName is the cookie the language switch sets; QueryParam is the
// parameter a shared link carries (?lang=zh-CN).
const (
	CookieName = "lang"
	QueryParam = "lang"
)

var matcher = language.NewMatcher(Supported)

// cat holds every message of both languages, built once from the tables
// (messages_*.go) and never changed after.
var cat = mustCatalog()

func mustCatalog() catalog.Catalog {
	b := catalog.NewBuilder(catalog.Fallback(English))
	for _, m := range All() {
		for _, lm := range []struct {
			tag language.Tag
			msg catalog.Message
		}{{English, m.english()}, {Chinese, m.chinese()}} {
			if err := b.Set(lm.tag, m.Key, lm.msg); err != nil {
				panic(fmt.Sprintf("i18n: %s %q: %v", lm.tag, m.Key, err))
			}
		}
	}
	return b
}

// Msg is one catalog entry: its key and its text in each language, as
// fmt formats with the arguments T is given. EnOne, when set, is the
// English text for a count of one (the first argument, an integer);
// Chinese does not inflect for number.
type Msg struct {
	Key, En, Zh string
	EnOne       string
}

func (m Msg) english() catalog.Message {
	if m.EnOne == "" {
		return catalog.String(m.En)
	}
	return plural.Selectf(1, "%d", "=1", m.EnOne, "other", m.En)
}

func (m Msg) chinese() catalog.Message { return catalog.String(m.Zh) }

// All returns every catalog entry of every table.
func All() []Msg {
	var out []Msg
	for _, t := range tables {
		out = append(out, t...)
	}
	return out
}

// Match picks the language for a request: an explicit ?lang= first (a
// shared link), then the switch's cookie, then the account's preference,
// then the browser's Accept-Language; English when none names a
// supported language. Unparseable values are skipped, not errors.
func Match(query, cookie, account, acceptLanguage string) language.Tag {
	for _, v := range []string{query, cookie, account} {
		if t, ok := Parse(v); ok {
			return t
		}
	}
	if acceptLanguage != "" {
		if tags, _, err := language.ParseAcceptLanguage(acceptLanguage); err == nil && len(tags) > 0 {
			_, i, conf := matcher.Match(tags...)
			if conf != language.No {
				return Supported[i]
			}
		}
	}
	return English
}

// Parse reads a language code ("zh-CN", "zh", "en-US") and returns the
// supported language it names; false when it names none of them.
func Parse(s string) (language.Tag, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 35 {
		return English, false
	}
	t, err := language.Parse(s)
	if err != nil {
		return English, false
	}
	_, i, conf := matcher.Match(t)
	if conf < language.High {
		return English, false
	}
	return Supported[i], true
}

// Code is the short form the console writes for a supported language:
// "en" or "zh-CN" (the html lang attribute, the cookie, ?lang=).
func Code(t language.Tag) string {
	if t == Chinese {
		return "zh-CN"
	}
	return "en"
}

// Locale prints messages in one language.
type Locale struct {
	Tag language.Tag
	p   *message.Printer
}

// New returns the Locale for a supported language; English for any other.
func New(t language.Tag) *Locale {
	if t != Chinese {
		t = English
	}
	return &Locale{Tag: t, p: message.NewPrinter(t, message.Catalog(cat))}
}

var defaultLocale = New(English)

// Code is the locale's language code ("en" or "zh-CN").
func (l *Locale) Code() string { return Code(l.Tag) }

// IsChinese reports whether the locale is Simplified Chinese.
func (l *Locale) IsChinese() bool { return l.Tag == Chinese }

// T prints the message key with args in the locale's language; numbers
// are grouped as the language writes them. A key no catalog holds is
// printed as itself, which the catalog tests forbid in templates.
func (l *Locale) T(key string, args ...any) string {
	return l.p.Sprintf(key, args...)
}

// Time renders t in the locale's date order with its time zone named:
// "2026-03-01 14:05 UTC" or "2026年3月1日 14:05 UTC"; "–" for the zero time.
func (l *Locale) Time(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	t = t.UTC()
	if l.IsChinese() {
		return t.Format("2006年1月2日 15:04 MST")
	}
	return t.Format("2006-01-02 15:04 MST")
}

type localeKey struct{}

// With returns ctx carrying l.
func With(ctx context.Context, l *Locale) context.Context {
	return context.WithValue(ctx, localeKey{}, l)
}

// From returns the request's Locale; English when ctx carries none.
func From(ctx context.Context) *Locale {
	if l, ok := ctx.Value(localeKey{}).(*Locale); ok && l != nil {
		return l
	}
	return defaultLocale
}

// T prints key in the language of ctx's Locale.
func T(ctx context.Context, key string, args ...any) string {
	return From(ctx).T(key, args...)
}

// Keys lists every catalog key.
func Keys() map[string]bool {
	out := map[string]bool{}
	for _, m := range All() {
		out[m.Key] = true
	}
	return out
}

// NativeName is a language's name in that language, as a language switch
// shows it.
func NativeName(t language.Tag) string {
	if t == Chinese {
		return "中文"
	}
	return "English"
}
