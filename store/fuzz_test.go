package store_test

import (
	"context"
	"testing"

	"github.com/casebook/casebook/store"
)

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "1.1", "zz.zz", "-1.5", "1.2.3", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := store.ParseCursor(s)
		if err != nil || c.IsZero() {
			return
		}
		back, err := store.ParseCursor(c.String())
		if err != nil || back != c {
			t.Fatalf("cursor %q -> %+v does not round-trip: %+v %v", s, c, back, err)
		}
	})
}

// FuzzSearch feeds arbitrary text to the full-text search: it must never
// fail with an FTS5 syntax error or reach SQL as anything but a parameter.
func FuzzSearch(f *testing.F) {
	s := openTest(f)
	mustOpen(f, s, newIncident("TTFT spike", 0, nil), newDiagnosis("kv_cache_eviction", "v1"))
	for _, q := range []string{"ttft", `"unbalanced`, "NEAR(a b)", "a OR b", "col:x", "*", "^x", "'); DROP TABLE incidents;--", "ünïcödé"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > store.MaxQueryBytes {
			return
		}
		if _, err := s.List(context.Background(), store.ListFilter{Query: q}); err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
	})
}
