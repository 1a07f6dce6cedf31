package route

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		route  Name
		params []any
		query  url.Values
		want   string
	}{
		{"root", Overview, nil, nil, "/"},
		{"static path", IncidentList, nil, nil, "/incidents"},
		{"int64 id", IncidentShow, []any{int64(42)}, nil, "/incidents/42"},
		{"int id", IncidentNote, []any{7}, nil, "/incidents/7/notes"},
		{"two ids", IncidentRevoke, []any{int64(3), int64(9)}, nil, "/incidents/3/shares/9/revoke"},
		{"escaped segments", ScopeInstance, []any{"meta/llama 3", "pod?0"}, nil, "/scopes/meta%2Fllama%203/pod%3F0"},
		{"dot in a segment", ChangeShow, []any{int64(1), "2.md"}, nil, "/incidents/1/changes/2.md"},
		{"wildcard keeps slashes", Static, []any{"css/a b.css"}, nil, "/static/css/a%20b.css"},
		{"query", IncidentList, nil, url.Values{"cause": {"kv_cache_eviction"}, "q": {"a&b"}}, "/incidents?cause=kv_cache_eviction&q=a%26b"},
		{"empty query", Users, nil, url.Values{}, "/admin/users"},
		{"query after params", ScopeModel, []any{"m"}, url.Values{"range": {"1h"}}, "/scopes/m?range=1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URLQuery(tc.route, tc.query, tc.params...); got != tc.want {
				t.Errorf("URLQuery(%s, %v, %v) = %q, want %q", tc.route, tc.query, tc.params, got, tc.want)
			}
		})
	}
}

// TestEveryPatternBuilds fills every route's parameters and checks that
// the URL has the pattern's shape: the same segments, each parameter
// replaced.
func TestEveryPatternBuilds(t *testing.T) {
	if len(Names()) < 50 {
		t.Fatalf("only %d routes", len(Names()))
	}
	for _, n := range Names() {
		pat := n.Pattern()
		if !strings.HasPrefix(pat, "/") {
			t.Errorf("%s: pattern %q does not start with /", n, pat)
		}
		segs := strings.Split(pat, "/")
		var params []any
		want := make([]string, len(segs))
		for i, s := range segs {
			want[i] = s
			if strings.HasPrefix(s, ":") || s == "*" {
				params = append(params, "p"+s[1:])
				want[i] = "p" + s[1:]
			}
		}
		if got := URL(n, params...); got != strings.Join(want, "/") {
			t.Errorf("URL(%s) = %q, want %q", n, got, strings.Join(want, "/"))
		}
	}
}

func TestURLRefusesWrongParameters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		route  Name
		params []any
		want   string
	}{
		{"too few", IncidentRevoke, []any{1}, "takes more than 1"},
		{"too many", IncidentList, []any{1}, "takes 0 parameters, got 1"},
		{"wrong type", IncidentShow, []any{1.5}, "is a float64"},
		{"empty string", KBShow, []any{""}, "is empty"},
		{"unknown name", Name("nowhere"), nil, `"nowhere" is not a route`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.want) {
					t.Errorf("panic %v, want one saying %q", r, tc.want)
				}
			}()
			URL(tc.route, tc.params...)
			t.Error("no panic")
		})
	}
}
