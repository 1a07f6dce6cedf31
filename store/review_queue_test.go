package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func TestReviewQueue(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	type spec struct {
		title    string
		offset   time.Duration
		severity string
		model    string
		cause    string
	}
	specs := []spec{
		{"old warning", 0, "warning", "llama-8b", metrics.CauseKVCacheEviction},
		{"new critical", 9 * 24 * time.Hour, "critical", "llama-8b", metrics.CauseQueueBacklog},
		{"old critical", time.Hour, "critical", "qwen-7b", metrics.CauseKVCacheEviction},
		{"info", 2 * time.Hour, "info", "llama-8b", metrics.CauseKVCacheEviction},
		{"reviewed critical", 30 * time.Minute, "critical", "llama-8b", metrics.CauseKVCacheEviction},
		{"newer warning", 8 * 24 * time.Hour, "warning", "qwen-7b", metrics.CauseQueueBacklog},
	}
	ids := map[string]int64{}
	for _, sp := range specs {
		in := newIncident(sp.title, sp.offset, nil)
		in.Severity = sp.severity
		in.Scope.Model, in.Snapshot.Scope.Model = sp.model, sp.model
		inc := mustOpen(t, s, in, newDiagnosis(sp.cause, "v1"))
		ids[sp.title] = inc.ID
	}
	if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: ids["reviewed critical"], Verdict: store.VerdictCorrect, By: "ana", At: t0}); err != nil {
		t.Fatal(err)
	}
	since := t0.Add(7 * 24 * time.Hour) // the last week before t0+10 days
	tests := []struct {
		name          string
		f             store.QueueFilter
		want          []string
		total, recent int
	}{
		{"worst then oldest", store.QueueFilter{Since: since},
			[]string{"old critical", "new critical", "old warning", "newer warning", "info"}, 5, 2},
		{"by model", store.QueueFilter{Model: "qwen-7b", Since: since}, []string{"old critical", "newer warning"}, 2, 1},
		{"by diagnosed cause", store.QueueFilter{Cause: metrics.CauseQueueBacklog, Since: since}, []string{"new critical", "newer warning"}, 2, 2},
		{"limit keeps the counts", store.QueueFilter{Limit: 1}, []string{"old critical"}, 5, 0},
		{"no match", store.QueueFilter{Model: "nope"}, nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := s.ReviewQueue(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range q.Items {
				for title, id := range ids {
					if id == it.ID {
						got = append(got, title)
					}
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queue %v, want %v", got, tc.want)
			}
			if q.Total != tc.total || q.Recent != tc.recent {
				t.Errorf("total %d, recent %d; want %d and %d", q.Total, q.Recent, tc.total, tc.recent)
			}
			if !slices.Equal(q.Models, []string{"llama-8b", "qwen-7b"}) {
				t.Errorf("models %v", q.Models)
			}
		})
	}
}
