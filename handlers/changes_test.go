package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/incident/incidenttest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

// engineInfo is a fixed set of engine info labels.
type engineInfo map[string]string

func (e engineInfo) EngineInfo(context.Context, metrics.Scope, time.Time) (map[string]string, error) {
	return e, nil
}

// gpus is a fixed GPU inventory.
type gpus []change.GPU

func (g gpus) GPUs(context.Context, time.Duration, time.Time) ([]change.GPU, error) { return g, nil }

// receiver is a webhook endpoint that fails its first answer.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, b)
	r.hdrs = append(r.hdrs, req.Header.Clone())
	if len(r.bodies) == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

func newChangeFixture(t *testing.T, hook string) (*archiveFixture, *store.Store, *handlers.Changes, *clock) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tel := sharedTel()
	var srvLayout func(string, string) views.LayoutView
	layout := func(title, nav string) views.LayoutView { return srvLayout(title, nav) }
	clk := &clock{}
	var ch *handlers.Changes
	f := newFixture(t, tel, func(o *web.Options) {
		clk.t = o.Now()
		w, err := change.NewWebhook(change.WebhookOptions{URL: hook, Secret: "hook-secret", Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		sched, err := change.ParseSchedule("Mon-Fri 10:00-12:00 UTC")
		if err != nil {
			t.Fatal(err)
		}
		chart, _ := change.LookupHelmChart("production-stack")
		ch = handlers.NewChanges(context.Background(), handlers.ChangeDeps{
			Store: st, Capture: tel, Engine: engineInfo{"gpu_memory_utilization": "0.9", "block_size": "16"},
			GPUs:    gpus{{Host: "node-7", GPU: "0", MaxUtil: 0, Samples: 30}, {Host: "node-7", GPU: "1", MaxUtil: 0.01, Samples: 30}},
			Webhook: w, Schedule: &sched, BaseURL: "https://casebook.example", Layout: layout, Now: clk.now,
			OutcomeWindow: 8 * time.Minute, HelmChart: chart,
		})
		inc, svc := archiveHandlers(handlers.IncidentDeps{Layout: layout, Now: o.Now, Changes: ch}, st, tel, o.Diagnoser)
		o.Incidents, o.IncidentOpener = inc, svc
		o.Auth.WebhookToken = alertToken
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	return &archiveFixture{fixture: f, st: st}, st, ch, clk
}

// clock is a settable time for the change handlers.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func postForm(t *testing.T, f *archiveFixture, path string, form url.Values) response {
	t.Helper()
	return f.do(t, http.MethodPost, path, strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
}

func TestChangeRequestFromAnIncident(t *testing.T) {
	rec := &receiver{}
	hook := httptest.NewServer(rec)
	defer hook.Close()
	f, st, changes, clk := newChangeFixture(t, hook.URL)
	end := clk.now()
	if r := f.postAlert(t, incidenttest.AlertBody("firing", "c0ffee0000000001", "llama-70b", "llama-70b-1", "TTFT high", ""), alertToken); r.status != 200 {
		t.Fatalf("alert: %d %s", r.status, r.body)
	}
	page := f.get(t, "/incidents/1")
	for _, want := range []string{`data-testid="change-form"`, "Create change request", `data-testid="change-current">0.9<`, `name="current"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("incident page lacks %q", want)
		}
	}

	bad := []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"unknown action", url.Values{"action": {"reboot_everything"}}, 400, "no action"},
		{"relative rule without the current value", url.Values{"action": {"add_replica"}}, 400, "does not know the current replicas"},
		{"value out of range", url.Values{"action": {"raise_gpu_memory_utilization"}, "value": {"1.5"}}, 400, "outside"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := postForm(t, f, "/incidents/1/changes", tc.form)
			if r.status != tc.status || !strings.Contains(r.body, tc.want) {
				t.Errorf("status %d body %.300s; want %d mentioning %q", r.status, r.body, tc.status, tc.want)
			}
		})
	}

	r := postForm(t, f, "/incidents/1/changes", url.Values{"action": {"raise_gpu_memory_utilization"}, "by": {"ana"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/incidents/1/changes/1" {
		t.Fatalf("create: %d %v %s", r.status, r.header, r.body)
	}
	show := f.get(t, "/incidents/1/changes/1")
	for _, want := range []string{"--gpu-memory-utilization 0.95", "gpuMemoryUtilization: 0.95  # was 0.9", `data-testid="change-window">Next window`,
		"change-apply", "Give the KV cache more memory"} {
		if !strings.Contains(show.body, want) {
			t.Errorf("change page lacks %q", want)
		}
	}
	md := f.get(t, "/incidents/1/changes/1.md")
	if !strings.HasPrefix(md.header.Get("Content-Type"), "text/markdown") || !strings.Contains(md.body, "](https://casebook.example/incidents/1)") {
		t.Errorf("markdown: %s %.300s", md.header.Get("Content-Type"), md.body)
	}
	js := f.get(t, "/incidents/1/changes/1.json")
	var doc change.Request
	if err := json.Unmarshal([]byte(js.body), &doc); err != nil || doc.Change == nil || doc.Change.Current != "0.9" || doc.Change.Proposed != "0.95" || doc.Window == nil {
		t.Fatalf("json: %v %.300s", err, js.body)
	}

	// The webhook gets it: a 503, then a retry that succeeds.
	var ch store.Change
	for range 500 {
		var err error
		if ch, err = st.Change(context.Background(), 1, 1); err != nil {
			t.Fatal(err)
		}
		if ch.Delivery != store.DeliveryPending {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ch.Delivery != store.DeliveryDelivered || len(ch.Attempts) != 2 || ch.Attempts[0].Code != 503 || ch.Status != store.ChangeSent {
		t.Fatalf("delivery %s, status %s, attempts %+v", ch.Delivery, ch.Status, ch.Attempts)
	}
	rec.mu.Lock()
	for i, h := range rec.hdrs {
		if h.Get(change.IdempotencyHeader) != doc.ID || !change.Verify([]byte("hook-secret"), rec.bodies[i], h.Get(change.SignatureHeader)) {
			t.Errorf("webhook request %d: key %q, signature %q", i, h.Get(change.IdempotencyHeader), h.Get(change.SignatureHeader))
		}
	}
	rec.mu.Unlock()

	// Scale-out advice carries the capacity check.
	if r := postForm(t, f, "/incidents/1/changes", url.Values{"action": {"add_replica"}, "current": {"2"}}); r.status != http.StatusSeeOther {
		t.Fatalf("add replica: %d %s", r.status, r.body)
	}
	if s := f.get(t, "/incidents/1/changes/2"); !strings.Contains(s.body, "2 idle GPUs over the last 15 minutes on node-7 (2)") || !strings.Contains(s.body, "replicaCount: 3  # was 2") {
		t.Errorf("capacity or helm missing on the replica change")
	}

	// Applied ten minutes before the fake's storm ends: the eight minutes
	// before it were calm, the window after it holds the storm, so the
	// expected drop in preemptions and TTFT did not happen.
	clk.set(end.Add(-10 * time.Minute))
	if r := postForm(t, f, "/incidents/1/changes/1/status", url.Values{"status": {"applied"}}); r.status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", r.status, r.body)
	}
	if n, err := changes.MeasureDue(context.Background()); err != nil || n != 0 {
		t.Fatalf("measured %d before the window passed (%v)", n, err)
	}
	if s := f.get(t, "/incidents/1/changes/1"); !strings.Contains(s.body, `data-testid="change-outcome-due"`) {
		t.Errorf("the applied change does not say when its outcome is due")
	}
	clk.set(end.Add(time.Minute))
	if n, err := changes.MeasureDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("measured %d after the window (%v)", n, err)
	}
	measured, err := st.Change(context.Background(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var o change.Outcome
	if err := json.Unmarshal(measured.Outcome, &o); err != nil || measured.Verdict != change.VerdictNotExpected {
		t.Fatalf("outcome %v %s %s", err, measured.Verdict, measured.Outcome)
	}
	for _, e := range o.Effects {
		if e.Metric == metrics.TTFT && !(e.After > e.Before && e.Verdict == change.VerdictNotExpected) {
			t.Errorf("TTFT outcome %+v: the storm raised it, want not_expected", e)
		}
	}
	if s := f.get(t, "/incidents/1/changes/1"); !strings.Contains(s.body, `data-testid="change-verdict"`) || !strings.Contains(s.body, "moved the other way") {
		t.Errorf("the change page does not show the measured outcome")
	}
	if r := postForm(t, f, "/incidents/1/changes/1/status", url.Values{"status": {"done"}}); r.status != 400 {
		t.Errorf("bad status: %d", r.status)
	}
	page = f.get(t, "/incidents/1")
	for _, want := range []string{`data-kind="change"`, `data-kind="applied"`, `href="/incidents/1/changes/1"`, `data-testid="changes"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("incident page lacks %q after the change", want)
		}
	}
	if pm := f.get(t, "/incidents/1/postmortem.md"); !strings.Contains(pm.body, "## Change requests\n\n- ") || !strings.Contains(pm.body, "outcome: not the expected effect (/incidents/1/changes/1)") {
		t.Errorf("the postmortem lacks the change requests:\n%s", pm.body)
	}
	var api struct {
		Changes []store.Change `json:"changes"`
	}
	if r := f.get(t, "/api/v1/incidents/1/changes"); json.Unmarshal([]byte(r.body), &api) != nil || len(api.Changes) != 2 ||
		api.Changes[0].Verdict != change.VerdictNotExpected || len(api.Changes[0].Attempts) != 2 || api.Changes[1].After != "3" {
		t.Errorf("API list: %d %.500s", r.status, r.body)
	}
	if r := f.get(t, "/api/v1/incidents/9/changes"); r.status != 404 {
		t.Errorf("API list of an unknown incident: %d", r.status)
	}
	kb := f.get(t, "/kb/kv_cache_eviction")
	if !strings.Contains(kb.body, "Applied once; had the expected effect 0 times of 1 measured.") {
		t.Errorf("knowledge base lacks the action's outcome:\n%.2000s", kb.body)
	}
	for path, status := range map[string]int{"/incidents/1/changes/9": 404, "/incidents/1/changes/1.pdf": 400, "/incidents/2/changes/1": 404} {
		if r := f.get(t, path); r.status != status {
			t.Errorf("%s: %d, want %d", path, r.status, status)
		}
	}
}

func (f *fixture) get(t testing.TB, path string) response {
	t.Helper()
	return f.do(t, http.MethodGet, path, nil, nil)
}

func TestChangeDeliveryRefusedAndResent(t *testing.T) {
	var mu sync.Mutex
	code := http.StatusUnprocessableEntity
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	defer hook.Close()
	f, st, _, _ := newChangeFixture(t, hook.URL)
	if r := f.postAlert(t, incidenttest.AlertBody("firing", "c0ffee0000000002", "llama-70b", "llama-70b-1", "TTFT high", ""), alertToken); r.status != 200 {
		t.Fatalf("alert: %d %s", r.status, r.body)
	}
	if r := postForm(t, f, "/incidents/1/changes", url.Values{"action": {"raise_gpu_memory_utilization"}}); r.status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	wait := func(want string, attempts int) store.Change {
		t.Helper()
		var ch store.Change
		for range 500 {
			var err error
			if ch, err = st.Change(context.Background(), 1, 1); err != nil {
				t.Fatal(err)
			}
			if ch.Delivery == want && len(ch.Attempts) == attempts {
				return ch
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("delivery %s after %d attempts, want %s after %d", ch.Delivery, len(ch.Attempts), want, attempts)
		return ch
	}
	// A 422 is the receiver's final word: no retry.
	ch := wait(store.DeliveryFailed, 1)
	if ch.Attempts[0].Code != 422 || ch.Status != store.ChangeProposed {
		t.Errorf("after the refusal: %+v", ch)
	}
	page := f.get(t, "/incidents/1/changes/1")
	for _, want := range []string{"Failed after 1 attempt.", `data-testid="change-redeliver"`, "422 Unprocessable Entity"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("change page lacks %q", want)
		}
	}
	if inc := f.get(t, "/incidents/1"); !strings.Contains(inc.body, "(webhook: failed)") {
		t.Errorf("the incident's timeline does not show the failed delivery")
	}
	mu.Lock()
	code = http.StatusOK
	mu.Unlock()
	if r := postForm(t, f, "/incidents/1/changes/1/deliver", nil); r.status != http.StatusSeeOther {
		t.Fatalf("resend: %d %s", r.status, r.body)
	}
	ch = wait(store.DeliveryDelivered, 2)
	if !ch.Attempts[1].OK || ch.Attempts[1].Attempt != 2 || ch.RoundStart != 1 || ch.Status != store.ChangeSent {
		t.Errorf("after resending: %+v", ch)
	}
}
