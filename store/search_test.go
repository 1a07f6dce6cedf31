package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSearchRecentSplit checks that searching the newest incidents first
// (search_recent) and the rest in the full index returns exactly what the
// full index alone returns, page by page, across the boundary between
// them: in an archive upgraded to migration 8 and then grown past the
// window, so both the migration's fill and the triggers' pruning are used.
// It checks the same of List's exact terms (see exactQuery).
func TestSearchRecentSplit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "split.db")
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var before8 []Migration
	for _, m := range migs {
		if m.Version < 8 {
			before8 = append(before8, m)
		}
	}
	// Titles: every incident says alpha; every 7th also alphabet (a longer
	// word under the same prefix), every 1000th beta, the first 50 gamma
	// (only below the recent range). Models m0..m2 rotate.
	const seed = `
		WITH RECURSIVE c(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM c WHERE n < ?)
		INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end)
		SELECT n, 'alpha' || iif(n % 7 = 0, ' alphabet', '') || iif(n % 1000 = 0, ' beta', '') || iif(n <= 50, ' gamma', ''),
			'm' || (n % 3), 'manual', n * 1000000000, 0, 1 FROM c`
	db := oldArchive(t, path, before8)
	if _, err := db.ExecContext(ctx, seed, 1, 21000); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openUpgraded(t, path, migs)
	defer s.Close()
	if _, err := s.w.ExecContext(ctx, seed, 21001, 23000); err != nil {
		t.Fatal(err)
	}
	var n, lo int64
	if err := s.w.QueryRowContext(ctx, `SELECT count(*), min(rowid) FROM search_recent`).Scan(&n, &lo); err != nil || n != 20000 || lo != 3001 {
		t.Fatalf("search_recent holds %d rows from %d (%v), want 20000 from 3001", n, lo, err)
	}
	// A note and a diagnosis on a recent incident reach search_recent too.
	for _, q := range []string{
		`INSERT INTO notes (incident_id, author, created_at, body) VALUES (22999, 'ana', 1, 'zeta seen')`,
		`INSERT INTO diagnoses (incident_id, engine_version, created_at, root_cause, confidence, body, evidence_text) VALUES (22998, 'v', 1, 'queue_backlog', 0.5, '{}', 'thermal limit')`,
		`INSERT INTO notes (incident_id, author, created_at, body) VALUES (10, 'ana', 1, 'zeta old')`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	cases := []struct {
		name  string
		f     ListFilter
		match string
		want  int // matches in all
	}{
		{"every incident", ListFilter{Query: "alpha", Limit: 500}, `"alpha"*`, 23000},
		{"prefix of every incident", ListFilter{Query: "alp", Limit: MaxPageSize}, `"alp"*`, 23000},
		{"longer word", ListFilter{Query: "alphabet", Limit: 400}, `"alphabet"*`, 23000 / 7},
		{"rare", ListFilter{Query: "beta", Limit: 3}, `"beta"*`, 23},
		{"two words", ListFilter{Query: "alpha beta", Limit: 5}, `"alpha"* "beta"*`, 23},
		{"only old", ListFilter{Query: "gamma", Limit: 10}, `"gamma"*`, 50},
		{"note in both", ListFilter{Query: "zeta", Limit: 1}, `"zeta"*`, 2},
		{"diagnosis", ListFilter{Query: "therm"}, `"therm"*`, 1},
		{"filter", ListFilter{Query: "alpha", Model: "m1", Limit: 300}, `"alpha"*`, 7667},
	}
	// Each case runs as List runs it, with its plain words as exact terms,
	// and again with every word a prefix, which searches search_recent
	// first: maxExpansion 0 lets no word become exact terms.
	defer func(was int) { maxExpansion = was }(maxExpansion)
	for _, expansion := range []int{maxExpansion, 0} {
		maxExpansion = expansion
		how := map[int]string{0: "prefixes/"}[expansion]
		for _, tc := range cases {
			t.Run(how+tc.name, func(t *testing.T) {
				q := `SELECT search.rowid FROM search JOIN incidents i ON i.id = search.rowid WHERE search MATCH ?`
				args := []any{tc.match}
				if tc.f.Model != "" {
					q += ` AND i.model = ?`
					args = append(args, tc.f.Model)
				}
				rows, err := s.r.QueryContext(ctx, q+` ORDER BY search.rowid DESC`, args...)
				if err != nil {
					t.Fatal(err)
				}
				var want []int64
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					want = append(want, id)
				}
				rows.Close()
				if len(want) != tc.want {
					t.Fatalf("the full index finds %d, the case expects %d", len(want), tc.want)
				}
				var got []int64
				f := tc.f
				for pages := 0; ; pages++ {
					if pages > len(want)+1 {
						t.Fatal("paging does not end")
					}
					p, err := s.List(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, it := range p.Items {
						got = append(got, it.ID)
					}
					if p.Next.IsZero() {
						break
					}
					f.After = p.Next
				}
				if !slices.Equal(got, want) {
					t.Errorf("paged search found %d ids %s, the full index %d %s", len(got), head(got), len(want), head(want))
				}
			})
		}
	}
}

// ftsQuery is the query exactQuery stands for: every word a prefix.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range ftsWords(q) {
		terms = append(terms, ftsQuote(w)+"*")
	}
	return strings.Join(terms, " ")
}

// TestExactQuery checks that the full index finds the same rows for
// exactQuery's exact terms as for ftsQuery's prefixes, and that it names
// exact terms only for plain words that begin few terms, all plain.
func TestExactQuery(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	titles := []string{"alpha", "alphabet soup", "Alphanumeric ID", "Straße closed", "café crème", "k8s node", "k9 pod", "kv_cache full", "rare alpha", "Über load"}
	for i := range maxExpansion + 1 {
		titles = append(titles, fmt.Sprintf("many m%02d", i))
	}
	for i, title := range titles {
		for k := range 3 {
			if _, err := s.w.ExecContext(ctx, `INSERT INTO incidents (title, model, trigger_kind, opened_at, window_start, window_end)
				VALUES (?, 'm', 'manual', ?, 0, 1)`, title, i*3+k); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		q, want string
		exact   bool
	}{
		{"alpha", `("alpha" OR "alphabet" OR "alphanumeric")`, true},
		{"ALPHABET", `"alphabet"`, true},
		{"alp rare", `("alpha" OR "alphabet" OR "alphanumeric") AND "rare"`, true},
		{"nothing", `"nothing"`, true},
		{"stra", `"stra"*`, false}, // begins straße: not plain
		{"café", `"café"*`, false}, // not plain itself
		{"m", `"m"*`, false},       // begins more than maxExpansion terms
		{"many m3", `"many" AND ("m30" OR "m31" OR "m32")`, true},
		{"kv_cache", `"kv_cache"*`, false}, // two tokens to unicode61
		{"k8 stra", `"k8s" AND "stra"*`, false},
		{"uber", `"uber"`, true}, // Über is indexed as uber
	}
	for _, tc := range cases {
		got, exact, err := exactQuery(ctx, s.r, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want || exact != tc.exact {
			t.Errorf("exactQuery(%q) = %s, %v; want %s, %v", tc.q, got, exact, tc.want, tc.exact)
		}
		ids := func(q string) []int64 {
			items, err := searchIndex(ctx, s.r, "search", q, nil, nil, 0, 1000)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			var out []int64
			for _, it := range items {
				out = append(out, it.ID)
			}
			return out
		}
		if exact, prefix := ids(got), ids(ftsQuery(tc.q)); !slices.Equal(exact, prefix) {
			t.Errorf("%q: exact terms find %v, prefixes %v", tc.q, exact, prefix)
		}
	}
}

func head(ids []int64) string {
	if len(ids) > 8 {
		return fmt.Sprint(ids[:8], "...")
	}
	return fmt.Sprint(ids)
}

// BenchmarkSearchSplit compares one prefix search over the full index
// with List's search (newest_first: for these plain words, exact terms
// read newest first; see search) on an archive of CASEBOOK_BENCH_INCIDENTS
// incidents (default 100,000) written by plain SQL in seconds: titles
// only, so it isolates the full-text cost from BenchmarkSearch's evidence
// and notes. Words: every incident says alpha, every 100th medium, every
// 1000th rare, models m0..m3 rotate.
//
//	CASEBOOK_BENCH_INCIDENTS=1000000 go test -tags sqlite_fts5 -run '^$' -bench SearchSplit -benchtime 30x ./store/
func BenchmarkSearchSplit(b *testing.B) {
	ctx := context.Background()
	s := openInternal(b)
	n := benchSplitSize()
	if _, err := s.w.ExecContext(ctx, `
		WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?)
		INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end)
		SELECT n, 'alpha incident' || iif(n % 100 = 0, ' medium', '') || iif(n % 1000 = 0, ' rare', ''),
			'm' || (n % 4), 'manual', n * 300000000000, 0, 1 FROM c`, n); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		f    ListFilter
	}{
		{"every_incident", ListFilter{Query: "alpha"}},
		{"every_incident_prefix", ListFilter{Query: "inc"}},
		{"every_100th", ListFilter{Query: "medium"}},
		{"every_1000th", ListFilter{Query: "rare"}},
		{"every_100th_model", ListFilter{Query: "medium", Model: "m0"}},
		{"two_words", ListFilter{Query: "alpha rare"}},
	}
	for _, tc := range cases {
		for _, how := range []string{"full_index", "newest_first"} {
			b.Run(tc.name+"/"+how, func(b *testing.B) {
				got := 0
				for b.Loop() {
					if how == "newest_first" {
						p, err := s.List(ctx, tc.f)
						if err != nil {
							b.Fatal(err)
						}
						got = len(p.Items)
						continue
					}
					var where []string
					var args []any
					if tc.f.Model != "" {
						where, args = []string{`i.model = ?`}, []any{tc.f.Model}
					}
					items, err := searchIndex(ctx, s.r, "search", ftsQuery(tc.f.Query), where, args, 0, DefaultPageSize+1)
					if err != nil {
						b.Fatal(err)
					}
					got = min(len(items), DefaultPageSize)
				}
				if got != DefaultPageSize {
					b.Fatalf("found %d, want a full page", got)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
			})
		}
	}
}

func benchSplitSize() int {
	n, err := strconv.Atoi(os.Getenv("CASEBOOK_BENCH_INCIDENTS"))
	if err != nil || n < 1000 {
		return 100_000
	}
	return n
}
