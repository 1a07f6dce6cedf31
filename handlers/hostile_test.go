package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/casebook/casebook/incident/incidenttest"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

// hostile are script and SQL payloads put in every text field.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(2)>`,
	`'><svg onload=alert(3)>`,
	`javascript:alert(4)`,
	`'); DROP TABLE incidents; --`,
	`" OR 1=1 --`,
}

// TestHostileInputIsInert stores script and SQL payloads through every
// text field (alert summary and labels, notes, reviews, new causes, share
// creators, trace file and kernel names, account and token names, search)
// and reads them back through every page, the JSON API and the Markdown
// export: no payload comes back as markup, SQL is stored as text, and the
// archive stays whole.
func TestHostileInputIsInert(t *testing.T) {
	f := newAuthFixture(t, web.AuthNone, "")
	af := &archiveFixture{fixture: f.fixture, st: f.st}
	ctx := context.Background()
	var ids []int64
	for i, p := range hostile {
		// Alert summary becomes the incident title; the pod label its instance.
		body := incidenttest.AlertBody("firing", fmt.Sprintf("%016x", 0xf00+i), "llama-70b", "pod-"+fmt.Sprint(i), p, "")
		rep := decodeReply(t, af.postAlert(t, body, alertToken))
		if len(rep.Alerts) != 1 || rep.Alerts[0].IncidentID == 0 {
			t.Fatalf("alert with payload %q: %+v", p, rep)
		}
		id := rep.Alerts[0].IncidentID
		ids = append(ids, id)
		path := fmt.Sprintf("/incidents/%d", id)
		for _, post := range []struct{ sub, what string }{
			{"/notes", "body=" + enc(p) + "&by=" + enc(p)},
			{"/labels", "verdict=wrong&new_cause=" + enc(fmt.Sprintf("%s cause %d", p, i)) + "&by=" + enc(p) + "&note=" + enc(p)},
			{"/shares", "ttl=24h&by=" + enc(p)},
		} {
			r := f.do(t, http.MethodPost, path+post.sub, strings.NewReader(post.what), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			if r.status >= 400 {
				t.Fatalf("POST %s%s with %q: %d %.300s", path, post.sub, p, r.status, r.body)
			}
		}
		// A kernel trace whose file and kernel are named by the payload.
		tb, thdr := multipartBody(t, p+".json", chromeTrace(3, 100, 50, 10, p), "role", "incident")
		if r := f.do(t, http.MethodPost, path+"/traces", tb, thdr); r.status >= 400 {
			t.Fatalf("trace upload named %q: %d %.300s", p, r.status, r.body)
		}
		for _, post := range []struct{ path, what string }{
			{"/admin/users", "role=viewer&name=" + enc(fmt.Sprintf("%s %d", p, i))},
			{"/admin/tokens", "scope=read&name=" + enc(p)},
		} {
			r := f.do(t, http.MethodPost, post.path, strings.NewReader(post.what), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
			if r.status >= 400 {
				t.Fatalf("POST %s with %q: %d %.300s", post.path, p, r.status, r.body)
			}
		}
	}

	pages := []string{"/", "/incidents", "/kb", "/accuracy", "/admin/users", "/admin/tokens", "/admin/audit", "/storage"}
	for _, p := range hostile {
		pages = append(pages, "/incidents?q="+enc(p))
	}
	for _, id := range ids {
		pages = append(pages, fmt.Sprintf("/incidents/%d", id), fmt.Sprintf("/incidents/%d/print", id))
		shares, err := f.st.Shares(ctx, id)
		if err != nil || len(shares) == 0 {
			t.Fatalf("shares of %d: %v", id, err)
		}
		inc, err := f.st.Incident(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, "/kb/"+enc(inc.TrueCause), "/scopes/llama-70b/"+enc(inc.Scope.Instance))
	}
	seen := map[string]bool{}
	for _, path := range pages {
		r := f.do(t, http.MethodGet, path, nil, nil)
		if r.status >= 500 {
			t.Errorf("GET %s: %d", path, r.status)
			continue
		}
		for _, p := range hostile {
			if strings.ContainsAny(p, `<>"'`) && strings.Contains(r.body, p) {
				t.Errorf("GET %s returns %q unescaped", path, p)
			}
			if strings.Contains(r.body, html.EscapeString(p)) {
				seen[p] = true
			}
		}
		if strings.Contains(strings.ToLower(r.body), `href="javascript:`) {
			t.Errorf("GET %s has a javascript: link", path)
		}
	}
	for _, p := range hostile {
		if !seen[p] {
			t.Errorf("payload %q was never shown (escaped) on any page: the test proves nothing for it", p)
		}
	}

	// The Markdown export and the JSON API carry the payloads as text.
	for i, id := range ids {
		p := hostile[i]
		md := f.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d/postmortem.md", id), nil, nil)
		low := strings.ToLower(strings.ReplaceAll(md.body, `\<`, ""))
		for _, tag := range []string{"<script", "<img", "<svg"} {
			if strings.Contains(low, tag) {
				t.Errorf("postmortem of %d contains raw %s", id, tag)
			}
		}
		if strings.ContainsAny(p, "<>") && strings.Contains(md.body, p) {
			t.Errorf("postmortem of %d contains %q unescaped", id, p)
		}
		api := f.do(t, http.MethodGet, fmt.Sprintf("/api/v1/incidents/%d", id), nil, nil)
		if !strings.HasPrefix(api.header.Get("Content-Type"), "application/json") || strings.Contains(api.body, "<script") {
			t.Errorf("API incident %d: %s %.200s", id, api.header.Get("Content-Type"), api.body)
		}
		// SQL stays data: the note reads back exactly.
		notes, err := f.st.Notes(ctx, id)
		if err != nil || len(notes) != 1 || notes[0].Body != p || notes[0].Author != p {
			t.Errorf("note of %d = %+v, %v; want body and author %q", id, notes, err, p)
		}
	}
	list, err := f.st.List(ctx, store.ListFilter{})
	if err != nil || len(list.Items) != len(ids) {
		t.Errorf("archive after the payloads: %d incidents, %v; want %d", len(list.Items), err, len(ids))
	}
}

func enc(s string) string { return strings.ReplaceAll(urlQueryEscape(s), "+", "%20") }

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
