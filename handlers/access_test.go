package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

// authFixture is the console with the archive and built-in accounts (or
// the proxy mode) on a real SQLite file.
type authFixture struct {
	*fixture
	st *store.Store
}

func newAuthFixture(t testing.TB, mode web.AuthMode, proxy string) *authFixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tel := sharedTel()
	px, err := auth.ParseProxies(proxy)
	if err != nil {
		t.Fatal(err)
	}
	var srvLayout func(string, string) views.LayoutView
	layout := func(title, nav string) views.LayoutView { return srvLayout(title, nav) }
	f := newFixture(t, tel, func(o *web.Options) {
		inc, svc := archiveHandlers(handlers.IncidentDeps{Layout: layout, Now: o.Now}, st, tel, o.Diagnoser)
		o.Incidents, o.IncidentOpener = inc, svc
		o.Faults = &handlerstest.Faults{}
		o.Auth = web.AuthOptions{Mode: mode, Proxy: px, WebhookToken: alertToken,
			Accounts: handlers.NewAccounts(handlers.AccountDeps{Store: st, PasswordLogin: mode == web.AuthAccounts, Layout: layout})}
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	return &authFixture{fixture: f, st: st}
}

// session signs a user of role in directly through the store and returns
// its cookie header; the session's form token is testCSRF.
func (f *authFixture) session(t testing.TB, name, role string) string {
	t.Helper()
	ctx := context.Background()
	u, err := f.st.UserByName(ctx, name)
	if err != nil {
		if u, err = f.st.AddUser(ctx, name, role, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	sid, _ := auth.NewToken("")
	if err := f.st.CreateSession(ctx, auth.HashToken(sid), u.ID, testCSRF, "test", time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return handlers.SessionCookie + "=" + sid + "; " + handlers.CSRFCookie + "=" + testCSRF
}

func (f *authFixture) token(t testing.TB, name, scope string) string {
	t.Helper()
	tok, _ := auth.NewToken(auth.TokenPrefix)
	if _, err := f.st.AddToken(context.Background(), name, scope, auth.HashToken(tok), time.Now()); err != nil {
		t.Fatal(err)
	}
	return tok
}

// wantPolicy is the access matrix the console promises, written out here
// independently of the route table in web/routes.go: viewers read, reviewers label, note,
// diagnose and attach traces, admins share and administer.
var wantPolicy = map[string]web.Policy{
	"health.live": web.PolicyPublic, "health.ready": web.PolicyPublic, "static": web.PolicyPublic,
	"session.login.form": web.PolicyPublic, "session.login": web.PolicyPublic, "session.logout": web.PolicyPublic,
	"share.show": web.PolicyPublic, "share.preview": web.PolicyPublic, "session.language.update": web.PolicyPublic,

	"api.alert.alertmanager": web.PolicyWebhook,

	"overview.show": web.PolicyViewer, "scope.model": web.PolicyViewer, "scope.instance": web.PolicyViewer,
	"fault.list": web.PolicyViewer, "storage.show": web.PolicyViewer, "metrics": web.PolicyViewer,
	"incident.list": web.PolicyViewer, "incident.show": web.PolicyViewer, "incident.postmortem": web.PolicyViewer,
	"incident.print": web.PolicyViewer, "accuracy.show": web.PolicyViewer, "kb.list": web.PolicyViewer,
	"kb.show": web.PolicyViewer, "api.incident.list": web.PolicyViewer, "api.incident.show": web.PolicyViewer,
	"api.incident.export": web.PolicyViewer, "api.incident.trace.list": web.PolicyViewer,
	"change.show": web.PolicyViewer, "api.change.list": web.PolicyViewer,
	"incident.preview": web.PolicyViewer, "review.queue": web.PolicyViewer,

	"diagnosis.create.model": web.PolicyReviewer, "diagnosis.create.instance": web.PolicyReviewer,
	"api.diagnosis.create": web.PolicyReviewer, "fault.create": web.PolicyReviewer, "fault.clear": web.PolicyReviewer,
	"incident.label.create": web.PolicyReviewer, "incident.note.create": web.PolicyReviewer,
	"incident.diagnosis.create": web.PolicyReviewer, "incident.trace.create": web.PolicyReviewer,
	"incident.trace.delete": web.PolicyReviewer, "api.incident.label.create": web.PolicyReviewer,
	"api.incident.note.create": web.PolicyReviewer, "api.incident.trace.create": web.PolicyReviewer,
	"change.create": web.PolicyReviewer, "change.status": web.PolicyReviewer, "change.deliver": web.PolicyReviewer,

	"incident.share.create": web.PolicyAdmin, "incident.share.revoke": web.PolicyAdmin,
	"admin.user.list": web.PolicyAdmin, "admin.user.create": web.PolicyAdmin, "admin.user.update": web.PolicyAdmin,
	"admin.user.delete": web.PolicyAdmin, "admin.token.list": web.PolicyAdmin, "admin.token.create": web.PolicyAdmin,
	"admin.token.revoke": web.PolicyAdmin, "admin.audit.list": web.PolicyAdmin, "admin.audit.export": web.PolicyAdmin,
}

// TestRoleMatrix calls every route of the console as every kind of caller
// (anonymous, a share-link holder, each role signed in, each API-token
// scope) and checks the route policy: allowed calls are neither 401/403
// nor 5xx, refused ones are 401 (no credentials) or 403 (not enough).
func TestRoleMatrix(t *testing.T) {
	f := newAuthFixture(t, web.AuthAccounts, "")
	ctx := context.Background()
	id := (&archiveFixture{fixture: f.fixture, st: f.st}).openViaAlert(t, "00000000000000aa", "Matrix")
	now := time.Now()
	held, err := f.st.CreateShare(ctx, id, "ana", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	revocable, _ := f.st.CreateShare(ctx, id, "ana", now, now.Add(time.Hour))
	spare, _ := f.st.AddUser(ctx, "spare", "viewer", nil, now)
	spareTok, _ := f.st.AddToken(ctx, "spare", "read", auth.HashToken("x"), now)

	type caller struct {
		name string
		p    auth.Principal
		hdr  func() map[string]string
	}
	sessionOf := func(name, role string) func() map[string]string {
		return func() map[string]string { return map[string]string{"Cookie": f.session(t, name, role)} }
	}
	bearer := func(tok string) func() map[string]string {
		return func() map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	}
	none := func() map[string]string { return map[string]string{} }
	callers := []caller{
		{"anonymous", auth.Principal{}, none},
		{"share holder", auth.Principal{}, none},
		{"viewer", auth.Principal{Name: "vi", Role: auth.RoleViewer, Kind: auth.KindSession}, sessionOf("vi", "viewer")},
		{"reviewer", auth.Principal{Name: "re", Role: auth.RoleReviewer, Kind: auth.KindSession}, sessionOf("re", "reviewer")},
		{"admin", auth.Principal{Name: "ad", Role: auth.RoleAdmin, Kind: auth.KindSession}, sessionOf("ad", "admin")},
		{"read token", auth.Principal{Kind: auth.KindToken, Scope: auth.ScopeRead, Role: auth.RoleViewer}, bearer(f.token(t, "r", "read"))},
		{"write token", auth.Principal{Kind: auth.KindToken, Scope: auth.ScopeWrite, Role: auth.RoleReviewer}, bearer(f.token(t, "w", "write"))},
		{"webhook token", auth.Principal{Kind: auth.KindToken, Scope: auth.ScopeWebhook}, bearer(f.token(t, "am", "webhook"))},
		{"static webhook token", auth.Principal{Kind: auth.KindToken, Scope: auth.ScopeWebhook}, bearer(alertToken)},
	}
	params := map[string]string{
		":id": fmt.Sprint(id), ":model": "llama-70b", ":instance": "llama-70b-0", ":token": held.Token,
		":share": fmt.Sprint(revocable.ID), ":cause": "kv_cache_eviction", ":trace": "1", "*": "css/casebook.css",
	}
	srv := web.New(f.opts)
	routes := srv.Routes()
	if len(routes) < 40 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, r := range routes {
		if r.Method == "echo_route_not_found" {
			continue
		}
		pol, ok := wantPolicy[r.Name]
		if !ok {
			t.Errorf("route %s %s (%s) is not in this test's matrix; add who may call it", r.Method, r.Path, r.Name)
			continue
		}
		path := r.Path
		for k, v := range params {
			path = strings.ReplaceAll(path, k, v)
		}
		// User and token routes act on spare rows, so that no caller
		// removes another's account.
		if strings.HasPrefix(r.Path, "/admin/users/:id") {
			path = strings.Replace(r.Path, ":id", fmt.Sprint(spare.ID), 1)
		}
		if strings.HasPrefix(r.Path, "/admin/tokens/:id") {
			path = strings.Replace(r.Path, ":id", fmt.Sprint(spareTok.ID), 1)
		}
		for _, c := range callers {
			if r.Name == string(route.ShareShow) && c.name == "anonymous" {
				path = "/share/" + strings.Repeat("0", 32) // anyone may try; only the holder gets in
			} else if r.Name == string(route.ShareShow) {
				path = "/share/" + held.Token
			}
			hdr := c.hdr()
			var body *strings.Reader
			if r.Method == http.MethodPost {
				body = strings.NewReader("")
				if hdr["Content-Type"] == "" {
					hdr["Content-Type"] = "application/x-www-form-urlencoded"
				}
			}
			var res response
			if body != nil {
				res = f.do(t, r.Method, path, body, hdr)
			} else {
				res = f.do(t, r.Method, path, nil, hdr)
			}
			allowed := pol.Allows(c.p)
			denied := res.status == http.StatusUnauthorized || res.status == http.StatusForbidden
			if r.Name == string(route.LoginPost) && res.status == http.StatusUnauthorized && strings.Contains(res.body, `data-testid="login-error"`) {
				denied = false // the handler refused the empty password: the route was reached
			}
			failed := res.status >= 500 && !(r.Name == string(route.Readyz) && res.status == http.StatusServiceUnavailable)
			switch {
			case allowed && (denied || failed):
				t.Errorf("%s %s as %s (policy %s): status %d, want allowed; %.200s", r.Method, path, c.name, pol, res.status, res.body)
			case !allowed && !denied:
				t.Errorf("%s %s as %s (policy %s): status %d, want 401 or 403", r.Method, path, c.name, pol, res.status)
			case !allowed && !c.p.Authenticated() && res.status != http.StatusUnauthorized:
				t.Errorf("%s %s as %s: status %d, want 401", r.Method, path, c.name, res.status)
			case !allowed && c.p.Authenticated() && res.status != http.StatusForbidden:
				t.Errorf("%s %s as %s: status %d, want 403", r.Method, path, c.name, res.status)
			}
			if r.Name == string(route.ShareShow) && c.name == "share holder" {
				if res.status != http.StatusOK {
					t.Errorf("share holder opening the link: %d", res.status)
				}
				if sc := res.header.Values("Set-Cookie"); len(sc) > 0 {
					t.Errorf("the share page sets cookies %v", sc)
				}
			}
		}
	}
}

// TestFormTokens checks that a state-changing form post without the
// session's form token is refused, with it accepted, and that API tokens
// need none.
func TestFormTokens(t *testing.T) {
	f := newAuthFixture(t, web.AuthAccounts, "")
	id := (&archiveFixture{fixture: f.fixture, st: f.st}).openViaAlert(t, "00000000000000ab", "Tokens")
	path := fmt.Sprintf("/incidents/%d/notes", id)
	cookie := f.session(t, "re", "reviewer")
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		status int
	}{
		{"no form token", map[string]string{"Cookie": cookie, "X-CSRF-Token": ""}, 403},
		{"wrong form token", map[string]string{"Cookie": cookie, "X-CSRF-Token": strings.Repeat("f", 64)}, 403},
		{"session's form token", map[string]string{"Cookie": cookie}, 303},
		{"JSON body", map[string]string{"Cookie": cookie, "X-CSRF-Token": "", "Content-Type": "application/json"}, 303},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hdr["Content-Type"] == "" {
				tc.hdr["Content-Type"] = "application/x-www-form-urlencoded"
			}
			r := f.do(t, http.MethodPost, path, strings.NewReader("body=hello"), tc.hdr)
			if tc.name == "JSON body" {
				// The page form handler reads form values only, so the
				// JSON post passes the token check and fails validation.
				if r.status == 403 {
					t.Errorf("JSON post refused by the form-token check: %.200s", r.body)
				}
				return
			}
			if r.status != tc.status {
				t.Errorf("status %d, want %d: %.200s", r.status, tc.status, r.body)
			}
		})
	}
	// The form token is in the page.
	page := f.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d", id), nil, map[string]string{"Cookie": cookie})
	if !strings.Contains(page.body, `name="csrf_token" value="`+testCSRF+`"`) {
		t.Error("the incident page's forms lack the session's form token")
	}
	// An API token needs no form token.
	tok := f.token(t, "w", "write")
	r := f.do(t, http.MethodPost, "/api/v1/incidents/"+fmt.Sprint(id)+"/notes", strings.NewReader(`{"body":"from a script"}`),
		map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "text/plain", "X-CSRF-Token": ""})
	if r.status != 201 && r.status != 200 {
		t.Errorf("API note with a token: %d %.200s", r.status, r.body)
	}
	// The note is recorded under the signed-in user, not a name the form claims.
	notes, _ := f.st.Notes(context.Background(), id)
	if len(notes) == 0 || notes[0].Author != "re" {
		t.Errorf("notes %+v, want the first by re", notes)
	}
	if len(notes) < 2 || notes[1].Author != "token w" {
		t.Errorf("notes %+v, want the second by the token w", notes)
	}
}

// TestLogin signs in with a password, is limited after repeated failures,
// and signs out.
func TestLogin(t *testing.T) {
	f := newAuthFixture(t, web.AuthAccounts, "")
	hash, err := auth.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.AddUser(context.Background(), "ana", "reviewer", hash, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Pages need a sign-in: 401 with the form.
	r := f.do(t, http.MethodGet, "/incidents", nil, nil)
	if r.status != 401 || !strings.Contains(r.body, `data-testid="login-form"`) || !strings.Contains(r.body, `value="/incidents"`) {
		t.Fatalf("anonymous page: %d %.300s", r.status, r.body)
	}
	login := func(pw string) response {
		return f.do(t, http.MethodPost, "/login", strings.NewReader("name=ana&next=%2Fkb&password="+pw),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	}
	if r := login("wrong-password"); r.status != 401 || !strings.Contains(r.body, "Wrong name or password") {
		t.Errorf("wrong password: %d", r.status)
	}
	r = login("correct+horse+battery")
	if r.status != 303 || r.header.Get("Location") != "/kb" {
		t.Fatalf("sign-in: %d to %q", r.status, r.header.Get("Location"))
	}
	var sess *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == handlers.SessionCookie {
			sess = c
		}
	}
	if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteLaxMode || len(sess.Value) != 64 {
		t.Fatalf("session cookie %+v", sess)
	}
	page := f.do(t, http.MethodGet, "/incidents", nil, map[string]string{"Cookie": handlers.SessionCookie + "=" + sess.Value})
	if page.status != 200 || !strings.Contains(page.body, `data-testid="who-user">ana<`) || !strings.Contains(page.body, `data-testid="who-role">reviewer<`) {
		t.Fatalf("signed-in page: %d", page.status)
	}
	// Sign out with the session's form token taken from the page.
	csrf := between(page.body, `name="csrf_token" value="`, `"`)
	out := f.do(t, http.MethodPost, "/logout", strings.NewReader(""), map[string]string{
		"Cookie": handlers.SessionCookie + "=" + sess.Value, "X-CSRF-Token": csrf, "Content-Type": "application/x-www-form-urlencoded"})
	if out.status != 303 {
		t.Fatalf("sign-out: %d %.200s", out.status, out.body)
	}
	if r := f.do(t, http.MethodGet, "/incidents", nil, map[string]string{"Cookie": handlers.SessionCookie + "=" + sess.Value}); r.status != 401 {
		t.Errorf("after sign-out: %d", r.status)
	}
	// Five failures in a row, then the limiter answers 429 even for the
	// right password. (Ten tries: one attempt comes back every 20 s, and
	// under the race detector each bcrypt check takes seconds.)
	limited := false
	for range 10 {
		if r := login("wrong-password"); r.status == http.StatusTooManyRequests {
			limited = strings.Contains(r.body, "Too many sign-in attempts") && r.header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Error("repeated failures were not limited")
	}
	if r := login("correct+horse+battery"); r.status != http.StatusTooManyRequests {
		t.Errorf("right password while limited: %d", r.status)
	}
}

func between(s, a, b string) string {
	_, rest, ok := strings.Cut(s, a)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, b)
	return v
}

// TestProxyMode trusts identity headers only from the configured proxy.
func TestProxyMode(t *testing.T) {
	hdr := map[string]string{"X-Forwarded-User": "ana"}
	trusted := newAuthFixture(t, web.AuthProxy, "127.0.0.1/32,::1")
	if r := trusted.do(t, http.MethodGet, "/incidents", nil, hdr); r.status != 200 || !strings.Contains(r.body, `data-testid="who-user">ana<`) {
		t.Errorf("from the proxy: %d", r.status)
	}
	// A proxy user without an account is a viewer; an account sets the role.
	if r := trusted.do(t, http.MethodGet, "/admin/users", nil, hdr); r.status != 403 {
		t.Errorf("viewer on admin page: %d", r.status)
	}
	if _, err := trusted.st.AddUser(context.Background(), "ana", "admin", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := trusted.do(t, http.MethodGet, "/admin/users", nil, hdr); r.status != 200 {
		t.Errorf("admin account on admin page: %d", r.status)
	}
	untrusted := newAuthFixture(t, web.AuthProxy, "10.0.0.0/8")
	if r := untrusted.do(t, http.MethodGet, "/incidents", nil, hdr); r.status != 401 {
		t.Errorf("headers from an untrusted peer: %d, want 401", r.status)
	}
}
