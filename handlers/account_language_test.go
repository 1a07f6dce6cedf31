package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/web"
)

// TestAccountLanguage: in accounts mode the language switch also keeps
// the signed-in account's preference, which then chooses the language
// where a request names none (after ?lang= and the cookie, before the
// browser's Accept-Language).
func TestAccountLanguage(t *testing.T) {
	f := newAuthFixture(t, web.AuthAccounts, "")
	sess := f.session(t, "ana", "viewer")
	page := func(t *testing.T, path, cookie string) string {
		t.Helper()
		res := f.do(t, http.MethodGet, path, nil, map[string]string{"Cookie": cookie, "Accept-Language": "en-US,en;q=0.9"})
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.status)
		}
		return res.header.Get("Content-Language")
	}
	list := route.URL(route.IncidentList)
	if got := page(t, list, sess); got != "en" {
		t.Fatalf("before any choice: %s, want en (the browser's)", got)
	}

	form := url.Values{"lang": {"zh-CN"}, "next": {list}}
	res := f.do(t, http.MethodPost, route.URL(route.Language), strings.NewReader(form.Encode()),
		map[string]string{"Cookie": sess, "Content-Type": "application/x-www-form-urlencoded"})
	if res.status != http.StatusSeeOther {
		t.Fatalf("switch: %d %.300s", res.status, res.body)
	}
	u, err := f.st.UserByName(context.Background(), "ana")
	if err != nil || u.Language != "zh-CN" {
		t.Fatalf("ana's preference %q, %v; want zh-CN", u.Language, err)
	}

	cases := []struct {
		name, path, cookie, want string
	}{
		{"account over browser (another device, no cookie)", list, sess, "zh-CN"},
		{"cookie over account", list, sess + "; lang=en", "en"},
		{"link over account", list + "?lang=en", sess, "en"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := page(t, tc.path, tc.cookie); got != tc.want {
				t.Errorf("Content-Language %s, want %s", got, tc.want)
			}
		})
	}
	if body := f.do(t, http.MethodGet, list, nil, map[string]string{"Cookie": sess}).body; !strings.Contains(body, `<html lang="zh-CN"`) {
		t.Errorf("the page is not in the account's language: %.300s", body)
	}

	// Someone signed out switches with the cookie alone.
	form = url.Values{"lang": {"en"}, "next": {list}}
	res = f.do(t, http.MethodPost, route.URL(route.Language), strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if res.status != http.StatusSeeOther {
		t.Fatalf("anonymous switch: %d", res.status)
	}
	if u, _ := f.st.UserByName(context.Background(), "ana"); u.Language != "zh-CN" {
		t.Errorf("an anonymous switch changed ana's preference to %q", u.Language)
	}
}
