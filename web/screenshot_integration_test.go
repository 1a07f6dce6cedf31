//go:build integration

package web_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/internal/testenv"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/web"
)

// TestScreenshots serves the console with a week of fake data in headless
// Chromium, saves a PNG of every page at desktop and phone widths under
// testout/, and checks that no page is blank or overflows horizontally.
func TestScreenshots(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	chromium := testenv.ChromiumPath(t)
	end := handlerstest.DefaultEnd
	tel := handlerstest.NewTelemetry(handlerstest.Options{
		Incident: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"},
		Status: []metrics.SourceStatus{
			{Name: "prometheus http://prom:9090", OK: true, Since: end.Add(-48 * time.Hour)},
			{Name: "target http://10.0.3.17:8000/metrics (qwen-7b-1)", Err: "dial tcp 10.0.3.17:8000: connect: connection refused", Since: end.Add(-12 * time.Minute)},
		},
	})
	faults := &handlerstest.Faults{}
	if _, err := faults.Inject(handlers.Fault{Cause: metrics.CauseKVCacheEviction, Scope: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}, Severity: .8, Start: end.Add(-8 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Options{
		Telemetry:  tel,
		Diagnoser:  &handlerstest.Diagnoser{Result: handlerstest.EvictionDiagnosis()},
		Faults:     faults,
		Deviations: handlerstest.Deviations,
		Now:        func() time.Time { return end },
	}))
	defer srv.Close()

	pages := []page{
		{"overview", "/", "", `[data-testid="scopes"]`},
		{"model-1h", "/scopes/llama-70b", "", `[data-testid="waterfall"]`},
		{"instance-6h", "/scopes/llama-70b/llama-70b-1?range=6h", "", `[data-testid="waterfall"]`},
		{"instance-7d", "/scopes/qwen-7b/qwen-7b-0?range=7d", "", `[data-testid="waterfall"]`},
		{"diagnosis", "/scopes/llama-70b/llama-70b-1?range=1h", `[data-testid="diagnose-now"]`, `[data-testid="diagnosis"]`},
		{"faults", "/faults", "", `[data-testid="fault-form"]`},
		{"error-400", "/scopes/llama-70b?range=3y", "", `[data-testid="error-param"]`},
		{"error-404", "/no/such/page", "", `[data-testid="error"]`},
	}
	shoot(t, chromium, srv.URL, filepath.Join("..", "testout", "screenshots"), pages)
}

// TestScreenshotsLive photographs a running console, such as `casebook
// serve` on the demo cluster, when CASEBOOK_SCREENSHOT_URL is set.
// CASEBOOK_SCREENSHOT_PATHS lists the paths, comma-separated.
func TestScreenshotsLive(t *testing.T) {
	base := os.Getenv("CASEBOOK_SCREENSHOT_URL")
	if base == "" {
		t.Skip("CASEBOOK_SCREENSHOT_URL is not set")
	}
	var pages []page
	for i, p := range strings.Split(os.Getenv("CASEBOOK_SCREENSHOT_PATHS")+",/", ",") {
		if p != "" {
			pages = append(pages, page{name: "live-" + strconv.Itoa(i), path: p, wait: "main"})
		}
	}
	shoot(t, testenv.ChromiumPath(t), strings.TrimSuffix(base, "/"), filepath.Join("..", "testout", "screenshots-live"), pages)
}

type page struct {
	name  string
	path  string
	click string // a button to click first (the diagnosis is a POST)
	wait  string
}

// shoot saves each page at 1280 and 390 px and checks it is neither blank
// nor wider than the viewport.
func shoot(t *testing.T, chromium, base, out string, pages []page) {
	t.Helper()
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Hidden scrollbars make the full-page capture as wide as the layout.
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.Env("TZ=Europe/Berlin"), chromedp.Flag("hide-scrollbars", true)}
	for _, f := range testenv.ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}

	for _, width := range []int64{1280, 390} {
		for _, p := range pages {
			name := p.name + "-" + itoa(width)
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
				defer cancel()
				steps := []chromedp.Action[chromedp.Void]{
					chromedp.EmulateViewport(width, 900),
					chromedp.Navigate(base + p.path),
				}
				if p.click != "" {
					steps = append(steps, chromedp.WaitVisible(chromedp.CSS(p.click)), chromedp.Click(chromedp.CSS(p.click)))
				}
				steps = append(steps, chromedp.WaitVisible(chromedp.CSS(p.wait)))
				if err := chromedp.Do(ctx, steps...); err != nil {
					t.Fatalf("%s: %v", p.path, err)
				}
				overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
				if err != nil {
					t.Fatalf("%s: measure overflow: %v", p.path, err)
				}
				shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatalf("%s: screenshot: %v", p.path, err)
				}
				file := filepath.Join(out, name+".png")
				if err := os.WriteFile(file, shot, 0o644); err != nil {
					t.Fatal(err)
				}
				if overflow {
					t.Errorf("%s at %d px overflows horizontally (see %s)", p.path, width, file)
				}
				if n := colours(t, shot); n < 8 {
					t.Errorf("%s at %d px looks blank: %d colours (see %s)", p.path, width, n, file)
				}
			})
		}
	}
}

// colours counts distinct colours on a sample grid of the screenshot.
func colours(t *testing.T, b []byte) int {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	seen := map[[4]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y += 7 {
		for x := r.Min.X; x < r.Max.X; x += 7 {
			c := img.At(x, y)
			r, g, b, a := c.RGBA()
			seen[[4]uint32{r >> 8, g >> 8, b >> 8, a >> 8}] = true
		}
	}
	return len(seen)
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// TestChartScript drives the page script in Chromium: axis labels in the
// browser's time zone, the hover read-out, and drag-to-zoom rewriting only
// the URL's from/to.
func TestChartScript(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	chromium := testenv.ChromiumPath(t)
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: 24 * time.Hour, Incident: metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}})
	srv := httptest.NewServer(web.New(web.Options{
		Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}, Deviations: handlerstest.Deviations,
		Now: func() time.Time { return tel.End },
	}))
	defer srv.Close()
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(chromium), chromedp.Env("TZ=Europe/Berlin")}
	for _, f := range testenv.ChromiumFlags {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(srv.URL+"/scopes/llama-70b/llama-70b-1?range=6h"),
		chromedp.WaitVisible(chromedp.CSS(`[data-chart="quality-rates"]`)),
	); err != nil {
		t.Fatal(err)
	}
	// The window ends 05:00 UTC, which is 06:00 in Berlin.
	last, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function () {
		var ticks = document.querySelectorAll('[data-testid="chart-quality-rates"] text.xtick');
		return ticks[ticks.length - 1].textContent; })()`))
	if err != nil || last != "06:00" {
		t.Errorf("last x label %q (%v), want 06:00 local time", last, err)
	}
	readout, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function () {
		var svg = document.querySelector('[data-chart="quality-rates"]'), r = svg.getBoundingClientRect();
		svg.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width * 0.99, clientY: r.top + 20, bubbles: true}));
		var box = svg.parentNode.querySelector(".readout");
		return box.hidden ? "" : box.textContent; })()`))
	if err != nil || !strings.Contains(readout, "Prefix hit rate: ") || !strings.Contains(readout, "%") {
		t.Errorf("hover read-out %q (%v)", readout, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () {
		var svg = document.querySelector('[data-chart="quality-rates"]'), r = svg.getBoundingClientRect();
		var at = function (type, f) { svg.dispatchEvent(new MouseEvent(type, {clientX: r.left + r.width * f, clientY: r.top + 50, button: 0, bubbles: true})); };
		at("mousedown", 0.5); at("mousemove", 0.75); at("mouseup", 0.75);
		return true; })()`)); err != nil {
		t.Fatal(err)
	}
	var href string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(href, "from=") {
		time.Sleep(100 * time.Millisecond)
		href, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`window.location.href`))
	}
	u, err := url.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	from, ferr := time.Parse(time.RFC3339, q.Get("from"))
	to, terr := time.Parse(time.RFC3339, q.Get("to"))
	// Half to three quarters of 6 hours ending 05:00 UTC: 02:00 to 03:30.
	if q.Has("range") || ferr != nil || terr != nil || from.Sub(tel.End.Add(-3*time.Hour)).Abs() > 5*time.Minute || to.Sub(tel.End.Add(-90*time.Minute)).Abs() > 5*time.Minute {
		t.Errorf("zoomed URL %q", href)
	}
}
