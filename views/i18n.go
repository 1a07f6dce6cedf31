package views

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/internal/i18n"
)

// T prints a catalog message in the request's language (see package
// i18n); every user-facing string of the templates goes through it.
func T(ctx context.Context, key string, args ...any) string {
	return i18n.T(ctx, key, args...)
}

// Lang is the request's language code for the html lang attribute.
func Lang(ctx context.Context) string { return i18n.From(ctx).Code() }

// Time renders t in the request's language with its time zone named.
func Time(ctx context.Context, t time.Time) string { return i18n.From(ctx).Time(t) }

// Ago renders the time between t and now in words, in the request's
// language ("7 min ago", "7 分钟前").
func Ago(ctx context.Context, t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return T(ctx, "time.just_now")
	case d < time.Hour:
		return T(ctx, "time.min_ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return T(ctx, "time.h_ago", int(d/time.Hour))
	default:
		return T(ctx, "time.days_ago", int(d/(24*time.Hour)))
	}
}

// languageChoice is one button of the language switch.
type languageChoice struct {
	Code, Name string
	Current    bool
}

// Pressed is the button's aria-pressed value.
func (l languageChoice) Pressed() string {
	if l.Current {
		return "true"
	}
	return "false"
}

// languages lists the switch's choices, each named in its own language
// (not translated: a reader who cannot read the current one must still
// find theirs).
func languages(ctx context.Context) []languageChoice {
	cur := i18n.From(ctx).Code()
	out := make([]languageChoice, 0, len(i18n.Supported))
	for _, t := range i18n.Supported {
		c := i18n.Code(t)
		out = append(out, languageChoice{Code: c, Name: i18n.NativeName(t), Current: c == cur})
	}
	return out
}

// switchNext is where the language switch returns: the current page,
// without a ?lang= that would override the choice just made.
func switchNext(ctx context.Context) string {
	p := RequestInfoFrom(ctx).Path
	u, err := url.Parse(p)
	if err != nil || p == "" {
		return ""
	}
	q := u.Query()
	if !q.Has(i18n.QueryParam) {
		return p
	}
	q.Del(i18n.QueryParam)
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

// Label is the status in one word in the request's language; Word stays
// the English one that data-status attributes and tests read.
func (s Status) Label(ctx context.Context) string {
	switch s {
	case StatusOK:
		return T(ctx, "status.ok")
	case StatusInfo:
		return T(ctx, "status.info")
	case StatusWarning:
		return T(ctx, "status.warning")
	case StatusCritical:
		return T(ctx, "status.critical")
	}
	return T(ctx, "status.no_data")
}

// sentencePart is a run of a translated sentence: plain text, or a
// command or value shown as code.
type sentencePart struct {
	Text string
	Code bool
}

// codeSentence prints key with codes as its %s arguments and splits the
// result so that each argument renders in a code element wherever the
// language puts it.
func codeSentence(ctx context.Context, key string, codes ...string) []sentencePart {
	marks := make([]any, len(codes))
	for i := range codes {
		marks[i] = "\x00" + strconv.Itoa(i) + "\x00"
	}
	var out []sentencePart
	for i, s := range strings.Split(T(ctx, key, marks...), "\x00") {
		if i%2 == 0 {
			if s != "" {
				out = append(out, sentencePart{Text: s})
			}
			continue
		}
		if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < len(codes) {
			out = append(out, sentencePart{Text: codes[n], Code: true})
		}
	}
	return out
}
