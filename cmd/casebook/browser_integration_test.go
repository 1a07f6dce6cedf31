//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
)

// browserOut is where the flow's screenshots go, from cmd/casebook.
var browserOut = filepath.Join("..", "..", "testout", "browser")

// TestBrowserFlow drives a real `casebook serve` on the demo cluster with
// headless Chromium through the on-call path: inject a fault, open the
// overview, drill into a scope, zoom a chart by dragging, diagnose now,
// mark the diagnosis wrong with the real cause, add a note, export the
// postmortem, share the incident and open the link in a second browser
// that shares nothing with the first, and see the accuracy page move.
// Every page is photographed under testout/browser/ and checked for
// overflow, labelled form controls and status shown by more than colour
// at desktop and phone widths.
func TestBrowserFlow(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test starts casebook and chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // the demo back-fill alone takes up to 150 s on a busy machine
	defer cancel()

	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	base := "http://" + addr
	done := runInBackground(t, ctx, "casebook serve (demo)", "serve", "--listen", addr, "--data", t.TempDir(),
		"--scrape-interval", "2s", "--log-level", "warn")
	defer func() { cancel(); <-done }()
	testenv.WaitFor(t, ctx, 150*time.Second, "casebook serve to be ready (demo back-fill)", func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("casebook serve exited: %v", err)
		default:
		}
		return httpOK(base + "/readyz")
	})

	br := testenv.Chromium(t, chromedp.Env("TZ=Europe/Berlin"), chromedp.Flag("hide-scrollbars", true))
	f := &flow{t: t, br: br, base: base}
	var visited []string // paths for the layout checks

	// The accuracy page before any review.
	f.open("accuracy-before", "/accuracy", `[data-testid="accuracy-overall"]`)
	before := f.text(`[data-testid="accuracy-overall"]`)
	if !strings.Contains(before, "0 of 0") {
		t.Errorf("accuracy before any review reads %q, want 0 of 0 reviewed", before)
	}

	// 1. Inject a fault through the console's fault panel.
	f.open("faults", "/faults", `[data-testid="fault-form"]`)
	visited = append(visited, "/faults")
	scope := f.eval(`(function () {
		var o = Array.prototype.slice.call(document.querySelectorAll('[data-testid="fault-form"] select[name=scope] option'));
		var inst = o.filter(function (x) { return x.value.indexOf("/") > 0; });
		return (inst[0] || o[0] || {value: ""}).value; })()`)
	model, instance, _ := strings.Cut(scope, "/")
	if model == "" || instance == "" {
		t.Fatalf("the fault panel offers no instance scope (got %q)", scope)
	}
	const injected = metrics.CauseEngineErrors
	f.do("fill the fault form",
		chromedp.SetValue(chromedp.CSS(`[data-testid="fault-form"] select[name=cause]`), injected),
		chromedp.SetValue(chromedp.CSS(`[data-testid="fault-form"] select[name=scope]`), scope),
		chromedp.SetValue(chromedp.CSS(`[data-testid="fault-form"] input[name=severity]`), "1"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="fault-form"] input[name=duration]`), "30m"),
	)
	f.submit("inject the fault", `[data-testid="fault-form"] button[type=submit]`, `!!document.querySelector('[data-testid="fault-row"]')`)
	f.shot("faults-injected")

	// 2. Overview, then drill into the faulted scope.
	f.open("overview", "/", `[data-testid="scopes"]`)
	visited = append(visited, "/")
	f.submit("drill into "+scope, rowLink(scope, model), `!!document.querySelector('[data-testid="waterfall"]')`)
	if !strings.Contains(f.location().Path, "/scopes/"+model) {
		t.Fatalf("drilling into %s landed on %s", scope, f.location())
	}
	if f.location().Path != "/scopes/"+model+"/"+instance {
		// The overview lists models; the model page lists its instances.
		f.shot("scope-model")
		visited = append(visited, f.location().RequestURI())
		f.submit("open instance "+instance, `[data-testid="instances"] a[href$="/`+instance+`"], [data-testid="instances"] a[href*="/`+instance+`?"]`, `!!document.querySelector('[data-testid="waterfall"]')`)
	}
	scopeURL := f.location()
	f.shot("scope-instance")
	visited = append(visited, scopeURL.RequestURI())

	// 3. Zoom the first chart by dragging across its middle.
	const chart = `svg.chart-svg`
	t0, t1 := f.chartWindow(chart)
	f.do("scroll the chart into view", chromedp.ScrollIntoView(chromedp.CSS(chart)))
	box := f.rect(chart)
	y := box.Top + box.Height/2
	f.do("drag across the chart",
		chromedp.DragAndDropXY(box.Left+0.35*box.Width, y, box.Left+0.65*box.Width, y, 8))
	f.waitJS("the zoomed page", `location.search.indexOf("from=") >= 0 && document.readyState === "complete" && !!document.querySelector('[data-testid="waterfall"]')`)
	zoomed := f.location()
	from, ferr := time.Parse(time.RFC3339, zoomed.Query().Get("from"))
	to, terr := time.Parse(time.RFC3339, zoomed.Query().Get("to"))
	if ferr != nil || terr != nil || zoomed.Query().Has("range") {
		t.Fatalf("zoomed URL %s: from %v, to %v", zoomed, ferr, terr)
	}
	if !from.After(t0) || !to.Before(t1) || !from.Before(to) {
		t.Errorf("zoom %s..%s is not inside the dragged chart's window %s..%s", from, to, t0, t1)
	}
	z0, z1 := f.chartWindow(chart)
	if z0.Sub(from).Abs() > time.Minute || z1.Sub(to).Abs() > time.Minute {
		t.Errorf("after the zoom the chart shows %s..%s, want the URL's %s..%s", z0, z1, from, to)
	}
	if n := f.eval(`String(document.querySelectorAll('svg.chart-svg path.line').length)`); n == "0" {
		t.Errorf("the zoomed page draws no chart lines")
	}
	f.shot("scope-zoomed")
	visited = append(visited, zoomed.RequestURI())

	// 4. Diagnose now, on the live range, so the snapshot is the present.
	f.open("scope-live", scopeURL.RequestURI(), `[data-testid="diagnose-now"]`)
	f.submit("diagnose now", `[data-testid="diagnose-now"]`, `/^\/incidents\/\d+$/.test(location.pathname) && !!document.querySelector('[data-testid="incident"]')`)
	incURL := f.location()
	incPath := incURL.Path
	f.shot("incident")
	visited = append(visited, incPath)
	diagnosed := f.eval(`document.querySelector('[data-testid="diagnosis"]').getAttribute("data-root-cause")`)
	if diagnosed == "" {
		t.Fatalf("incident %s shows no diagnosis", incPath)
	}
	t.Logf("fault %s on %s diagnosed as %q (%s)", injected, scope, diagnosed, incPath)

	// 4b. Turn the first proposed action into a change request.
	if f.eval(`String(!!document.querySelector('[data-testid="change-form"]'))`) != "true" {
		t.Errorf("incident %s proposes no action a change request can be made of", incPath)
	} else {
		f.submit("create a change request", `[data-testid="change-form"] button[type=submit]`,
			`/^\/incidents\/\d+\/changes\/\d+$/.test(location.pathname) && !!document.querySelector('[data-testid="change-title"]')`)
		f.shot("change-request")
		visited = append(visited, f.location().Path)
		if st := f.text(`[data-testid="change-status"]`); st == "" {
			t.Errorf("the change request shows no status")
		}
		if md := f.text(`[data-testid="change-markdown"]`); !strings.Contains(md, incPath) && !strings.Contains(md, strings.TrimPrefix(incPath, "/incidents/")) {
			t.Errorf("the change request's document does not name its incident %s:\n%s", incPath, md)
		}
		f.open("incident-after-change", incPath, `[data-testid="review-wrong-open"]`)
	}

	// 5. Mark the diagnosis wrong and pick the real cause.
	trueCause := injected
	if diagnosed == injected {
		trueCause = metrics.CauseHostOverhead
	}
	// The picker opens in place; the cause's button saves the review
	// without leaving the page.
	f.do("open the cause picker", chromedp.Click(chromedp.CSS(`[data-testid="review-wrong-open"]`), chromedp.NodeVisible))
	f.do("name the reviewer", chromedp.SetValue(chromedp.CSS(`[data-testid="review-wrong-form"] input[name=by]`), "Dana On-call"))
	f.do("pick the real cause", chromedp.Click(chromedp.CSS(`[data-testid="review-wrong-form"] button[value="`+trueCause+`"]`), chromedp.NodeVisible))
	f.waitJS("the saved review", `document.querySelector('[data-testid="incident-verdict"]').getAttribute("data-verdict") === "wrong"`)
	if v := f.text(`[data-testid="incident-verdict"]`); !strings.Contains(v, "wrong") {
		t.Errorf("verdict after the review reads %q", v)
	}

	// 6. Add a note.
	const note = "Replica restarted after the OOM; kernel logs attached to the ticket."
	f.do("write a note",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="note-form"] textarea[name=body]`), note),
		chromedp.SetValue(chromedp.CSS(`[data-testid="note-form"] input[name=by]`), "Dana On-call"),
	)
	f.submit("add the note", `[data-testid="note-form"] button[type=submit]`,
		`!!document.querySelector('[data-testid="timeline"] li[data-kind="note"]')`)
	if tl := f.text(`[data-testid="timeline"]`); !strings.Contains(tl, note) {
		t.Errorf("timeline lacks the note: %q", tl)
	}
	f.shot("incident-reviewed")

	// 7. Export the postmortem (Markdown) through its link.
	// Chromium would download text/markdown, so the page fetches it.
	md := f.evalAwait(`fetch(document.querySelector('[data-testid="export-md"]').href).then(function (r) {
		if (!r.ok || r.headers.get("Content-Type").indexOf("text/markdown") !== 0) throw new Error("postmortem: " + r.status + " " + r.headers.get("Content-Type"));
		return r.text(); })`)
	for _, want := range []string{note, "diagnosis wrong; true cause", "`" + trueCause + "`", "`" + diagnosed + "`"} {
		if !strings.Contains(md, want) {
			t.Errorf("postmortem Markdown lacks %q:\n%s", want, md)
		}
	}
	f.open("incident-print", incPath+"/print", `[data-testid="incident"]`)
	visited = append(visited, incPath+"/print")

	// 8. Share it and open the link in a browser that shares nothing.
	f.open("incident-again", incPath, `[data-testid="share-form"]`)
	f.do("fill the share form", chromedp.SetValue(chromedp.CSS(`[data-testid="share-form"] input[name=by]`), "Dana On-call"))
	f.submit("create a share link", `[data-testid="share-form"] button[type=submit]`, `!!document.querySelector('[data-testid="share-created"] code')`)
	// A page that answers a POST cannot be opened again: check it here.
	f.checkLayout("incident-shared")
	shareURL := f.text(`[data-testid="share-created"] code`)
	su, err := url.Parse(shareURL)
	if err != nil || !strings.HasPrefix(su.Path, "/share/") {
		t.Fatalf("share link %q", shareURL)
	}
	token := strings.TrimPrefix(su.Path, "/share/")

	fresh := testenv.Chromium(t, chromedp.Env("TZ=Europe/Berlin"), chromedp.Flag("hide-scrollbars", true))
	if fresh.Dir == br.Dir {
		t.Fatal("the second browser reuses the first one's profile")
	}
	g := &flow{t: t, br: fresh, base: base}
	g.open("share-fresh-browser", su.RequestURI(), `[data-testid="shared-note"]`)
	visited = append(visited, su.RequestURI())
	leaks := g.eval(`(function () {
		var bad = [];
		if (document.querySelector("form, input, select, textarea, button")) bad.push("a form control");
		if (document.querySelector("nav, [data-testid=nav]")) bad.push("navigation");
		document.querySelectorAll("a[href]").forEach(function (a) {
			var u = new URL(a.href, location.href);
			if (u.origin === location.origin && u.pathname !== location.pathname) bad.push("a link to " + u.pathname);
		});
		if (document.cookie !== "") bad.push("a cookie");
		return bad.join("; "); })()`)
	if leaks != "" {
		t.Errorf("the shared page is not read-only: it has %s", leaks)
	}
	if got := g.eval(`document.querySelector('[data-testid="incident"]').getAttribute("data-incident-id")`); "/incidents/"+got != incPath {
		t.Errorf("share link shows incident %q, want %s", got, incPath)
	}
	if !strings.Contains(g.text(`[data-testid="timeline"]`), note) {
		t.Errorf("the shared page lacks the note")
	}
	checkShareGrantsNothingElse(t, base, token, incPath)

	// 8b. Administration: an API token is shown once, and the audit log
	// holds the review.
	f.open("admin-tokens", "/admin/tokens", `[data-testid="token-form"]`)
	f.do("fill the token form", chromedp.SendKeys(chromedp.CSS(`[data-testid="token-form"] input[name=name]`), "alertmanager"))
	f.submit("create a token", `[data-testid="token-form"] button[type=submit]`, `!!document.querySelector('[data-testid="new-token"]')`)
	f.checkLayout("admin-token-created")
	if tok := f.text(`[data-testid="new-token"]`); len(tok) < 32 {
		t.Errorf("new token %q looks too short", tok)
	}
	f.open("admin-audit", "/admin/audit", `[data-testid="audit"]`)
	if a := f.text(`[data-testid="audit"]`); !strings.Contains(a, "Dana On-call") {
		t.Errorf("the audit log does not show the review by Dana On-call:\n%s", a)
	}
	visited = append(visited, "/admin/users", "/admin/tokens", "/admin/audit")

	// 9. The accuracy page moved: one reviewed diagnosis, none correct.
	f.open("accuracy-after", "/accuracy", `[data-testid="accuracy-overall"]`)
	visited = append(visited, "/accuracy", "/incidents", "/kb", "/kb/"+trueCause, "/incidents/999999")
	after := f.text(`[data-testid="accuracy-overall"]`)
	if !strings.Contains(after, "0 of 1") || !strings.Contains(after, "0% correct") {
		t.Errorf("accuracy after one wrong review reads %q, want 0%% correct, 0 of 1 reviewed", after)
	}

	for _, b := range []*testenv.Browser{br, fresh} {
		if errs := b.PageErrors(); len(errs) > 0 {
			t.Errorf("the pages reported script errors:\n%s", strings.Join(errs, "\n"))
		}
	}

	// 10. Layout and accessibility of every page at desktop and phone width.
	for _, width := range []int64{1280, 390} {
		for i, p := range visited {
			name := fmt.Sprintf("layout-%d/%02d-%s", width, i, pageName(p))
			t.Run(name, func(t *testing.T) {
				b := br
				if strings.HasPrefix(p, "/share/") {
					b = fresh
				}
				h := &flow{t: t, br: b, base: base, width: width}
				h.open(fmt.Sprintf("layout-%d-%02d", width, i), p, "main")
				if problems := h.eval(pageChecks); problems != "" {
					t.Errorf("%s at %d px:\n%s", p, width, problems)
				}
			})
		}
	}
}

// pageName names a visited path for a subtest: no share token, no query.
func pageName(p string) string {
	path, query, _ := strings.Cut(p, "?")
	switch {
	case path == "/":
		return "overview"
	case strings.HasPrefix(path, "/share/"):
		return "share"
	case strings.Contains(query, "from="):
		path += "-zoomed"
	}
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(path), "-"), "-")
}

// rowLink is the overview's link to scope, or to its model when the
// overview lists models only.
func rowLink(scope, model string) string {
	return `[data-testid="scope-row"][data-scope="` + scope + `"] [data-testid="scope-link"], ` +
		`[data-testid="scope-row"][data-scope="` + model + `"] [data-testid="scope-link"]`
}

// checkShareGrantsNothingElse asks for everything a share token could be
// mistaken for a key to: the incident's other routes under the token, a
// forged token, and writes through the share path.
func checkShareGrantsNothingElse(t *testing.T, base, token, incPath string) {
	t.Helper()
	resp, err := http.Get(base + "/share/" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("share link answers %s", resp.Status)
	}
	if c := resp.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("the share page sets cookies %q", c)
	}
	if rp := resp.Header.Get("Referrer-Policy"); rp != "no-referrer" {
		t.Errorf("the share page's Referrer-Policy is %q, want no-referrer (the token is in the URL)", rp)
	}
	forged := []byte(token)
	if forged[len(forged)-1] == 'A' {
		forged[len(forged)-1] = 'B'
	} else {
		forged[len(forged)-1] = 'A'
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/share/" + string(forged)},
		{http.MethodGet, "/share/" + token + "/postmortem.md"},
		{http.MethodGet, "/share/" + token + "/print"},
		{http.MethodGet, "/share/" + token + "/incidents"},
		{http.MethodPost, "/share/" + token + "/notes"},
		{http.MethodPost, "/share/" + token + "/labels"},
		{http.MethodPost, "/share/" + token},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader("body=x&by=x&verdict=correct"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s answers %s; a share token must open only its own read-only page", c.method, c.path, resp.Status)
		}
	}
	// The API view of the incident carries no share tokens.
	var api map[string]any
	resp, err = http.Get(base + "/api/v1" + incPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(body, &api); err != nil || strings.Contains(string(body), token) {
		t.Errorf("GET /api/v1%s (%s): %v; token leaked: %v", incPath, resp.Status, err, strings.Contains(string(body), token))
	}
}

// pageChecks returns the page's layout and accessibility problems, one
// per line, each naming the offending element.
const pageChecks = `(function () {
	var out = [];
	function describe(el) {
		var s = el.tagName.toLowerCase();
		if (el.id) s += "#" + el.id;
		if (el.getAttribute("data-testid")) s += '[data-testid="' + el.getAttribute("data-testid") + '"]';
		if (el.getAttribute("name")) s += '[name="' + el.getAttribute("name") + '"]';
		var cls = el.getAttribute("class");
		if (cls) s += "." + cls.trim().split(/\s+/).join(".");
		var txt = (el.textContent || "").trim().replace(/\s+/g, " ");
		if (txt) s += ' "' + txt.slice(0, 40) + '"';
		return s;
	}
	var de = document.documentElement;
	if (de.scrollWidth > window.innerWidth) {
		var wide = [];
		document.querySelectorAll("body *").forEach(function (el) {
			var r = el.getBoundingClientRect();
			if (r.right > window.innerWidth + 1 && r.width > 0 && wide.length < 5 && !(el.parentElement && el.parentElement.getBoundingClientRect().right > window.innerWidth + 1)) {
				wide.push(describe(el) + " (right edge " + Math.round(r.right) + " px)");
			}
		});
		out.push("horizontal overflow: scrollWidth " + de.scrollWidth + " > innerWidth " + window.innerWidth + "; widest: " + wide.join(", "));
	}
	document.querySelectorAll("input, select, textarea").forEach(function (el) {
		if (el.type === "hidden") return;
		if ((el.getAttribute("aria-label") || "").trim() || el.getAttribute("aria-labelledby")) return;
		if (el.closest("label")) return;
		if (el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]')) return;
		out.push("form control without an accessible label: " + describe(el));
	});
	document.querySelectorAll("button").forEach(function (el) {
		if (!(el.textContent || "").trim() && !el.getAttribute("aria-label")) out.push("button without a name: " + describe(el));
	});
	// The status words in English and in Chinese (正常 提示 警告 严重 无数据).
	var icon = /[\u25CF\u25C6\u25B2\u25A0\u25CB]/, word = /\b(OK|Info|Warning|Critical|No data)\b|\u6B63\u5E38|\u63D0\u793A|\u8B66\u544A|\u4E25\u91CD|\u65E0\u6570\u636E/;
	document.querySelectorAll('[data-testid="status"]').forEach(function (el) {
		var txt = el.textContent || "";
		if (!icon.test(txt) || !word.test(txt)) out.push("status badge without icon and word: " + describe(el));
	});
	document.querySelectorAll(".st-warn, .st-crit").forEach(function (el) {
		var host = el;
		if (el instanceof SVGElement && el.closest("[aria-hidden=true]")) host = el.parentElement;
		var txt = host.textContent || "";
		if (!icon.test(txt) && !word.test(txt)) out.push("status carried by colour alone: " + describe(el));
	});
	return out.join("\n");
})()`

// flow is one browser tab's walk through the console, failing with
// Chromium's last log lines when the browser does not do what it is told.
type flow struct {
	t     *testing.T
	br    *testenv.Browser
	base  string
	width int64
}

func (f *flow) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(f.br.Ctx, 45*time.Second)
}

func (f *flow) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		f.br.Fatalf(f.t, "%s (at %s): %v", what, f.where(), err)
	}
}

func (f *flow) where() string {
	ctx, cancel := context.WithTimeout(f.br.Ctx, 2*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return loc
}

// open navigates to path, waits for sel and photographs the page.
func (f *flow) open(name, path, sel string) {
	f.t.Helper()
	width := f.width
	if width == 0 {
		width = 1280
	}
	f.do("open "+path,
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(f.base+path),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	)
	f.shot(name)
}

// submit clicks sel (a link or a submit button) and waits for the next
// page to satisfy cond.
func (f *flow) submit(what, sel, cond string) {
	f.t.Helper()
	f.eval(`(window.__casebookOld = true, "marked")`)
	f.do(what+": click", chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	f.waitJS(what, `!window.__casebookOld && document.readyState === "complete" && (`+cond+`)`)
}

// waitJS polls a JavaScript condition.
func (f *flow) waitJS(what, cond string) {
	f.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(f.br.Ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () { try { return !!(`+cond+`); } catch (e) { return false; } })()`))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	f.br.Fatalf(f.t, "timed out waiting for %s at %s (last error %v); page text: %.400s", what, f.where(), lastErr, f.evalQuiet(`document.body ? document.body.innerText : ""`))
}

func (f *flow) eval(expr string) string {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		f.br.Fatalf(f.t, "evaluate at %s: %v\n%s", f.where(), err, expr)
	}
	return v
}

func (f *flow) evalAwait(expr string) string {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		f.br.Fatalf(f.t, "evaluate at %s: %v\n%s", f.where(), err, expr)
	}
	return v
}

func (f *flow) evalQuiet(expr string) string {
	ctx, cancel := context.WithTimeout(f.br.Ctx, 2*time.Second)
	defer cancel()
	v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	return v
}

func (f *flow) text(sel string) string {
	f.t.Helper()
	return f.eval(`(function () { var e = document.querySelector(` + strconv.Quote(sel) + `); return e ? e.textContent.trim().replace(/\s+/g, " ") : ""; })()`)
}

func (f *flow) location() *url.URL {
	f.t.Helper()
	u, err := url.Parse(f.eval(`location.href`))
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

type rect struct{ Left, Top, Width, Height float64 }

func (f *flow) rect(sel string) rect {
	f.t.Helper()
	raw := f.eval(`JSON.stringify((function (r) { return {Left: r.left, Top: r.top, Width: r.width, Height: r.height}; })(document.querySelector(` + strconv.Quote(sel) + `).getBoundingClientRect()))`)
	var r rect
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Width < 50 {
		f.t.Fatalf("%s: bounding box %s: %v", sel, raw, err)
	}
	return r
}

// chartWindow reads the time window a chart is drawn for.
func (f *flow) chartWindow(sel string) (time.Time, time.Time) {
	f.t.Helper()
	raw := f.eval(`(function (s) { return s.getAttribute("data-t0") + " " + s.getAttribute("data-t1"); })(document.querySelector(` + strconv.Quote(sel) + `))`)
	a, b, _ := strings.Cut(raw, " ")
	t0, err0 := strconv.ParseInt(a, 10, 64)
	t1, err1 := strconv.ParseInt(b, 10, 64)
	if err0 != nil || err1 != nil || t1 <= t0 {
		f.t.Fatalf("chart %s window %q", sel, raw)
	}
	return time.Unix(t0, 0).UTC(), time.Unix(t1, 0).UTC()
}

// checkLayout runs the layout and accessibility checks on the page as it
// is, at desktop and phone width, and photographs both.
func (f *flow) checkLayout(name string) {
	f.t.Helper()
	for _, w := range []int64{1280, 390} {
		f.do(fmt.Sprintf("resize to %d px", w), chromedp.EmulateViewport(w, 900))
		if problems := f.eval(pageChecks); problems != "" {
			f.t.Errorf("%s (%s) at %d px:\n%s", name, f.where(), w, problems)
		}
		f.shot(fmt.Sprintf("%s-%d", name, w))
	}
	f.do("resize back", chromedp.EmulateViewport(1280, 900))
}

var nonName = regexp.MustCompile(`[^a-z0-9.-]+`)

// shot saves a full-page screenshot and checks it is not blank.
func (f *flow) shot(name string) {
	f.t.Helper()
	ctx, cancel := f.ctx()
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		f.br.Fatalf(f.t, "screenshot of %s: %v", f.where(), err)
	}
	testenv.SavePNG(f.t, browserOut, nonName.ReplaceAllString(strings.ToLower(name), "-"), b, 8)
}
