package views

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
)

func renderIn(t *testing.T, tag string, c templ.Component) string {
	t.Helper()
	lang, _ := i18n.Parse(tag)
	var buf bytes.Buffer
	if err := c.Render(i18n.With(context.Background(), i18n.New(lang)), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return buf.String()
}

var (
	tagRE     = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<code.*?</code>|<[^>]*>`) // code is typed as it is
	englishRE = regexp.MustCompile(`[A-Za-z]{3,}[ ,;:]+[A-Za-z]{3,}`)
)

// textNodes are the page's visible text pieces.
func textNodes(html string) map[string]bool {
	out := map[string]bool{}
	for _, s := range tagRE.Split(html, -1) {
		if s = strings.TrimSpace(s); s != "" {
			out[s] = true
		}
	}
	return out
}

// engineDiagnosis diagnoses a golden input with the real engine, so that
// the page shows the texts the engine writes.
func engineDiagnosis(t *testing.T, cause string) diagnose.Diagnosis {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "diagnose", "testdata", cause+".input.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := diagnose.ParseSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	return diagnose.New(diagnose.Options{}).Diagnose(s)
}

// TestPagesInChinese renders the review flow's pages in English and in
// Chinese: a text piece the two renders share that holds two English
// words is a string the catalogs do not translate. Data the user typed
// (titles, names) is given in neither language.
func TestPagesInChinese(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	causes := []CauseOption{{ID: metrics.CauseKVCacheEviction, Title: metrics.CauseTitle(metrics.CauseKVCacheEviction)},
		{ID: metrics.CauseQueueBacklog, Title: metrics.CauseTitle(metrics.CauseQueueBacklog)}, {ID: "nccl", Title: "nccl", Custom: true}}
	d := engineDiagnosis(t, "kv_cache_eviction")
	panel := DiagnosisPanelView{D: d, ChangeURL: "/incidents/7/changes"}
	review := ReviewControls{IncidentID: 7, Diagnosed: d.RootCause, Causes: WrongCauses(causes, d.RootCause)}
	inc := IncidentView{
		ID: 7, Title: "x-1", Scope: metrics.Scope{Model: "m-1"}, OpenedAt: at, WindowStart: at.Add(-time.Hour), WindowEnd: at,
		Severity: "critical", Current: panel, AlertState: "firing",
		Timeline: []TimelineEntry{{At: at, Kind: "opened", Text: "x"}, {At: at, Kind: "label", Text: "y"}},
		Similar:  []SimilarIncident{{ID: 3, Title: "x-3", CauseTitle: metrics.CauseTitle(metrics.CauseKVCacheEviction), Similarity: 0.9, Verdict: "correct", Shared: []string{metrics.KVCacheUsage}}},
		Shares:   []ShareRow{{ID: 1, CreatedAt: at, ExpiresAt: at.Add(time.Hour), Active: true}},
		Past:     []PastDiagnosis{{At: at, Panel: panel}},
		Review:   review, Causes: causes,
	}
	queue := ReviewQueueView{Items: []QueueItem{{ID: 7, Title: "x-1", Scope: metrics.Scope{Model: "m-1"}, OpenedAt: at, Severity: "warning",
		Cause: d.RootCause, Confidence: d.Confidence, Evidence: panel.Evidence()[0], Review: review}}, Models: []string{"m-1"}, Causes: causes, Left: 1, Total: 3, More: true}
	list := IncidentListView{Causes: causes, Rows: []IncidentRow{{ID: 7, Title: "x-1", OpenedAt: at, Severity: "info", RootCause: d.RootCause, Verdict: "wrong", TrueCause: metrics.CauseQueueBacklog}}, NextHref: "/incidents?c=1", FirstHref: "/incidents"}
	pages := map[string]templ.Component{
		"incident":  IncidentPage(inc),
		"print":     IncidentPrintPage(inc),
		"queue":     ReviewQueuePage(queue),
		"queue0":    ReviewQueuePage(ReviewQueueView{Model: "m-1", Cause: metrics.CauseQueueBacklog}),
		"list":      IncidentListPage(list),
		"error":     ErrorPage(ErrorView{Status: 500, Title: "x", Message: "y", RequestID: "r-1"}),
		"login":     LoginPage(LoginView{}),
		"diagnosis": DiagnosisPage(DiagnosisView{Scope: metrics.Scope{Model: "m-1"}, At: at, Panel: panel}),
		"users": UsersPage(UsersView{Roles: []string{"viewer"}, Flash: "x", Users: []AdminUser{
			{ID: 1, Name: "u-1", Role: "viewer", HasPassword: true, CreatedAt: at}, {ID: 2, Name: "u-2", Role: "viewer", CreatedAt: at}}}),
		"users0":  UsersPage(UsersView{Roles: []string{"viewer"}}),
		"tokens":  TokensPage(TokensView{Scopes: []string{"read"}, NewToken: "t-1", NewName: "n-1", Tokens: []AdminToken{{ID: 1, Name: "n-1", Scope: "read", CreatedAt: at, RevokedAt: at}, {ID: 2, Name: "n-2", Scope: "read", CreatedAt: at}}}),
		"tokens0": TokensPage(TokensView{Scopes: []string{"read"}}),
		"audit":   AuditPage(AuditView{Rows: []AuditRow{{ID: 1, At: at, Actor: "u-1", Action: "label"}}, Older: "/admin/audit?before=1"}),
		"audit0":  AuditPage(AuditView{}),
	}
	for name, page := range pages {
		en, zh := renderIn(t, "en", page), renderIn(t, "zh-CN", page)
		if !strings.Contains(zh, `<html lang="zh-CN"`) {
			t.Errorf("%s: the Chinese page is not marked zh-CN", name)
		}
		enText := textNodes(en)
		for s := range textNodes(zh) {
			if enText[s] && englishRE.MatchString(s) {
				t.Errorf("%s: %q is English in the Chinese page", name, s)
			}
		}
	}
}
