//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/casebook/casebook/internal/route"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/views"
)

// TestBrowserReview drives a real `casebook serve` on the demo cluster
// with headless Chromium through the review: incidents opened by an
// Alertmanager webhook are marked correct with one click and wrong with a
// cause in two, at desktop (1280×800) and phone (390×844) size, without
// scrolling first; the review queue is walked with the keyboard; and a
// share link unfurls as a crawler sees it, while a non-shared incident's
// preview is refused.
func TestBrowserReview(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test starts casebook and chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const token = "review-test-webhook-token"
	base, done := serveDemo(t, ctx, token)
	defer func() { cancel(); <-done }()

	// Faults on every instance, then seven incidents from one Alertmanager
	// message once the faults show: two per viewport for the verdicts,
	// three for the queue.
	for i, sc := range alertScopes {
		injectFault(t, base, []string{"kv_cache_eviction", "gpu_throttling", "engine_errors", "queue_backlog"}[i], sc[0]+"/"+sc[1])
	}
	time.Sleep(40 * time.Second) // a minute's means must move: the snapshot is the mean of the last minute
	ids := openFromAlerts(t, base, token, 7)

	br := testenv.Chromium(t, chromedp.Env("TZ=Europe/Berlin"), chromedp.Flag("hide-scrollbars", true))
	for i, vp := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		f := &flow{t: t, br: br, base: base, width: vp.width}
		correct, wrong := ids[2*i], ids[2*i+1]

		// Correct: one click on a button the first screen shows.
		f.openAt(vp.width, vp.height, fmt.Sprintf("review-%s-incident", vp.name), route.URL(route.IncidentShow, correct), `[data-testid="review-correct"]`)
		for _, sel := range []string{`[data-testid="answer-cause"]`, `[data-testid="answer-confidence"]`, `[data-testid="answer-evidence"] li`, `[data-testid="review-correct"]`, `[data-testid="review-wrong-open"]`} {
			f.inViewport(sel)
		}
		f.click(`[data-testid="review-correct"]`)
		f.waitJS("the verdict saved in place", `document.querySelector('[data-testid="review"]').getAttribute("data-verdict") === "correct"`)
		f.noReload()
		if v := f.text(`[data-testid="incident-verdict"]`); !strings.Contains(v, "correct") {
			t.Errorf("%s: the page says %q after Correct", vp.name, v)
		}
		if got := apiIncident(t, base, correct); got.Verdict != "correct" {
			t.Errorf("%s: incident %d stored verdict %q after one click on Correct", vp.name, correct, got.Verdict)
		}
		f.shot(fmt.Sprintf("review-%s-correct", vp.name))

		// Wrong: open the picker, pick a cause: two clicks.
		f.openAt(vp.width, vp.height, fmt.Sprintf("review-%s-incident-2", vp.name), route.URL(route.IncidentShow, wrong), `[data-testid="review-wrong-open"]`)
		f.inViewport(`[data-testid="review-wrong-open"]`)
		diagnosed := f.eval(`document.querySelector('[data-testid="diagnosis"]').getAttribute("data-root-cause")`)
		f.click(`[data-testid="review-wrong-open"]`)
		f.waitJS("the cause picker", `!!document.querySelector('[data-testid="review-wrong"][open] [data-testid="review-cause"]')`)
		f.shot(fmt.Sprintf("review-%s-picker", vp.name))
		if problems := f.eval(pageChecks); problems != "" {
			t.Errorf("%s with the picker open:\n%s", vp.name, problems)
		}
		cause := f.eval(`document.querySelector('[data-testid="review-cause"]').value`)
		if cause == "" || cause == diagnosed {
			t.Fatalf("%s: the picker's first cause is %q (diagnosed %q)", vp.name, cause, diagnosed)
		}
		f.click(`[data-testid="review-cause"]`)
		f.waitJS("the wrong verdict saved", `document.querySelector('[data-testid="review"]').getAttribute("data-verdict") === "wrong"`)
		f.noReload()
		if got := apiIncident(t, base, wrong); got.Verdict != "wrong" || got.TrueCause != cause {
			t.Errorf("%s: incident %d stored %q with true cause %q, want wrong with %q", vp.name, wrong, got.Verdict, got.TrueCause, cause)
		}
		f.shot(fmt.Sprintf("review-%s-wrong", vp.name))
	}

	// The review queue, from the keyboard: c on the first, w and a number
	// on the second, k back and j forward, then n with a note and c on the
	// third.
	q := &flow{t: t, br: br, base: base, width: 1280}
	q.openAt(1280, 800, "review-queue", "/review", `[data-testid="queue-item"].current`)
	queued := q.eval(`Array.prototype.map.call(document.querySelectorAll('[data-testid="queue-item"]'), function (e) { return e.getAttribute("data-incident-id"); }).join(",")`)
	order := strings.Split(queued, ",")
	if len(order) != 3 {
		t.Fatalf("the queue lists %q, want the three unreviewed incidents", queued)
	}
	left := q.eval(`document.querySelector("[data-left]").getAttribute("data-left")`)
	q.keys("c")
	q.waitJS("the first verdict", `document.querySelectorAll('[data-testid="queue-item"].done').length === 1 && document.querySelector('[data-testid="queue-item"].current').getAttribute("data-incident-id") === `+strconv.Quote(order[1]))
	causeTwo := q.eval(`document.querySelector('[data-testid="queue-item"].current [data-cause-n="2"]').value`)
	q.keys("w")
	q.waitJS("the picker of the second", `!!document.querySelector('[data-testid="queue-item"].current details.review-wrong[open]')`)
	q.shot("review-queue-picker")
	q.keys("2")
	q.waitJS("the second verdict", `document.querySelectorAll('[data-testid="queue-item"].done').length === 2`)
	q.keys("k")
	q.waitJS("k to the second", `document.querySelector('[data-testid="queue-item"].current').getAttribute("data-incident-id") === `+strconv.Quote(order[1]))
	q.keys("j")
	q.waitJS("j to the third", `document.querySelector('[data-testid="queue-item"].current').getAttribute("data-incident-id") === `+strconv.Quote(order[2]))
	const note = "Seen from the queue: same node as last week."
	q.keys("n")
	q.waitJS("the note field", `document.activeElement && document.activeElement.name === "body"`)
	q.keys(note + "\r")
	q.waitJS("the note saved", `/Note saved/.test(document.querySelector('[data-testid="queue-item"].current details.queue-note summary').textContent)`)
	q.keys("c")
	q.waitJS("the third verdict", `document.querySelectorAll('[data-testid="queue-item"].done').length === 3`)
	q.noReload()
	q.shot("review-queue-done")
	if n, _ := strconv.Atoi(left); q.eval(`document.querySelector("[data-left]").getAttribute("data-left")`) != strconv.Itoa(max(n-3, 0)) {
		t.Errorf("what is left did not count down from %s", left)
	}
	for i, want := range []struct{ verdict, cause string }{{"correct", ""}, {"wrong", causeTwo}, {"correct", ""}} {
		id, _ := strconv.ParseInt(order[i], 10, 64)
		got := apiIncident(t, base, id)
		if got.Verdict != want.verdict || (want.cause != "" && got.TrueCause != want.cause) {
			t.Errorf("queue item %d (incident %d): %q / %q, want %q / %q", i+1, id, got.Verdict, got.TrueCause, want.verdict, want.cause)
		}
	}
	if md := httpText(t, base+route.URL(route.IncidentShow, mustInt(t, order[2]))+"/postmortem.md", nil); !strings.Contains(md, note) {
		t.Errorf("the note typed in the queue is not on incident %s", order[2])
	}
	q.openAt(1280, 800, "review-queue-empty", "/review", `[data-testid="queue-empty"]`)
	q.openAt(390, 844, "review-queue-empty-390", "/review", `[data-testid="queue-empty"]`)

	// Link previews: share one incident through the page, then fetch as a
	// crawler does (no cookies).
	shared := ids[0]
	f := &flow{t: t, br: br, base: base, width: 1280}
	f.openAt(1280, 800, "review-share", route.URL(route.IncidentShow, shared), `[data-testid="share-form"]`)
	f.do("fill the share form", chromedp.SendKeys(chromedp.CSS(`[data-testid="share-form"] input[name=by]`), "Dana On-call"))
	f.submit("create a share link", `[data-testid="share-form"] button[type=submit]`, `!!document.querySelector('[data-testid="share-created"] code')`)
	shareURL := f.text(`[data-testid="share-created"] code`)
	su, err := url.Parse(shareURL)
	if err != nil || !strings.HasPrefix(su.Path, "/share/") {
		t.Fatalf("share link %q", shareURL)
	}
	page := httpText(t, base+su.Path, nil)
	m := regexp.MustCompile(`<meta property="og:image" content="([^"]+)"`).FindStringSubmatch(page)
	if m == nil || !strings.HasSuffix(m[1], su.Path+"/preview.png") {
		t.Fatalf("the share page's og:image is %v, want %s/preview.png", m, su.Path)
	}
	for _, tag := range []string{`property="og:title"`, `property="og:description"`, `name="twitter:card" content="summary_large_image"`} {
		if !strings.Contains(page, tag) {
			t.Errorf("the share page lacks %s", tag)
		}
	}
	img := crawl(t, base+su.Path+"/preview.png")
	if img.status != 200 {
		t.Fatalf("a crawler fetching the share preview gets %d", img.status)
	}
	checkPreviewPNG(t, img.body)
	if r := crawl(t, base+route.URL(route.IncidentShow, ids[1])+"/preview.png"); r.status != http.StatusForbidden {
		t.Errorf("a crawler fetching a non-shared incident's preview gets %d, want 403", r.status)
	}
	g := &flow{t: t, br: testenv.Chromium(t, chromedp.Env("TZ=Europe/Berlin"), chromedp.Flag("hide-scrollbars", true)), base: base}
	g.openAt(1280, 800, "review-share-page-1280", su.RequestURI(), `[data-testid="answer-cause"]`)
	g.inViewport(`[data-testid="answer-evidence"] li`)
	g.openAt(390, 844, "review-share-page-390", su.RequestURI(), `[data-testid="answer-cause"]`)
	f.openAt(1280, 800, "review-print-1280", route.URL(route.IncidentShow, shared)+"/print", `[data-testid="answer-cause"]`)
	f.openAt(390, 844, "review-print-390", route.URL(route.IncidentShow, shared)+"/print", `[data-testid="answer-cause"]`)
	f.openAt(1280, 800, "review-accuracy-1280", "/accuracy", `[data-testid="to-review-queue"]`)

	if errs := br.PageErrors(); len(errs) > 0 {
		t.Errorf("the pages reported script errors:\n%s", strings.Join(errs, "\n"))
	}
}

// alertScopes are the demo cluster's instances, as model and pod.
var alertScopes = [][2]string{{"llama-3.1-8b-instruct", "llama-8b-0"}, {"qwen2.5-32b-instruct", "qwen-32b-1"}, {"llama-3.1-8b-instruct", "llama-8b-1"}, {"qwen2.5-32b-instruct", "qwen-32b-0"}}

// serveDemo runs `casebook serve` on the demo cluster (2 s scrapes, no
// detector, the given webhook token) until ctx ends, and waits for it to
// be ready; done delivers its exit.
func serveDemo(t *testing.T, ctx context.Context, token string) (base string, done <-chan error) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	base = "http://" + addr
	done = runInBackground(t, ctx, "casebook serve (demo)", "serve", "--listen", addr, "--data", t.TempDir(),
		"--scrape-interval", "2s", "--log-level", "warn", "--detect", "off", "--webhook-token", token)
	testenv.WaitFor(t, ctx, 150*time.Second, "casebook serve to be ready (demo back-fill)", func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("casebook serve exited: %v", err)
		default:
		}
		return httpOK(base + "/readyz")
	})
	return base, done
}

// openFromAlerts posts one Alertmanager message with n firing alerts on
// the demo's instances and returns the incidents they opened, in order.
func openFromAlerts(t *testing.T, base, token string, n int) []int64 {
	t.Helper()
	scopes := alertScopes
	var alerts []string
	for i := range n {
		sc := scopes[i%len(scopes)]
		starts := time.Now().UTC().Add(-time.Duration(i) * time.Second).Format(time.RFC3339)
		alerts = append(alerts, fmt.Sprintf(`{"status":"firing","labels":{"alertname":"VLLMHighTTFT","severity":"critical","model_name":%q,"pod":%q},
			"annotations":{"summary":"TTFT p99 above 2 s"},"startsAt":%q,"endsAt":"0001-01-01T00:00:00Z","fingerprint":"%016x"}`,
			sc[0], sc[1], starts, 0xab00+i))
	}
	body := `{"version":"4","groupKey":"{}:{alertname=\"VLLMHighTTFT\"}","status":"firing","receiver":"casebook",
		"groupLabels":{"alertname":"VLLMHighTTFT"},"commonLabels":{"alertname":"VLLMHighTTFT"},"commonAnnotations":{},
		"externalURL":"http://am:9093","alerts":[` + strings.Join(alerts, ",") + `]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/alerts/alertmanager", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep struct {
		Alerts []struct {
			IncidentID int64  `json:"incident_id"`
			Error      string `json:"error"`
		} `json:"alerts"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &rep); err != nil || resp.StatusCode != http.StatusOK || len(rep.Alerts) != n {
		t.Fatalf("webhook: %s %v: %s", resp.Status, err, raw)
	}
	var ids []int64
	for _, a := range rep.Alerts {
		if a.IncidentID == 0 {
			t.Fatalf("an alert opened no incident: %s", raw)
		}
		ids = append(ids, a.IncidentID)
	}
	return ids
}

type apiSummary struct {
	Verdict   string `json:"verdict"`
	TrueCause string `json:"true_cause"`
}

// apiIncident reads an incident's stored review from the JSON API.
func apiIncident(t *testing.T, base string, id int64) apiSummary {
	t.Helper()
	var p struct {
		Incident apiSummary `json:"incident"`
	}
	if err := json.Unmarshal([]byte(httpText(t, fmt.Sprintf("%s/api/v1/incidents/%d", base, id), nil)), &p); err != nil {
		t.Fatalf("incident %d from the API: %v", id, err)
	}
	return p.Incident
}

// injectFault starts a fault on the demo cluster through the fault
// panel's form, as a browser posts it.
func injectFault(t *testing.T, base, cause, scope string) {
	t.Helper()
	resp, err := http.Get(base + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var csrf string
	for _, c := range resp.Cookies() {
		if c.Name == "casebook_csrf" {
			csrf = c.Value
		}
	}
	form := url.Values{"cause": {cause}, "scope": {scope}, "severity": {"1"}, "duration": {"30m"}, "csrf_token": {csrf}}
	req, _ := http.NewRequest(http.MethodPost, base+"/faults", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "casebook_csrf", Value: csrf})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err = c.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("inject %s on %s: %s", cause, scope, resp.Status)
	}
}

type crawled struct {
	status int
	body   []byte
}

// crawl fetches url as a link-unfurling crawler: no cookies, its own
// user agent.
func crawl(t *testing.T, u string) crawled {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return crawled{resp.StatusCode, b}
}

func httpText(t *testing.T, u string, hdr map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	return string(b)
}

// checkPreviewPNG decodes the preview, saves it beside the screenshots
// and checks it is the card size and far from blank.
func checkPreviewPNG(t *testing.T, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the share preview is not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() != views.PreviewWidth || r.Dy() != views.PreviewHeight {
		t.Errorf("the preview is %v", r)
	}
	testenv.SavePNG(t, browserOut, "review-share-preview", b, 4) // flat colours, no anti-aliasing
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// openAt navigates at a viewport size, waits for sel, checks the layout
// and photographs the page.
func (f *flow) openAt(width, height int64, name, path, sel string) {
	f.t.Helper()
	f.do("open "+path,
		chromedp.EmulateViewport(width, height),
		chromedp.Navigate(f.base+path),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	)
	if problems := f.eval(pageChecks); problems != "" {
		f.t.Errorf("%s at %d px:\n%s", path, width, problems)
	}
	f.eval(`(window.__casebookPage = true, "marked")`)
	f.shot(name)
}

// inViewport fails unless sel is wholly inside the viewport with the page
// not scrolled: what the first screen shows.
func (f *flow) inViewport(sel string) {
	f.t.Helper()
	got := f.eval(`(function () {
		var e = document.querySelector(` + strconv.Quote(sel) + `);
		if (!e) return "missing";
		var r = e.getBoundingClientRect();
		if (window.scrollY !== 0) return "page scrolled to " + window.scrollY;
		if (r.width === 0 || r.height === 0) return "not shown";
		if (r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth)
			return "at " + Math.round(r.left) + "," + Math.round(r.top) + "-" + Math.round(r.right) + "," + Math.round(r.bottom) + " outside " + window.innerWidth + "x" + window.innerHeight;
		return ""; })()`)
	if got != "" {
		f.t.Errorf("%s is not on the first screen at %s: %s", sel, f.where(), got)
	}
}

// click is one user click on a visible element.
func (f *flow) click(sel string) {
	f.t.Helper()
	f.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// noReload fails when the page was navigated since openAt.
func (f *flow) noReload() {
	f.t.Helper()
	if f.eval(`String(window.__casebookPage === true)`) != "true" {
		f.t.Errorf("the page reloaded at %s; the review should save in place", f.where())
	}
}

// keys types at the focused element.
func (f *flow) keys(s string) {
	f.t.Helper()
	f.do("type "+strconv.Quote(s), chromedp.KeyEvent(s))
}
