package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// openInternal opens a fresh archive for the package's own tests, which
// reach its connections; it is closed when the test ends.
func openInternal(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "casebook.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestSeedBulkIndexesLikeTheTriggers checks that SeedBulk, which drops the
// search triggers for its transaction and indexes the batch in bulk, leaves
// both search indexes as the triggers would have: across the edge of
// search_recent's window, with the triggers back in place afterwards.
func TestSeedBulkIndexesLikeTheTriggers(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	// Filler written row by row through the triggers, so the seeded batches
	// below push the oldest filler out of search_recent's window.
	const filler = recentWindow - 10
	if _, err := s.w.ExecContext(ctx, `
		WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?)
		INSERT INTO incidents (id, title, model, trigger_kind, opened_at, window_start, window_end)
		SELECT n, 'filler', 'm', 'manual', n, 0, 1 FROM c`, filler); err != nil {
		t.Fatal(err)
	}

	type row struct{ title, notes, evidence string }
	want := map[int64]row{}
	id := int64(filler)
	for batch := 0; batch < 2; batch++ {
		var ins []NewIncident
		var ds []DiagnosisRecord
		var notes []string
		for k := 0; k < 15; k++ {
			id++
			at := time.Unix(id, 0)
			ins = append(ins, NewIncident{
				Title: fmt.Sprintf("seeded %d", id), Scope: metrics.Scope{Model: "m"}, Trigger: TriggerManual,
				OpenedAt: at, WindowStart: at, WindowEnd: at,
			})
			d := DiagnosisRecord{EngineVersion: "v1", RootCause: "queue_backlog", Confidence: 0.5,
				Body: json.RawMessage(fmt.Sprintf(`{"title":"backlog %d","evidence":[{"text":"queue grew"}]}`, id))}
			ds = append(ds, d)
			r := row{title: fmt.Sprintf("seeded %d", id), evidence: "\n" + d.searchText()}
			note := ""
			if k%2 == 0 {
				note = fmt.Sprintf("checked %d", id)
				r.notes = "\n" + note
			}
			notes = append(notes, note)
			want[id] = r
		}
		if err := s.SeedBulk(ctx, ins, ds, notes); err != nil {
			t.Fatal(err)
		}
	}

	for index, from := range map[string]int64{"search": 1, "search_recent": id - recentWindow + 1} {
		rows, err := s.r.QueryContext(ctx, `SELECT rowid, title, notes, evidence FROM `+index+` WHERE rowid > ? ORDER BY rowid`, filler)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var got row
			if err := rows.Scan(&id, &got.title, &got.notes, &got.evidence); err != nil {
				t.Fatal(err)
			}
			if got != want[id] {
				t.Errorf("%s row %d is %q, the triggers write %q", index, id, got, want[id])
			}
			n++
		}
		rows.Close()
		var count, lo int64
		if err := s.r.QueryRowContext(ctx, `SELECT count(*), min(rowid) FROM `+index).Scan(&count, &lo); err != nil {
			t.Fatal(err)
		}
		if n != len(want) || count != id-from+1 || lo != from {
			t.Errorf("%s holds %d rows from %d, %d of them seeded; want %d from %d, %d seeded", index, count, lo, n, id-from+1, from, len(want))
		}
		if _, err := s.w.ExecContext(ctx, `INSERT INTO `+index+` (`+index+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("%s: %v", index, err)
		}
	}

	// The triggers are back: a note added now reaches both indexes.
	if _, err := s.AddNote(ctx, NewNote{IncidentID: id, Author: "ana", Body: "nvlink"}); err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"search", "search_recent"} {
		var got int64
		if err := s.r.QueryRowContext(ctx, `SELECT rowid FROM `+index+` WHERE `+index+` MATCH 'nvlink'`).Scan(&got); err != nil || got != id {
			t.Errorf("%s finds the new note on %d (%v), want %d", index, got, err, id)
		}
	}
}
