package handlers_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/web"
)

// FuzzFormValues posts arbitrary values in every field of every form of the
// console (reviews, notes, shares, diagnose now, faults, accounts, tokens,
// sign-in), signed in as an admin: the answer is a redirect, a page or a
// 4xx naming what is wrong, never a 5xx.
func FuzzFormValues(f *testing.F) {
	af := newAuthFixture(f, web.AuthAccounts, "")
	id := (&archiveFixture{fixture: af.fixture, st: af.st}).openViaAlert(f, "00000000000000fa", "Fuzzed")
	cookie := af.session(f, "admin", "admin")
	srv := web.New(af.opts)
	forms := []struct {
		path   string
		fields []string
	}{
		{fmt.Sprintf("/incidents/%d/labels", id), []string{"verdict", "true_cause", "new_cause", "note"}},
		{fmt.Sprintf("/incidents/%d/notes", id), []string{"body", "by", "x"}},
		{fmt.Sprintf("/incidents/%d/shares", id), []string{"ttl", "by", "x"}},
		{fmt.Sprintf("/incidents/%d/diagnoses", id), []string{"x", "y", "z"}},
		{"/scopes/llama-70b/diagnose", []string{"at", "range", "x"}},
		{"/faults", []string{"cause", "scope", "severity", "duration"}},
		{"/admin/users", []string{"name", "role", "password"}},
		{"/admin/users/1", []string{"role", "password", "x"}},
		{"/admin/tokens", []string{"name", "scope", "x"}},
		{"/login", []string{"name", "password", "next"}},
	}
	f.Add(uint8(0), "wrong", "queue_backlog", "")
	f.Add(uint8(0), "wrong", "", "New cause\x00")
	f.Add(uint8(1), "a note", "ana", "")
	f.Add(uint8(2), "24h", "", "")
	f.Add(uint8(4), "2026-11-30T04:50:00Z", "1h", "")
	f.Add(uint8(5), "kv_cache_eviction", "llama-70b", "2")
	f.Add(uint8(6), "x y", "admin", "short")
	f.Add(uint8(8), "t", "write", "")
	f.Add(uint8(9), "admin", strings.Repeat("p", 100), "//evil.example")
	f.Fuzz(func(t *testing.T, which uint8, a, b, c string) {
		form := forms[int(which)%len(forms)]
		v := url.Values{}
		for i, val := range []string{a, b, c} {
			v.Set(form.fields[i%len(form.fields)], val)
		}
		v.Set("csrf_token", testCSRF)
		req := httptest.NewRequest(http.MethodPost, form.path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %s %v: %d %.300s", form.path, v, rec.Code, rec.Body.String())
		}
		if loc := rec.Header().Get("Location"); loc != "" && !strings.HasPrefix(loc, "/") {
			t.Fatalf("POST %s %v redirects off the console to %q", form.path, v, loc)
		}
		if loc := rec.Header().Get("Location"); strings.HasPrefix(loc, "//") {
			t.Fatalf("POST %s %v redirects to another host %q", form.path, v, loc)
		}
		_ = handlers.SessionCookie
	})
}

// FuzzCredentials sends arbitrary Authorization, Cookie and proxy headers:
// none of them gets past the sign-in of an admin page, and none makes the
// console fail.
func FuzzCredentials(f *testing.F) {
	af := newAuthFixture(f, web.AuthAccounts, "")
	srv := web.New(af.opts)
	f.Add("Bearer cb_0123", "casebook_session=abc", "admin")
	f.Add("Bearer "+alertToken, handlers.SessionCookie+"="+strings.Repeat("0", 64), "")
	f.Add("Basic YWRtaW46YWRtaW4=", "casebook_session=; casebook_csrf=x", "root")
	f.Fuzz(func(t *testing.T, authz, cookie, user string) {
		req := httptest.NewRequest(http.MethodGet, "/admin/users", nil)
		req.Header.Set("Authorization", authz)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("X-Forwarded-User", user)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden {
			t.Fatalf("Authorization %q Cookie %q X-Forwarded-User %q: %d", authz, cookie, user, rec.Code)
		}
	})
}
