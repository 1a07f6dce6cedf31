package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/web"
)

// TestLanguageChoice checks where a page's language comes from: ?lang=
// over the cookie over Accept-Language, English without any.
func TestLanguageChoice(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: archive(t, tel), Now: func() time.Time { return tel.End }})
	tests := []struct {
		name, query, cookie, accept string
		want, word                  string
	}{
		{name: "default", want: "en", word: ">Incidents<"},
		{name: "browser", accept: "zh-CN,zh;q=0.9", want: "zh-CN", word: ">事件<"},
		{name: "cookie over browser", cookie: "en", accept: "zh-CN", want: "en", word: ">Incidents<"},
		{name: "link over cookie", query: "zh-CN", cookie: "en", want: "zh-CN", word: ">事件<"},
		{name: "bad cookie ignored", cookie: "<script>", accept: "zh", want: "zh-CN", word: ">事件<"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := route.URL(route.IncidentList)
			if tc.query != "" {
				u += "?lang=" + url.QueryEscape(tc.query)
			}
			req := httptest.NewRequest(http.MethodGet, u, nil)
			if tc.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "lang", Value: tc.cookie})
			}
			if tc.accept != "" {
				req.Header.Set("Accept-Language", tc.accept)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != http.StatusOK || !strings.Contains(body, `<html lang="`+tc.want+`"`) || !strings.Contains(body, tc.word) {
				t.Errorf("status %d, want lang %s with %q: %.400s", rec.Code, tc.want, tc.word, body)
			}
			if got := rec.Header().Get("Content-Language"); got != tc.want {
				t.Errorf("Content-Language %q, want %q", got, tc.want)
			}
		})
	}
}

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// TestLanguageSwitch posts the top bar's switch: it keeps the choice in a
// cookie and returns to the page, never to another site.
func TestLanguageSwitch(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: archive(t, tel), Now: func() time.Time { return tel.End }})
	page := httptest.NewRecorder()
	srv.ServeHTTP(page, httptest.NewRequest(http.MethodGet, route.URL(route.IncidentList)+"?lang=zh-CN&q=x", nil))
	m := csrfField.FindStringSubmatch(page.Body.String())
	if m == nil || !strings.Contains(page.Body.String(), `name="next" value="/incidents?q=x"`) {
		t.Fatalf("the switch form lacks its token or its way back (without ?lang=): %.600s", page.Body.String())
	}
	cookies := page.Result().Cookies()
	tests := []struct {
		name, lang, next string
		status           int
		location, cookie string
	}{
		{"to Chinese", "zh-CN", "/incidents?q=x", http.StatusSeeOther, "/incidents?q=x", "zh-CN"},
		{"to English", "en", "/review", http.StatusSeeOther, "/review", "en"},
		{"plain zh", "zh", "/", http.StatusSeeOther, "/", "zh-CN"},
		{"other site", "zh-CN", "//evil.example/x", http.StatusSeeOther, "/", "zh-CN"},
		{"absolute URL", "zh-CN", "https://evil.example/", http.StatusSeeOther, "/", "zh-CN"},
		{"backslash", "zh-CN", "/\\evil.example", http.StatusSeeOther, "/", "zh-CN"},
		{"unknown language", "fr", "/", http.StatusBadRequest, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"lang": {tc.lang}, "next": {tc.next}, "csrf_token": {m[1]}}
			req := httptest.NewRequest(http.MethodPost, route.URL(route.Language), strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for _, c := range cookies {
				req.AddCookie(c)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %.300s", rec.Code, tc.status, rec.Body.String())
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			var got string
			for _, c := range rec.Result().Cookies() {
				if c.Name == "lang" {
					got = c.Value
				}
			}
			if got != tc.cookie {
				t.Errorf("lang cookie %q, want %q", got, tc.cookie)
			}
		})
	}
}

// TestErrorReasonsFollowLanguage: a bad parameter's reason is printed in
// the request's language on the error page and in the API's JSON error;
// the parameter's name stays as the URL spells it.
func TestErrorReasonsFollowLanguage(t *testing.T) {
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Incidents: archive(t, tel), Now: func() time.Time { return tel.End }})
	tests := []struct {
		name, path, want, not string
	}{
		{"page en", "/?page=0", "must be a page number from 1", ""},
		{"page zh", "/?page=0&lang=zh-CN", "必须是从 1 开始的页码", "must be a page"},
		{"api zh", route.URL(route.APIIncidentList) + "?verdict=maybe&lang=zh-CN", `"error":"verdict: \"maybe\" 不是 unreviewed、correct 或 wrong"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			body := rec.Body.String()
			if rec.Code != http.StatusBadRequest || !strings.Contains(body, tc.want) || (tc.not != "" && strings.Contains(body, tc.not)) {
				t.Errorf("status %d, want 400 with %q without %q: %.600s", rec.Code, tc.want, tc.not, body)
			}
		})
	}
}
