package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/casebook/casebook/internal/route"
	"image/png"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

// TestIncidentAnswerFirst checks the incident page's order: the answer
// (cause, confidence, evidence, review) before the actions, the actions
// before the archived charts, and those before traces, similar cases,
// the timeline and the notes; the shared and printable views keep it.
func TestIncidentAnswerFirst(t *testing.T) {
	f := newArchiveFixture(t)
	id := f.openViaAlert(t, "00000000000000a1", "KV storm")
	path := fmt.Sprintf("/incidents/%d", id)
	order := []string{`data-testid="answer-cause"`, `data-testid="answer-confidence"`, `data-testid="answer-evidence"`,
		`data-testid="review-correct"`, `data-testid="diagnosis-actions"`, `data-testid="incident-charts"`,
		`data-testid="similar`, `data-testid="timeline"`, `data-testid="note-form"`}
	r := f.do(t, http.MethodGet, path, nil, nil)
	if r.status != 200 {
		t.Fatalf("GET %s: %d", path, r.status)
	}
	checkOrder(t, "incident page", r.body, order)
	if strings.Contains(r.body, `data-testid="label-form"`) {
		t.Error("the page still carries the old review form at the bottom")
	}

	r = f.do(t, http.MethodGet, path+"/print", nil, nil)
	checkOrder(t, "printable page", r.body, []string{`data-testid="answer-cause"`, `data-testid="answer-evidence"`,
		`data-testid="diagnosis-actions"`, `data-testid="incident-charts"`, `data-testid="timeline"`})
	if strings.Contains(r.body, `data-testid="review-correct"`) {
		t.Error("the printable page has review buttons")
	}
}

func checkOrder(t *testing.T, what, body string, order []string) {
	t.Helper()
	last := -1
	for _, w := range order {
		i := strings.Index(body, w)
		if i < 0 {
			t.Errorf("%s lacks %s", what, w)
			continue
		}
		if i < last {
			t.Errorf("%s shows %s too late: want the order %v", what, w, order)
		}
		last = i
	}
}

// TestOneClickReview records verdicts through the buttons' forms, as a
// browser without the script posts them and as the script does (JSON).
func TestOneClickReview(t *testing.T) {
	f := newArchiveFixture(t)
	ctx := context.Background()
	a := f.openViaAlert(t, "00000000000000b1", "first")
	b := f.openViaAlert(t, "00000000000000b2", "second")
	c := f.openViaAlert(t, "00000000000000b3", "third")

	// Without the script: one button, a redirect back to the incident.
	body, hdr := form("verdict", "correct")
	r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", a), body, hdr)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != route.URL(route.IncidentShow, a) {
		t.Fatalf("correct: %d to %q; %.300s", r.status, r.header.Get("Location"), r.body)
	}
	inc, err := f.st.Incident(ctx, a)
	if err != nil || inc.Verdict != store.VerdictCorrect {
		t.Fatalf("incident %d verdict %q (%v), want correct", a, inc.Verdict, err)
	}
	p, err := f.st.Page(ctx, a)
	if err != nil || len(p.Labels) != 1 || p.Labels[0].By != "local" {
		t.Errorf("a review without a name in mode none is by %+v, want local", p.Labels)
	}

	// The picker's cause button wins over text left in "new cause", and
	// the queue's return address is kept; any other is not.
	body, hdr = form("verdict", "wrong", "true_cause", metrics.CausePrefixCacheMiss, "new_cause", "typed, then a button pressed", "by", "ana", "next", "/review?model=llama-70b")
	r = f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", b), body, hdr)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/review?model=llama-70b" {
		t.Fatalf("wrong from the queue: %d to %q; %.300s", r.status, r.header.Get("Location"), r.body)
	}
	if inc, _ := f.st.Incident(ctx, b); inc.Verdict != store.VerdictWrong || inc.TrueCause != metrics.CausePrefixCacheMiss {
		t.Errorf("incident %d: %q, true cause %q", b, inc.Verdict, inc.TrueCause)
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/reviewer", "/incidents"} {
		body, hdr = form("verdict", "correct", "next", next)
		r = f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", b), body, hdr)
		if r.header.Get("Location") != route.URL(route.IncidentShow, b) {
			t.Errorf("next=%q redirects to %q, want the incident", next, r.header.Get("Location"))
		}
	}

	// With the script: JSON back, no redirect; a new cause by name.
	body, hdr = form("verdict", "wrong", "true_cause", "", "new_cause", "NCCL all-reduce stall", "by", "cy")
	hdr["Accept"] = "application/json"
	r = f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", c), body, hdr)
	var got struct {
		Incident  int64  `json:"incident"`
		Verdict   string `json:"verdict"`
		TrueCause string `json:"true_cause"`
		By        string `json:"by"`
		State     string `json:"state"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("script review: %d %.300s", r.status, r.body)
	}
	if got.Incident != c || got.Verdict != "wrong" || got.By != "cy" || !strings.Contains(got.State, "NCCL all-reduce stall") {
		t.Errorf("script review answered %+v", got)
	}
	if inc, _ := f.st.Incident(ctx, c); inc.TrueCause != got.TrueCause || got.TrueCause == "" {
		t.Errorf("stored true cause %q, answered %q", inc.TrueCause, got.TrueCause)
	}
	// The new cause is offered in every picker from now on.
	r = f.do(t, http.MethodGet, route.URL(route.IncidentShow, a), nil, nil)
	if !strings.Contains(r.body, `value="`+got.TrueCause+`"`) {
		t.Errorf("the picker does not offer the cause created here (%s)", got.TrueCause)
	}
	// A wrong verdict without a cause is refused, in JSON for the script.
	body, hdr = form("verdict", "wrong", "true_cause", "")
	hdr["Accept"] = "application/json"
	if r = f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", a), body, hdr); r.status != 400 {
		t.Errorf("wrong without a cause: %d", r.status)
	}
}

// TestReviewQueuePage lists the unreviewed incidents with their buttons
// and shortcuts, filters them, and empties as they are reviewed.
func TestReviewQueuePage(t *testing.T) {
	f := newArchiveFixture(t)
	ids := []int64{f.openViaAlert(t, "00000000000000c1", "one"), f.openViaAlert(t, "00000000000000c2", "two")}
	r := f.do(t, http.MethodGet, "/review", nil, nil)
	if r.status != 200 {
		t.Fatalf("GET /review: %d %.300s", r.status, r.body)
	}
	if n := strings.Count(r.body, `data-testid="queue-item"`); n != 2 {
		t.Errorf("%d queue items, want 2", n)
	}
	for _, w := range []string{`data-testid="queue-shortcuts"`, `<kbd>j</kbd>`, `<kbd>w</kbd> then a number`, `<kbd>n</kbd>`,
		`2 incidents of the last 7 days left to review`, `name="next" value="/review"`, `data-cause-n="1"`, `data-review-queue`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("queue lacks %q", w)
		}
	}
	if r := f.do(t, http.MethodGet, "/review?model=nope", nil, nil); !strings.Contains(r.body, `data-testid="queue-empty"`) {
		t.Errorf("filter by an unknown model still lists incidents")
	}
	if r := f.do(t, http.MethodGet, "/review?cause="+metrics.CauseKVCacheEviction, nil, nil); strings.Count(r.body, `data-testid="queue-item"`) != 2 {
		t.Errorf("filter by the diagnosed cause lost incidents")
	}
	if r := f.do(t, http.MethodGet, "/review?model="+strings.Repeat("x", 300), nil, nil); r.status != 400 {
		t.Errorf("an overlong filter: %d", r.status)
	}
	body, hdr := form("verdict", "correct", "next", "/review")
	if r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", ids[0]), body, hdr); r.header.Get("Location") != "/review" {
		t.Fatalf("review from the queue returns to %q", r.header.Get("Location"))
	}
	r = f.do(t, http.MethodGet, "/review", nil, nil)
	if strings.Count(r.body, `data-testid="queue-item"`) != 1 || !strings.Contains(r.body, `1 incident of the last 7 days left`) {
		t.Errorf("after one review the queue reads %.600s", r.body)
	}
	if r := f.do(t, http.MethodGet, "/accuracy", nil, nil); !strings.Contains(r.body, `href="/review"`) {
		t.Error("the accuracy page does not link to the review queue")
	}
}

var ogImage = regexp.MustCompile(`<meta property="og:image" content="([^"]+)"`)

// TestLinkPreview checks the cards of an incident and of its share link,
// and who may fetch their pictures.
func TestLinkPreview(t *testing.T) {
	f := newArchiveFixture(t)
	id := f.openViaAlert(t, "00000000000000d1", "KV storm")
	path := route.URL(route.IncidentShow, id)
	r := f.do(t, http.MethodGet, path, nil, nil)
	for _, w := range []string{`<meta property="og:title" content="#`, `<meta name="twitter:card" content="summary_large_image"`,
		`<meta property="og:description" content="Critical · `, `llama-70b/llama-70b-1`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("incident page lacks %q", w)
		}
	}
	if m := ogImage.FindStringSubmatch(r.body); m == nil || !strings.HasSuffix(m[1], path+"/preview.png") || !strings.HasPrefix(m[1], "http") {
		t.Errorf("incident og:image %v, want the absolute URL of %s/preview.png", m, path)
	}

	// A crawler (no cookie, no sign-in) may not fetch a non-shared preview.
	if r := f.do(t, http.MethodGet, path+"/preview.png", nil, nil); r.status != http.StatusForbidden {
		t.Errorf("cookie-less preview of a non-shared incident: %d, want 403", r.status)
	}
	r = f.do(t, http.MethodGet, path+"/preview.png", nil, map[string]string{"Cookie": "casebook_csrf=" + testCSRF})
	checkPNG(t, "console preview", r)

	// Share it: the share page's card points at the share's picture,
	// which a crawler may fetch until the link is revoked.
	body, hdr := form("ttl", "24h", "by", "ana")
	r = f.do(t, http.MethodPost, path+"/shares", body, hdr)
	m := regexp.MustCompile(`/share/([A-Za-z0-9_-]+)`).FindStringSubmatch(r.body)
	if r.status != http.StatusCreated || m == nil {
		t.Fatalf("share: %d", r.status)
	}
	token := m[1]
	r = f.do(t, http.MethodGet, "/share/"+token, nil, nil)
	img := ogImage.FindStringSubmatch(r.body)
	if img == nil || !strings.HasSuffix(img[1], "/share/"+token+"/preview.png") {
		t.Fatalf("share og:image %v", img)
	}
	if strings.Contains(r.body, path+"/preview.png") {
		t.Error("the share page's card names the incident's own preview")
	}
	r = f.do(t, http.MethodGet, "/share/"+token+"/preview.png", nil, nil)
	checkPNG(t, "share preview", r)
	if r.header.Get("Set-Cookie") != "" || r.header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("share preview headers: %v", r.header)
	}
	if r := f.do(t, http.MethodGet, "/share/"+token+"x/preview.png", nil, nil); r.status != 404 {
		t.Errorf("forged token preview: %d", r.status)
	}
	shares, err := f.st.Shares(context.Background(), id)
	if err != nil || len(shares) != 1 {
		t.Fatal(shares, err)
	}
	if r := f.do(t, http.MethodPost, fmt.Sprintf("%s/shares/%d/revoke", path, shares[0].ID), nil, nil); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := f.do(t, http.MethodGet, "/share/"+token+"/preview.png", nil, nil); r.status != 404 {
		t.Errorf("revoked share's preview: %d, want 404", r.status)
	}
}

func checkPNG(t *testing.T, what string, r response) {
	t.Helper()
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("%s: %d %s %.200s", what, r.status, r.header.Get("Content-Type"), r.body)
	}
	img, err := png.Decode(bytes.NewReader([]byte(r.body)))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b := img.Bounds()
	if b.Dx() != views.PreviewWidth || b.Dy() != views.PreviewHeight {
		t.Errorf("%s: %v", what, b)
	}
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 4 {
		t.Errorf("%s is nearly blank: %d colours", what, len(colours))
	}
}

// TestReviewerIsTheSignedInUser: behind an authenticating proxy the review
// asks no name and records the proxy's user, whatever the form says.
func TestReviewerIsTheSignedInUser(t *testing.T) {
	f := newAuthFixture(t, web.AuthProxy, "127.0.0.1/32,::1")
	ctx := context.Background()
	if _, err := f.st.AddUser(ctx, "dana", "reviewer", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	id := (&archiveFixture{fixture: f.fixture, st: f.st}).openViaAlert(t, "00000000000000e1", "proxy review")
	as := map[string]string{"X-Forwarded-User": "dana"}
	r := f.do(t, http.MethodGet, route.URL(route.IncidentShow, id), nil, as)
	if r.status != 200 || !strings.Contains(r.body, `data-testid="review-correct"`) {
		t.Fatalf("incident page as dana: %d", r.status)
	}
	if strings.Contains(r.body, `name="by"`) || strings.Contains(r.body, "Your name") {
		t.Error("the review asks for a name although dana is signed in")
	}
	body, hdr := form("verdict", "correct", "by", "mallory")
	hdr["X-Forwarded-User"] = "dana"
	if r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/labels", id), body, hdr); r.status != http.StatusSeeOther {
		t.Fatalf("review: %d %.300s", r.status, r.body)
	}
	p, err := f.st.Page(ctx, id)
	if err != nil || len(p.Labels) != 1 || p.Labels[0].By != "dana" {
		t.Errorf("label by %+v (%v), want dana", p.Labels, err)
	}
}
