package handlers_test

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/metrics"
)

// fleetTel is a fake fleet of n models with two instances each; the
// incident is on model m03's instance 1.
func fleetTel(n int) *handlerstest.Telemetry {
	var models []handlerstest.Model
	for i := range n {
		name := fmt.Sprintf("m%02d", i)
		models = append(models, handlerstest.Model{Name: name, Instances: []string{name + "-0", name + "-1"}})
	}
	return handlerstest.NewTelemetry(handlerstest.Options{
		Span: time.Hour, Models: models, Incident: metrics.Scope{Model: "m03", Instance: "m03-1"},
	})
}

func TestOverviewFleet(t *testing.T) {
	f := newFixture(t, fleetTel(25), nil)
	tests := []struct {
		name       string
		path       string
		wantStatus int
		want       []string
		notWant    []string
		wantCount  map[string]int
	}{
		{name: "first page, worst first", path: "/", wantStatus: 200,
			want: []string{`data-testid="fleet-models"><b>25</b>`, `data-testid="fleet-engines"><b>50</b>`, `data-testid="fleet-gpus"><b>100</b>`,
				`href="/?page=2" data-testid="page-next"`, "models 1–20 of 25"},
			notWant:   []string{`data-testid="page-prev"`},
			wantCount: map[string]int{`data-testid="model-group"`: 20, `data-testid="instance-line"`: 40, `class="spark`: 20 * 12}},
		{name: "last page", path: "/?page=2", wantStatus: 200,
			want:      []string{`href="/" data-testid="page-prev"`, "models 21–25 of 25"},
			notWant:   []string{`data-testid="page-next"`},
			wantCount: map[string]int{`data-testid="model-group"`: 5}},
		{name: "a page past the end shows the last", path: "/?page=9", wantStatus: 200,
			wantCount: map[string]int{`data-testid="model-group"`: 5}},
		{name: "search by model", path: "/?q=M07", wantStatus: 200,
			want:      []string{`data-model="m07"`, `value="M07"`, `data-testid="filter-clear"`},
			notWant:   []string{`data-testid="overview-pager"`, "<details class=\"instances\" open"},
			wantCount: map[string]int{`data-testid="model-group"`: 1, `data-testid="instance-line"`: 2}},
		{name: "search by instance unfolds the model", path: "/?q=m11-1", wantStatus: 200,
			want:      []string{`data-scope="m11/m11-1"`, "<details class=\"instances\" open"},
			wantCount: map[string]int{`data-testid="model-group"`: 1, `data-testid="instance-line"`: 1}},
		{name: "status filter", path: "/?status=critical", wantStatus: 200,
			want:      []string{`data-model="m03"`, `<option value="critical" selected>`},
			wantCount: map[string]int{`data-testid="model-group"`: 1}},
		{name: "nothing matches", path: "/?q=nope&status=ok", wantStatus: 200,
			want:      []string{`data-testid="no-match"`, `data-testid="fleet-models"><b>25</b>`},
			wantCount: map[string]int{`data-testid="model-group"`: 0}},
		{name: "filter kept across pages", path: "/?q=m", wantStatus: 200,
			want: []string{`href="/?page=2&amp;q=m" data-testid="page-next"`}},
		{name: "bad status", path: "/?status=red", wantStatus: 400, want: []string{`<code>status</code>`, "critical, warning, ok, nodata"}},
		{name: "bad page", path: "/?page=0", wantStatus: 400, want: []string{`<code>page</code>`}},
		{name: "page not a number", path: "/?page=two", wantStatus: 400, want: []string{`<code>page</code>`}},
		{name: "search too long", path: "/?q=" + strings.Repeat("x", 300), wantStatus: 400, want: []string{`<code>q</code>`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, http.MethodGet, tc.path, nil, nil)
			if r.status != tc.wantStatus {
				t.Fatalf("GET %s: status %d, want %d", tc.path, r.status, tc.wantStatus)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("GET %s lacks %s", tc.path, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(r.body, w) {
					t.Errorf("GET %s has %s", tc.path, w)
				}
			}
			for w, n := range tc.wantCount {
				if got := strings.Count(r.body, w); got != n {
					t.Errorf("GET %s: %d x %s, want %d", tc.path, got, w, n)
				}
			}
		})
	}
}

// TestOverviewCostFollowsThePage checks that the page sends the same
// HTML for the shown models whether the fleet has 25 or 60 of them: the
// rest are counted in the summary, not rendered.
func TestOverviewCostFollowsThePage(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{25, 60} {
		r := newFixture(t, fleetTel(n), nil).do(t, http.MethodGet, "/", nil, nil)
		if r.status != 200 {
			t.Fatalf("%d models: status %d", n, r.status)
		}
		if got := strings.Count(r.body, `class="spark`); got != 20*12 {
			t.Errorf("%d models: %d sparklines, want those of the 20 shown models", n, got)
		}
		sizes[n] = len(r.body)
	}
	// The two pages differ only in counts and names; allow 2%.
	if d := sizes[60] - sizes[25]; d < -sizes[25]/50 || d > sizes[25]/50 {
		t.Errorf("HTML of a 60-model fleet is %d bytes, of a 25-model fleet %d: it grows with the fleet", sizes[60], sizes[25])
	}
}

// csrf matches a form's token, which differs from one fixture to another.
var csrf = regexp.MustCompile(`name="csrf_token" value="[0-9a-f]+"`)

// TestScopePagesFromTheFleetReading checks that the scope pages show the
// same rows and statuses whether their snapshots come from a reading of
// the whole fleet (live views read it; a past window takes a recent one)
// or are captured scope by scope (the fleet cannot be read).
func TestScopePagesFromTheFleetReading(t *testing.T) {
	alone := fleetTel(5)
	alone.FleetErr = errors.New("fleet unavailable")
	shared := fleetTel(5)
	shared.FleetCached = true
	past := "?from=" + alone.End.Add(-time.Hour).Format(time.RFC3339) + "&to=" + alone.End.Format(time.RFC3339)
	for _, path := range []string{"/scopes/m03", "/scopes/m03/m03-1", "/scopes/m03" + past, "/scopes/m03/m03-1" + past} {
		want := newFixture(t, alone, nil).get(t, path)
		got := newFixture(t, shared, nil).get(t, path)
		if got.status != http.StatusOK || want.status != http.StatusOK {
			t.Fatalf("GET %s: %d from the fleet reading, %d alone", path, got.status, want.status)
		}
		if !strings.Contains(got.body, "st-crit") {
			t.Errorf("GET %s from the fleet reading shows no critical status", path)
		}
		if csrf.ReplaceAllString(got.body, "") != csrf.ReplaceAllString(want.body, "") {
			t.Errorf("GET %s differs when read from the fleet reading", path)
		}
	}
}
