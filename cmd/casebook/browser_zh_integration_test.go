//go:build integration

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/internal/testenv"
)

// clipChecks lists the elements whose content is wider than their box and
// neither scrolls nor wraps: text that overflows or is clipped. Scroll
// containers (tables in their wrapper) show the rest and pass; SVG
// charts are checked by their figure.
const clipChecks = `(function () {
	var out = [];
	document.querySelectorAll("body *").forEach(function (el) {
		if (out.length >= 8 || el.closest("svg")) return;
		var d = el.closest("details");
		if (d && !d.open && !el.closest("summary")) return; // folded away, not shown
		var cs = getComputedStyle(el);
		if (cs.display === "inline" || cs.display === "none" || el.clientWidth === 0) return;
		if (cs.overflowX === "auto" || cs.overflowX === "scroll") return;
		if (el.scrollWidth > el.clientWidth + 1) {
			var txt = (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 40);
			out.push(el.tagName.toLowerCase() + "." + (el.getAttribute("class") || "").trim().split(/\s+/).join(".") +
				' "' + txt + '": scrollWidth ' + el.scrollWidth + " > clientWidth " + el.clientWidth);
		}
	});
	return out.join("\n");
})()`

// hanShare is the share of the page's words' letters that are Chinese.
// Code and series names (vllm:num_requests_running, DCGM_FI_DEV_SM_CLOCK)
// are identifiers typed as they are in every language: not counted.
const hanShare = `(function () {
	var b = document.body.cloneNode(true);
	b.querySelectorAll('code, kbd, .series, script, style').forEach(function (e) { e.remove(); });
	var t = b.textContent, han = (t.match(/[\u4E00-\u9FFF]/g) || []).length, latin = (t.match(/[A-Za-z]/g) || []).length;
	return String(Math.round(100 * han / Math.max(1, han + latin)));
})()`

// TestBrowserChinese drives the incident review in Chinese: the language
// switch in the top bar sets the cookie, then every page of the flow is
// opened at 1280 and 390 px and checked for horizontal overflow, clipped
// text and English left on the page; an incident is reviewed, and the
// screenshots land in testout/browser (browser-zh-*).
func TestBrowserChinese(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test starts casebook and chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const token = "zh-test-webhook-token"
	base, done := serveDemo(t, ctx, token)
	defer func() { cancel(); <-done }()
	injectFault(t, base, "kv_cache_eviction", alertScopes[0][0]+"/"+alertScopes[0][1])
	injectFault(t, base, "gpu_throttling", alertScopes[1][0]+"/"+alertScopes[1][1])
	time.Sleep(40 * time.Second) // a minute's means must move
	ids := openFromAlerts(t, base, token, 3)

	br := testenv.Chromium(t, chromedp.Env("TZ=Asia/Shanghai"), chromedp.Flag("hide-scrollbars", true))
	f := &flow{t: t, br: br, base: base, width: 1280}

	// The switch: an English page, one click, the same page in Chinese.
	f.openAt(1280, 800, "browser-zh-switch-en", route.URL(route.IncidentList), `[data-testid="lang-zh-CN"]`)
	f.click(`[data-testid="lang-zh-CN"]`)
	f.waitJS("the page in Chinese", `document.documentElement.lang === "zh-CN" && !!document.querySelector('[data-testid="incident-list"]')`)
	if got := f.location().Path; got != route.URL(route.IncidentList) {
		t.Errorf("the switch returned to %s, want the incident list", got)
	}

	pages := []struct{ name, path, sel string }{
		{"overview", route.URL(route.Overview), `[data-testid="scopes"]`},
		{"scope", route.URL(route.ScopeModel, alertScopes[0][0]), `[data-testid="scope-title"]`},
		{"incidents", route.URL(route.IncidentList), `[data-testid="incident-list"]`},
		{"incident", route.URL(route.IncidentShow, ids[0]), `[data-testid="answer-cause"]`},
		{"incident-2", route.URL(route.IncidentShow, ids[1]), `[data-testid="answer-cause"]`},
		{"queue", route.URL(route.ReviewQueue), `[data-testid="queue"]`},
		{"print", route.URL(route.IncidentPrint, ids[0]), `[data-testid="answer-cause"]`},
		{"error", "/no-such-page", `[data-testid="error"]`},
		{"storage", route.URL(route.Storage), `[data-testid="storage-tiers"]`},
		{"accuracy", route.URL(route.Accuracy), `[data-testid="accuracy-overall"]`},
		{"users", route.URL(route.Users), `[data-testid="users"]`},
		{"tokens", route.URL(route.Tokens), `[data-testid="tokens"]`},
		{"audit", route.URL(route.Audit), `[data-testid="audit"]`},
	}
	for _, vp := range []struct{ width, height int64 }{{1280, 800}, {390, 844}} {
		f.width = vp.width
		for _, p := range pages {
			f.openAt(vp.width, vp.height, fmt.Sprintf("browser-zh-%s-%d", p.name, vp.width), p.path, p.sel)
			if lang := f.eval(`document.documentElement.lang`); lang != "zh-CN" {
				t.Errorf("%s at %d px: html lang %q, want zh-CN", p.path, vp.width, lang)
			}
			if clipped := f.eval(clipChecks); clipped != "" {
				t.Errorf("%s at %d px: clipped or overflowing text:\n%s", p.path, vp.width, clipped)
			}
			// Metric and knob names stay Latin (TTFT, max_num_seqs), so
			// a Chinese page still has Latin letters; most words are Chinese.
			if share := f.eval(hanShare); mustInt(t, share) < 25 {
				t.Errorf("%s at %d px: only %s%% of the letters are Chinese", p.path, vp.width, share)
			}
		}
	}

	// The review in Chinese: one click on 正确, the state says so.
	f.width = 1280
	f.openAt(1280, 800, "browser-zh-review", route.URL(route.IncidentShow, ids[2]), `[data-testid="review-correct"]`)
	if got := f.text(`[data-testid="review-correct"]`); !strings.Contains(got, "正确") {
		t.Errorf("the Correct button says %q", got)
	}
	// The cause picker's Chinese titles fit its grid at phone width.
	f.openAt(390, 844, "browser-zh-picker-390", route.URL(route.IncidentShow, ids[2]), `[data-testid="review-wrong-open"]`)
	f.click(`[data-testid="review-wrong-open"]`)
	f.waitJS("the cause picker", `!!document.querySelector('[data-testid="review-wrong"][open] [data-testid="review-cause"]')`)
	if clipped := f.eval(clipChecks); clipped != "" {
		t.Errorf("the open cause picker at 390 px: clipped or overflowing text:\n%s", clipped)
	}
	f.shot("browser-zh-picker-390-open")
	f.openAt(1280, 800, "browser-zh-review", route.URL(route.IncidentShow, ids[2]), `[data-testid="review-correct"]`)
	f.click(`[data-testid="review-correct"]`)
	f.waitJS("the verdict saved in place", `document.querySelector('[data-testid="review"]').getAttribute("data-verdict") === "correct"`)
	if got := apiIncident(t, base, ids[2]); got.Verdict != "correct" {
		t.Errorf("incident %d stored verdict %q after 正确", ids[2], got.Verdict)
	}
	f.openAt(1280, 800, "browser-zh-reviewed", route.URL(route.IncidentShow, ids[2]), `[data-testid="incident-verdict"]`)
	if got := f.text(`[data-testid="incident-verdict"]`); !strings.Contains(got, "已复核") {
		t.Errorf("the reviewed incident says %q", got)
	}

	// A shared link with ?lang=en shows English whatever the cookie says.
	f.openAt(1280, 800, "browser-zh-lang-en", route.URL(route.IncidentList)+"?lang=en", `[data-testid="incident-list"]`)
	if lang := f.eval(`document.documentElement.lang`); lang != "en" {
		t.Errorf("?lang=en gave html lang %q", lang)
	}
}
