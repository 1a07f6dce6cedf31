package handlers

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// ParamError is a bad query, path or form parameter. The error page names
// the parameter and says why it was rejected.
type ParamError struct {
	Param  string // e.g. "range", "from", "model"
	Reason string // in English, for logs
	Status int    // 400 unless set
	// Key and Args, when Key is set, print the reason from the catalogs
	// in the reader's language (ReasonIn).
	Key  string
	Args []any
}

// ReasonIn is the reason in ctx's language.
func (e *ParamError) ReasonIn(ctx context.Context) string {
	if e.Key == "" {
		return e.Reason
	}
	return i18n.T(ctx, e.Key, e.Args...)
}

// Error implements error.
func (e *ParamError) Error() string {
	return "parameter " + e.Param + ": " + e.Reason
}

// Code is the HTTP status the error maps to.
func (e *ParamError) Code() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

func badParam(param, format string, args ...any) *ParamError {
	return &ParamError{Param: param, Reason: fmt.Sprintf(format, args...)}
}

// Message is an HTTP error's message printed from the catalogs in the
// reader's language: set it as an echo.HTTPError's Message (HTTPError)
// and the error handler prints it with ReasonIn's language; String is the
// English text, for logs.
type Message struct {
	Key  string
	Args []any
}

// String is the message in English.
func (m Message) String() string { return i18n.New(i18n.English).T(m.Key, m.Args...) }

// In is the message in ctx's language.
func (m Message) In(ctx context.Context) string { return i18n.T(ctx, m.Key, m.Args...) }

// HTTPError is an echo.HTTPError whose message is the catalog key printed
// with args in the reader's language.
func HTTPError(code int, key string, args ...any) *echo.HTTPError {
	return echo.NewHTTPError(code, Message{Key: key, Args: args})
}

// paramError is a bad parameter whose reason is the catalog message key
// printed with args (strings: the catalogs group numbers by language).
func paramError(param, key string, args ...any) *ParamError {
	return &ParamError{Param: param, Reason: i18n.New(i18n.English).T(key, args...), Key: key, Args: args}
}

// Window limits.
const (
	DefaultRange = time.Hour
	MaxWindow    = 31 * 24 * time.Hour
	MinWindow    = time.Minute
)

// TimeWindow is a parsed time range: a preset relative to now, or an
// absolute from/to window.
type TimeWindow struct {
	Preset string // "" when absolute
	From   time.Time
	To     time.Time
	Step   time.Duration
}

// Range returns the metrics query range of the window.
func (w TimeWindow) Range() metrics.Range {
	return metrics.Range{Start: w.From, End: w.To, Step: w.Step}
}

// ParseWindow reads ?range= (15m, 1h, 6h, 24h, 7d) or ?from=&to= (RFC 3339
// or unix seconds) from q. No parameter means the last hour.
func ParseWindow(q url.Values, now time.Time) (TimeWindow, error) {
	preset, from, to := q.Get("range"), q.Get("from"), q.Get("to")
	if preset != "" && (from != "" || to != "") {
		return TimeWindow{}, paramError("range", "param.range_both")
	}
	now = now.UTC().Truncate(time.Second)
	var w TimeWindow
	switch {
	case preset != "":
		d, ok := views.RangePresetWindow(preset)
		if !ok {
			return TimeWindow{}, paramError("range", "param.range_preset", strconv.Quote(preset), strings.Join(views.RangePresetNames(), ", "))
		}
		w = TimeWindow{Preset: preset, From: now.Add(-d), To: now}
	case from == "" && to == "":
		w = TimeWindow{Preset: "1h", From: now.Add(-DefaultRange), To: now}
	default:
		w.To = now
		if to != "" {
			t, err := parseTime(to)
			if err != nil {
				return TimeWindow{}, badParam("to", "%v", err)
			}
			w.To = t
		}
		w.From = w.To.Add(-DefaultRange)
		if from != "" {
			t, err := parseTime(from)
			if err != nil {
				return TimeWindow{}, badParam("from", "%v", err)
			}
			w.From = t
		}
		if !w.From.Before(w.To) {
			return TimeWindow{}, paramError("from", "param.from_before_to", w.To.Format(time.RFC3339))
		}
	}
	span := w.To.Sub(w.From)
	switch {
	case span > MaxWindow:
		return TimeWindow{}, paramError("from", "param.window_long", span.Round(time.Hour).String())
	case span < MinWindow:
		return TimeWindow{}, paramError("from", "param.window_short", span.String())
	}
	w.Step = StepFor(span)
	return w, nil
}

// steps are the charts' resolutions. None lies between 15 minutes and an
// hour: a window too long for 15-minute steps (over 3.75 days, the 7-day
// view) is drawn hourly from the hourly tier, whose last days the TSDB
// head holds in memory, rather than from a week of minutes read back from
// block files.
var steps = []time.Duration{
	15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 15 * time.Minute, time.Hour, 2 * time.Hour,
	3 * time.Hour, 6 * time.Hour,
}

// StepFor picks a resolution that gives at most 360 points over span.
func StepFor(span time.Duration) time.Duration {
	for _, s := range steps {
		if span/s <= 360 {
			return s
		}
	}
	return steps[len(steps)-1]
}

// parseTime accepts RFC 3339, a datetime-local value (taken as UTC) or unix
// seconds.
func parseTime(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("%d characters is too long for a time", len(s))
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f < 0 || f > 1e11 {
			return time.Time{}, fmt.Errorf("%q is not a plausible unix time in seconds", s)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2006-01-02T15:04:05Z) nor unix seconds", s)
}

// checkName validates a model or instance path segment.
func checkName(param, s string) error {
	switch {
	case s == "":
		return paramError(param, "param.empty")
	case len(s) > metrics.MaxNameLength:
		return paramError(param, "param.too_long", strconv.Itoa(metrics.MaxNameLength))
	case !utf8.ValidString(s):
		return paramError(param, "param.not_utf8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return paramError(param, "param.control")
	}
	return nil
}
