package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/incident/incidenttest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

const alertToken = "s3cret-token"

// archiveFixture is the console with the incident archive on a real SQLite
// file and the fake telemetry.
type archiveFixture struct {
	*fixture
	st *store.Store
}

func newArchiveFixture(t testing.TB) *archiveFixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tel := sharedTel()
	var srvLayout func(string, string) views.LayoutView
	f := newFixture(t, tel, func(o *web.Options) {
		inc, svc := archiveHandlers(handlers.IncidentDeps{
			Layout: func(title, nav string) views.LayoutView { return srvLayout(title, nav) },
			Now:    o.Now,
		}, st, tel, o.Diagnoser)
		o.Incidents, o.IncidentOpener = inc, svc
		o.Auth.WebhookToken = alertToken
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	return &archiveFixture{fixture: f, st: st}
}

func (f *archiveFixture) postAlert(t testing.TB, body string, token string) response {
	t.Helper()
	hdr := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		hdr["Authorization"] = "Bearer " + token
	}
	return f.do(t, http.MethodPost, "/api/v1/alerts/alertmanager", strings.NewReader(body), hdr)
}

type alertReply struct {
	Alerts []incident.AlertResult `json:"alerts"`
}

func decodeReply(t testing.TB, r response) alertReply {
	t.Helper()
	var rep alertReply
	if err := json.Unmarshal([]byte(r.body), &rep); err != nil {
		t.Fatalf("reply %q: %v", r.body, err)
	}
	return rep
}

func TestAlertmanagerWebhook(t *testing.T) {
	f := newArchiveFixture(t)
	firing := incidenttest.AlertBody("firing", "a1b2c3d4e5f60718", "llama-70b", "llama-70b-1", "TTFT p99 above 2 s", "")

	rejects := []struct {
		name, body, token string
		status            int
		want              string
	}{
		{"no token", firing, "", 401, "bearer token"},
		{"wrong token", firing, "nope", 401, "bearer token"},
		{"not JSON", "{", alertToken, 400, "not valid JSON"},
		{"wrong version", strings.Replace(firing, `"version":"4"`, `"version":"3"`, 1), alertToken, 400, `version`},
		{"no alerts", `{"version":"4","alerts":[]}`, alertToken, 400, `alerts`},
		{"bad status", strings.Replace(firing, `"status":"firing","labels"`, `"status":"burning","labels"`, 1), alertToken, 400, "alerts[0].status"},
		{"wrong type", `{"version":"4","alerts":"many"}`, alertToken, 400, `alerts`},
		{"too large", `{"version":"4","pad":"` + strings.Repeat("x", handlers.MaxAlertBody) + `"}`, alertToken, 413, "larger than"},
	}
	for _, tc := range rejects {
		t.Run(tc.name, func(t *testing.T) {
			r := f.postAlert(t, tc.body, tc.token)
			if r.status != tc.status || !strings.Contains(r.body, tc.want) {
				t.Errorf("status %d body %.300s; want %d mentioning %q", r.status, r.body, tc.status, tc.want)
			}
		})
	}

	r := f.postAlert(t, firing, alertToken)
	if r.status != 200 {
		t.Fatalf("firing: %d %s", r.status, r.body)
	}
	rep := decodeReply(t, r)
	if len(rep.Alerts) != 1 || rep.Alerts[0].Status != "opened" || rep.Alerts[0].IncidentID == 0 {
		t.Fatalf("firing reply = %+v", rep)
	}
	id := rep.Alerts[0].IncidentID

	// A retry (Alertmanager resends on timeouts) finds the same incident.
	rep = decodeReply(t, f.postAlert(t, firing, alertToken))
	if rep.Alerts[0].Status != "existing" || rep.Alerts[0].IncidentID != id {
		t.Errorf("retry reply = %+v, want existing %d", rep, id)
	}
	page, err := f.st.List(context.Background(), store.ListFilter{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("after retry: %d incidents, err %v; want 1", len(page.Items), err)
	}

	inc, err := f.st.Incident(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if inc.Scope != (metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}) || inc.Title != "TTFT p99 above 2 s" ||
		inc.Severity != "critical" || inc.Trigger != store.TriggerAlertmanager {
		t.Errorf("incident = %+v", inc.Summary)
	}
	if len(inc.Windows) != len(metrics.Catalog) || len(inc.Snapshot.Current) == 0 {
		t.Errorf("archived %d windows and %d current values; want every catalog series and a snapshot", len(inc.Windows), len(inc.Snapshot.Current))
	}
	if inc.RootCause != metrics.CauseKVCacheEviction {
		t.Errorf("diagnosis %q", inc.RootCause)
	}

	rep = decodeReply(t, f.postAlert(t, incidenttest.AlertBody("resolved", "a1b2c3d4e5f60718", "llama-70b", "llama-70b-1", "TTFT p99 above 2 s", ""), alertToken))
	if rep.Alerts[0].Status != "resolved" || rep.Alerts[0].IncidentID != id {
		t.Errorf("resolve reply = %+v", rep)
	}
	if inc, _ = f.st.Incident(context.Background(), id); inc.Alert.State != store.AlertResolved {
		t.Errorf("alert state after resolve = %s", inc.Alert.State)
	}

	// One message with several alerts: each is handled, in order.
	var alerts []string
	for i := 0; i < 7; i++ {
		alerts = append(alerts, fmt.Sprintf(`{"status":"firing","labels":{"alertname":"QueueBuilding","model_name":"qwen-7b","pod":"qwen-7b-%d"},`+
			`"annotations":{},"startsAt":"2026-11-30T04:50:0%dZ","endsAt":"0001-01-01T00:00:00Z","fingerprint":"bbbb00000000000%d"}`, i%2, i, i))
	}
	rep = decodeReply(t, f.postAlert(t, `{"version":"4","status":"firing","alerts":[`+strings.Join(alerts, ",")+`]}`, alertToken))
	ids := map[int64]bool{}
	for i, a := range rep.Alerts {
		if a.Status != "opened" || a.Fingerprint != fmt.Sprintf("bbbb00000000000%d", i) {
			t.Errorf("alert %d: %+v", i, a)
		}
		ids[a.IncidentID] = true
	}
	if len(rep.Alerts) != 7 || len(ids) != 7 {
		t.Errorf("7 alerts gave %d results and %d incidents", len(rep.Alerts), len(ids))
	}

	rep = decodeReply(t, f.postAlert(t, incidenttest.AlertBody("firing", "ffff000011112222", "", "", "GPU hot", ""), alertToken))
	if rep.Alerts[0].Status != "skipped" || !strings.Contains(rep.Alerts[0].Reason, "model_name") {
		t.Errorf("alert without a model: %+v", rep)
	}
	rep = decodeReply(t, f.postAlert(t, incidenttest.AlertBody("resolved", "9999999999999999", "llama-70b", "", "never seen", ""), alertToken))
	if rep.Alerts[0].Status != "skipped" {
		t.Errorf("resolve of unknown alert: %+v", rep)
	}
}

func TestWebhookDisabledWithoutToken(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := newFixture(t, sharedTel(), func(o *web.Options) {
		o.Incidents, _ = archiveHandlers(handlers.IncidentDeps{}, st, sharedTel(), o.Diagnoser)
	})
	r := f.do(t, http.MethodPost, "/api/v1/alerts/alertmanager", strings.NewReader(incidenttest.AlertBody("firing", "1", "m", "", "s", "")),
		map[string]string{"Authorization": "Bearer "})
	if r.status != 403 || !strings.Contains(r.body, "disabled") {
		t.Errorf("status %d body %s; want 403 disabled", r.status, r.body)
	}
}

// openViaAlert opens one incident and returns its id.
func (f *archiveFixture) openViaAlert(t testing.TB, fp, summary string) int64 {
	t.Helper()
	rep := decodeReply(t, f.postAlert(t, incidenttest.AlertBody("firing", fp, "llama-70b", "llama-70b-1", summary, ""), alertToken))
	if len(rep.Alerts) != 1 || rep.Alerts[0].IncidentID == 0 {
		t.Fatalf("open: %+v", rep)
	}
	return rep.Alerts[0].IncidentID
}

func form(kv ...string) (*strings.Reader, map[string]string) {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return strings.NewReader(v.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

func TestIncidentPageWorkflow(t *testing.T) {
	f := newArchiveFixture(t)
	hostile := `<script>alert("x")</script> '); DROP TABLE incidents;--`
	id := f.openViaAlert(t, "00000000000000aa", hostile)
	path := fmt.Sprintf("/incidents/%d", id)

	r := f.do(t, http.MethodGet, path, nil, nil)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %.500s", path, r.status, r.body)
	}
	for _, w := range []string{`data-testid="incident"`, `data-testid="panel-latency"`, `data-testid="panel-quality"`,
		`data-testid="chart-marker"`, `data-testid="diagnosis"`, `data-root-cause="kv_cache_eviction"`, `data-testid="review-correct"`, `data-testid="review-wrong-form"`,
		`data-testid="similar-row"`, `inc-118`, `data-testid="incident-title">&lt;script&gt;alert(`, `data-testid="nav"`, `Alertmanager alert VLLMHighTTFT`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("incident page lacks %q", w)
		}
	}
	if strings.Contains(r.body, `<script>alert(`) {
		t.Error("incident title rendered unescaped")
	}

	steps := []struct {
		name   string
		sub    string
		kv     []string
		status int
	}{
		{"label correct", "labels", []string{"verdict", "correct", "by", "ana"}, 303},
		{"note", "notes", []string{"body", "Scheduler queue looked fine; tokenizer pool saturated", "by", "ben"}, 303},
		{"empty note", "notes", []string{"body", " ", "by", "ben"}, 400},
		{"label wrong, new cause", "labels", []string{"verdict", "wrong", "new_cause", "Tokenizer pool saturation", "by", "cy", "note", "found it"}, 303},
		{"label wrong without cause", "labels", []string{"verdict", "wrong", "by", "cy"}, 400},
		{"bad verdict", "labels", []string{"verdict", "meh", "by", "cy"}, 400},
		{"rediagnose", "diagnoses", nil, 303},
	}
	for _, st := range steps {
		body, hdr := form(st.kv...)
		r := f.do(t, http.MethodPost, path+"/"+st.sub, body, hdr)
		if r.status != st.status {
			t.Errorf("%s: status %d, want %d; %.300s", st.name, r.status, st.status, r.body)
		}
		if st.status == 303 && r.header.Get("Location") != path {
			t.Errorf("%s: redirect to %q", st.name, r.header.Get("Location"))
		}
	}
	r = f.do(t, http.MethodGet, path, nil, nil)
	for _, w := range []string{`data-verdict="wrong"`, `Tokenizer pool saturation`, `data-testid="past-diagnosis"`,
		`tokenizer pool saturated`, `data-kind="label"`, `data-kind="note"`, `found it`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("after review, page lacks %q", w)
		}
	}
	if n := strings.Count(r.body, `data-kind="label"`); n != 2 {
		t.Errorf("timeline shows %d labels, want the 2 given", n)
	}

	// The note is searchable from the list.
	r = f.do(t, http.MethodGet, "/incidents?q=tokenizer", nil, nil)
	if r.status != 200 || strings.Count(r.body, `data-testid="incident-row"`) != 1 {
		t.Errorf("search: status %d, %d rows", r.status, strings.Count(r.body, `data-testid="incident-row"`))
	}
	r = f.do(t, http.MethodGet, "/incidents?q=nothingmatches", nil, nil)
	if !strings.Contains(r.body, `data-testid="incident-empty"`) {
		t.Error("empty search does not say so")
	}

	// Postmortem export escapes the hostile title.
	r = f.do(t, http.MethodGet, path+"/postmortem.md", nil, nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("postmortem: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, w := range []string{"# Incident", `\<script\>`, "## Diagnosis", "### Evidence", "### Recommended actions", "## Timeline", "Tokenizer pool saturation"} {
		if !strings.Contains(r.body, w) {
			t.Errorf("postmortem lacks %q", w)
		}
	}
	if strings.Contains(r.body, "<script>") {
		t.Error("postmortem carries raw HTML")
	}
	r = f.do(t, http.MethodGet, path+"/print", nil, nil)
	if r.status != 200 || !strings.Contains(r.body, "<svg") || strings.Contains(r.body, `data-testid="review-correct"`) || strings.Contains(r.body, `data-testid="nav"`) {
		t.Errorf("print page: status %d, svg %v, forms or nav present", r.status, strings.Contains(r.body, "<svg"))
	}
}

// TestIncidentsLearnFromLabels: with a real engine, an incident labelled
// with an engineer-created cause teaches the next diagnosis of the same
// state, and the new incident's page links the past one with its verdict,
// similarity and shared deviations.
func TestIncidentsLearnFromLabels(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tel := sharedTel()
	engine := diagnose.New(diagnose.Options{})
	var srvLayout func(string, string) views.LayoutView
	var inc *handlers.Incidents
	f := newFixture(t, tel, func(o *web.Options) {
		o.Diagnoser = engine
		var svc *incident.Service
		inc, svc = archiveHandlers(handlers.IncidentDeps{
			Layout: func(title, nav string) views.LayoutView { return srvLayout(title, nav) },
			Now:    o.Now,
		}, st, tel, engine)
		o.Incidents, o.IncidentOpener = inc, svc
		o.Auth.WebhookToken = alertToken
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	af := &archiveFixture{fixture: f, st: st}

	first := af.openViaAlert(t, "00000000000000d1", "First stall")
	page := af.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d", first), nil, nil)
	if !strings.Contains(page.body, `data-testid="similar-none"`) {
		t.Error("the first incident claims similar past incidents")
	}
	body, hdr := form("verdict", "wrong", "new_cause", "NCCL all-reduce stall", "by", "ana")
	if r := af.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", first), body, hdr); r.status != 303 {
		t.Fatalf("label: %d %.300s", r.status, r.body)
	}
	if n := engine.Cases().Len(); n != 1 {
		t.Fatalf("engine learned %d cases after one label, want 1", n)
	}

	second := af.openViaAlert(t, "00000000000000d2", "Second stall")
	page = af.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d", second), nil, nil)
	for _, w := range []string{`data-testid="similar-row"`, fmt.Sprintf(`href="/incidents/%d"`, first), "First stall",
		"NCCL all-reduce stall", "diagnosis corrected", "100%"} {
		if !strings.Contains(page.body, w) {
			t.Errorf("second incident page lacks %q", w)
		}
	}

	// A fresh console learns the same case from the archive at start.
	fresh := diagnose.New(diagnose.Options{})
	again := incident.New(incident.Options{Archive: st, Capture: tel, Diagnoser: fresh, Learner: fresh})
	if n, err := again.LoadCases(context.Background()); err != nil || n != 1 || fresh.Cases().Len() != 1 {
		t.Errorf("LoadCases: %d cases, err %v; engine holds %d", n, err, fresh.Cases().Len())
	}
}

var shareURL = regexp.MustCompile(`/share/([0-9a-f]{32})`)

func TestShareLinks(t *testing.T) {
	f := newArchiveFixture(t)
	id := f.openViaAlert(t, "00000000000000bb", "Queue building")
	other := f.openViaAlert(t, "00000000000000cc", "Another incident")
	path := fmt.Sprintf("/incidents/%d", id)
	body, hdr := form("ttl", "168h", "by", "ana")
	r := f.do(t, http.MethodPost, path+"/shares", body, hdr)
	if r.status != 201 {
		t.Fatalf("create share: %d %.300s", r.status, r.body)
	}
	m := shareURL.FindStringSubmatch(r.body)
	if m == nil {
		t.Fatal("the new link is not shown")
	}
	shared := f.do(t, http.MethodGet, "/share/"+m[1], nil, nil)
	if shared.status != 200 || !strings.Contains(shared.body, "Queue building") {
		t.Fatalf("shared view: %d", shared.status)
	}
	for _, no := range []string{`data-testid="nav"`, `<form`, `/incidents/` + fmt.Sprint(other), "Another incident", `href="/incidents"`} {
		if strings.Contains(shared.body, no) {
			t.Errorf("shared view shows %q", no)
		}
	}
	for _, bad := range []string{"00000000000000000000000000000000", "short", url.PathEscape("'); DROP TABLE share_links;--")} {
		if r := f.do(t, http.MethodGet, "/share/"+bad, nil, nil); r.status != 404 || !strings.Contains(r.body, "unknown, expired or revoked") {
			t.Errorf("token %q: %d, want 404", bad, r.status)
		}
	}
	links, err := f.st.Shares(context.Background(), id)
	if err != nil || len(links) != 1 {
		t.Fatalf("links %v %v", links, err)
	}
	r = f.do(t, http.MethodPost, fmt.Sprintf("%s/shares/%d/revoke", path, links[0].ID), nil, nil)
	if r.status != 303 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodGet, "/share/"+m[1], nil, nil); r.status != 404 {
		t.Errorf("revoked link: %d, want 404", r.status)
	}
	body, hdr = form("ttl", "10y", "by", "ana")
	if r := f.do(t, http.MethodPost, path+"/shares", body, hdr); r.status != 400 || !strings.Contains(r.body, "ttl") {
		t.Errorf("bad ttl: %d", r.status)
	}
}

func TestArchivePages(t *testing.T) {
	f := newArchiveFixture(t)
	id := f.openViaAlert(t, "00000000000000dd", "KV storm")
	body, hdr := form("verdict", "correct", "by", "ana")
	f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", id), body, hdr)
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/incidents", 200, []string{`data-testid="incident-list"`, `KV storm`, `data-testid="incident-filters"`}},
		{"/incidents?verdict=unreviewed", 200, []string{`data-testid="incident-empty"`}},
		{"/incidents?verdict=correct&model=llama-70b", 200, []string{`KV storm`}},
		{"/incidents?verdict=maybe", 400, []string{`verdict`}},
		{"/incidents?after=garbage", 400, []string{`after`}},
		{"/incidents?from=yesterday", 400, []string{`from`}},
		{"/incidents?limit=0", 400, []string{`limit`}},
		{"/incidents/abc", 400, []string{`id`}},
		{"/incidents/999", 404, []string{"There is no incident with this number."}},
		{"/accuracy", 200, []string{`data-testid="accuracy-overall"`, `100% correct`, `1 of 1`, `78%`, `data-testid="confusion"`, `data-testid="chart-accuracy-trend"`}},
		{"/kb", 200, []string{`data-testid="kb-list"`, `data-cause="kv_cache_eviction"`, `/kb/kv_cache_eviction`}},
		{"/kb/kv_cache_eviction", 200, []string{`data-testid="cause-title"`, `data-testid="cause-cases"`, `KV storm`, `data-testid="cause-actions"`, `100%`}},
		{"/kb/no_such_cause", 404, []string{"no such cause"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := f.do(t, http.MethodGet, tc.path, nil, nil)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d; %.400s", r.status, tc.status, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("lacks %q", w)
				}
			}
		})
	}
}

func TestListPaging(t *testing.T) {
	f := newArchiveFixture(t)
	for i := 0; i < 5; i++ {
		f.openViaAlert(t, fmt.Sprintf("%016x", i+1), fmt.Sprintf("incident %d", i))
	}
	seen := 0
	next := "/incidents?limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		r := f.do(t, http.MethodGet, next, nil, nil)
		seen += strings.Count(r.body, `data-testid="incident-row"`)
		m := regexp.MustCompile(`href="(/incidents\?[^"]*after=[^"]*)" data-testid="page-next"`).FindStringSubmatch(r.body)
		next = ""
		if m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if seen != 5 {
		t.Errorf("paged through %d incidents, want 5", seen)
	}
}

func TestIncidentAPI(t *testing.T) {
	f := newArchiveFixture(t)
	id := f.openViaAlert(t, "00000000000000ee", "API incident")
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"list", "GET", "/api/v1/incidents", "", 200, `"title":"API incident"`},
		{"show", "GET", fmt.Sprintf("/api/v1/incidents/%d", id), "", 200, `"diagnoses":[{`},
		{"missing", "GET", "/api/v1/incidents/4040", "", 404, `"error"`},
		{"note", "POST", fmt.Sprintf("/api/v1/incidents/%d/notes", id), `{"by":"bot","body":"restarted replica"}`, 201, `"body":"restarted replica"`},
		{"note unknown field", "POST", fmt.Sprintf("/api/v1/incidents/%d/notes", id), `{"by":"bot","text":"x"}`, 400, `unknown field`},
		{"label", "POST", fmt.Sprintf("/api/v1/incidents/%d/labels", id), `{"verdict":"wrong","true_cause":"prefix_cache_miss","by":"bot"}`, 201, `"true_cause":"prefix_cache_miss"`},
		{"label bad cause", "POST", fmt.Sprintf("/api/v1/incidents/%d/labels", id), `{"verdict":"wrong","true_cause":"nope","by":"bot"}`, 400, `unknown cause`},
		{"export md", "GET", fmt.Sprintf("/api/v1/incidents/%d/export", id), "", 200, `# Incident`},
		{"export json", "GET", fmt.Sprintf("/api/v1/incidents/%d/export?format=json", id), "", 200, `"labels":[{`},
		{"export bad", "GET", fmt.Sprintf("/api/v1/incidents/%d/export?format=pdf", id), "", 400, `format`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r response
			if tc.body != "" {
				r = f.do(t, tc.method, tc.path, strings.NewReader(tc.body), jsonHdr)
			} else {
				r = f.do(t, tc.method, tc.path, nil, nil)
			}
			if r.status != tc.status || !strings.Contains(r.body, tc.want) {
				t.Errorf("status %d body %.400s; want %d with %q", r.status, r.body, tc.status, tc.want)
			}
		})
	}
}

func TestDiagnoseNowOpensIncident(t *testing.T) {
	f := newArchiveFixture(t)
	r := f.do(t, http.MethodPost, "/scopes/llama-70b/llama-70b-1/diagnose", nil, nil)
	if r.status != 303 || !strings.HasPrefix(r.header.Get("Location"), "/incidents/") {
		t.Fatalf("diagnose now: %d to %q", r.status, r.header.Get("Location"))
	}
	page := f.do(t, http.MethodGet, r.header.Get("Location"), nil, nil)
	if page.status != 200 || !strings.Contains(page.body, "Diagnose now (manual)") || !strings.Contains(page.body, `data-testid="chart-marker"`) {
		t.Errorf("incident from diagnose now: %d", page.status)
	}
	if f.diag.Calls() != 1 {
		t.Errorf("engine ran %d times for one click, want 1", f.diag.Calls())
	}
}

// BenchmarkIncidentPageHTTP serves the full incident page (store read,
// chart layout from the archived windows, render) over HTTP.
func BenchmarkIncidentPageHTTP(b *testing.B) {
	f := newArchiveFixture(b)
	id := f.openViaAlert(b, "00000000000000ff", "KV storm")
	for i := 0; i < 5; i++ {
		body, hdr := form("body", fmt.Sprintf("note %d", i), "by", "ana")
		f.do(b, http.MethodPost, fmt.Sprintf("/incidents/%d/notes", id), body, hdr)
	}
	path := fmt.Sprintf("/incidents/%d", id)
	for b.Loop() {
		if r := f.do(b, http.MethodGet, path, nil, nil); r.status != 200 {
			b.Fatalf("status %d", r.status)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}

// TestArchivedWindowsCompleted opens an incident minutes after its alert
// started, so the window's last 15 minutes have not happened; viewing it
// later fills them in, and the snapshot stays as captured.
func TestArchivedWindowsCompleted(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tel := sharedTel()
	now := tel.End.Add(-20 * time.Minute)
	f := newFixture(t, tel, func(o *web.Options) {
		o.Now = func() time.Time { return now }
		o.Incidents, _ = archiveHandlers(handlers.IncidentDeps{Now: o.Now}, st, tel, o.Diagnoser)
		o.Auth.WebhookToken = alertToken
	})
	af := &archiveFixture{fixture: f, st: st}
	body := strings.Replace(incidenttest.AlertBody("firing", "00000000000000ab", "llama-70b", "llama-70b-1", "late window", ""),
		"2026-11-30T04:52:00.123456789Z", tel.End.Add(-25*time.Minute).Format(time.RFC3339Nano), 1)
	rep := decodeReply(t, af.postAlert(t, body, alertToken))
	id := rep.Alerts[0].IncidentID
	before, err := st.Incident(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	last := func(inc store.Incident) time.Time {
		var l time.Time
		for _, s := range inc.Windows {
			if n := len(s.Samples); n > 0 && s.Samples[n-1].T.After(l) {
				l = s.Samples[n-1].T
			}
		}
		return l
	}
	if last(before).After(now) {
		t.Fatalf("archived samples after the open time: %s > %s", last(before), now)
	}
	now = tel.End // twenty minutes later
	if r := af.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d", id), nil, nil); r.status != 200 {
		t.Fatalf("page: %d", r.status)
	}
	after, err := st.Incident(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if want := before.WindowEnd; last(after).Before(want.Add(-time.Minute)) {
		t.Errorf("windows end at %s after viewing, want close to the window end %s", last(after), want)
	}
	if fmt.Sprint(after.Snapshot.Current) != fmt.Sprint(before.Snapshot.Current) {
		t.Error("the snapshot changed")
	}
}
