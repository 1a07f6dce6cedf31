package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func TestListFiltersAndPaging(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	// 30 incidents a minute apart; every third on another model, causes rotate.
	causes := []string{metrics.CauseKVCacheEviction, metrics.CauseQueueBacklog, metrics.CauseGPUThrottling}
	var ids []int64
	for i := 0; i < 30; i++ {
		in := newIncident(fmt.Sprintf("incident %d", i), time.Duration(i)*time.Minute, nil)
		if i%3 == 0 {
			in.Scope = metrics.Scope{Model: "qwen-32b", Instance: "qwen-32b-1"}
		}
		if i%2 == 0 {
			in.Severity = "warning"
		}
		inc := mustOpen(t, s, in, newDiagnosis(causes[i%len(causes)], "v1"))
		ids = append(ids, inc.ID)
	}
	// Review the first ten: even ones correct, odd ones wrong (true cause none).
	for i := 0; i < 10; i++ {
		l := store.NewLabel{IncidentID: ids[i], Verdict: store.VerdictCorrect, By: "ana"}
		if i%2 == 1 {
			l = store.NewLabel{IncidentID: ids[i], Verdict: store.VerdictWrong, TrueCause: metrics.CauseNone, By: "ana"}
		}
		if _, err := s.AddLabel(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	count := func(pred func(i int) bool) int {
		n := 0
		for i := range ids {
			if pred(i) {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name   string
		filter store.ListFilter
		want   int
	}{
		{"all", store.ListFilter{}, 30},
		{"model", store.ListFilter{Model: "qwen-32b"}, count(func(i int) bool { return i%3 == 0 })},
		{"instance", store.ListFilter{Model: "llama-8b", Instance: "llama-8b-0"}, count(func(i int) bool { return i%3 != 0 })},
		// The cause is the reviewed true cause, else the diagnosed one.
		{"cause diagnosed", store.ListFilter{Cause: metrics.CauseQueueBacklog}, count(func(i int) bool { return i%3 == 1 && !(i < 10 && i%2 == 1) })},
		{"cause true", store.ListFilter{Cause: metrics.CauseNone}, 5},
		{"search", store.ListFilter{Query: "incident"}, 30},
		{"search and filter", store.ListFilter{Query: "incident", Model: "qwen-32b", Verdict: store.VerdictUnreviewed}, count(func(i int) bool { return i%3 == 0 && i >= 10 })},
		{"severity", store.ListFilter{Severity: "warning"}, 15},
		{"unreviewed", store.ListFilter{Verdict: store.VerdictUnreviewed}, 20},
		{"correct", store.ListFilter{Verdict: store.VerdictIsCorrect}, 5},
		{"wrong", store.ListFilter{Verdict: store.VerdictIsWrong}, 5},
		{"time range", store.ListFilter{From: t0.Add(10 * time.Minute), To: t0.Add(20 * time.Minute)}, 10},
		{"combined", store.ListFilter{Model: "qwen-32b", Verdict: store.VerdictIsCorrect}, count(func(i int) bool { return i < 10 && i%2 == 0 && i%3 == 0 })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Page through 4 at a time; the pages must tile the result.
			f := tc.filter
			f.Limit = 4
			seen := map[int64]bool{}
			var last store.Summary
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("paging does not end")
				}
				page, err := s.List(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Items {
					if seen[it.ID] {
						t.Fatalf("incident %d on two pages", it.ID)
					}
					if last.ID != 0 && it.OpenedAt.After(last.OpenedAt) {
						t.Fatalf("incident %d out of order", it.ID)
					}
					seen[it.ID], last = true, it
				}
				if page.Next.IsZero() {
					break
				}
				c, err := store.ParseCursor(page.Next.String())
				if err != nil || c != page.Next {
					t.Fatalf("cursor %q does not round-trip: %v %v", page.Next, c, err)
				}
				f.After = c
			}
			if len(seen) != tc.want {
				t.Errorf("got %d incidents, want %d", len(seen), tc.want)
			}
		})
	}
	if _, err := s.List(ctx, store.ListFilter{Verdict: "maybe"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad verdict filter: %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"x", "1.", ".1", "zz.-1", "1.2.3"} {
		if _, err := store.ParseCursor(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseCursor(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestAccuracyAndKnowledgeBase(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	// diagnosed -> true cause, per incident; one week apart in two groups.
	cases := []struct {
		diagnosed, truth, version string
		week                      int
	}{
		{metrics.CauseKVCacheEviction, metrics.CauseKVCacheEviction, "v1", 0},
		{metrics.CauseKVCacheEviction, metrics.CauseKVCacheEviction, "v1", 0},
		{metrics.CauseKVCacheEviction, metrics.CausePrefixCacheMiss, "v1", 0},
		{metrics.CauseQueueBacklog, metrics.CauseQueueBacklog, "v2", 1},
		{metrics.CausePrefixCacheMiss, metrics.CausePrefixCacheMiss, "v2", 1},
		{metrics.CauseQueueBacklog, "", "v2", 1}, // unreviewed
	}
	for i, c := range cases {
		inc := mustOpen(t, s, newIncident(fmt.Sprint("case ", i), time.Duration(c.week)*7*24*time.Hour+time.Duration(i)*time.Minute, nil),
			newDiagnosis(c.diagnosed, c.version))
		if c.truth == "" {
			continue
		}
		v := store.VerdictCorrect
		if c.truth != c.diagnosed {
			v = store.VerdictWrong
		}
		if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: inc.ID, Verdict: v, TrueCause: c.truth, By: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.Accuracy(ctx, store.AccuracyFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Overall.Reviewed != 5 || a.Overall.Correct != 4 {
		t.Errorf("overall = %+v, want 4 of 5", a.Overall)
	}
	tally := func(ts []store.Tally) map[string]string {
		m := map[string]string{}
		for _, t := range ts {
			m[t.Key] = fmt.Sprintf("%d/%d", t.Correct, t.Reviewed)
		}
		return m
	}
	if got := fmt.Sprint(tally(a.ByCause)); got != "map[kv_cache_eviction:2/3 prefix_cache_miss:1/1 queue_backlog:1/1]" {
		t.Errorf("by cause = %s", got)
	}
	if got := fmt.Sprint(tally(a.ByEngine)); got != "map[v1:2/3 v2:2/2]" {
		t.Errorf("by engine = %s", got)
	}
	// t0 is Tuesday 2026-09-01, so its week starts Monday 2026-08-31.
	if got := fmt.Sprint(tally(a.ByWeek)); got != "map[2026-08-31:2/3 2026-09-07:2/2]" {
		t.Errorf("by week = %s", got)
	}
	if len(a.Confusion) != 4 || a.Confusion[0] != (store.ConfusionCell{Diagnosed: metrics.CauseKVCacheEviction, True: metrics.CauseKVCacheEviction, Count: 2}) {
		t.Errorf("confusion = %+v", a.Confusion)
	}
	week2, err := s.Accuracy(ctx, store.AccuracyFilter{From: t0.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if week2.Overall.Reviewed != 2 {
		t.Errorf("filtered overall = %+v, want 2 reviewed", week2.Overall)
	}

	st, err := s.CauseStats(ctx, metrics.CausePrefixCacheMiss, 10)
	if err != nil {
		t.Fatal(err)
	}
	// prefix_cache_miss: diagnosed once (right), truly twice.
	if st.Diagnosed != 1 || st.Confirmed != 1 || st.Actual != 2 || st.Precision() != 1 || st.Recall() != 0.5 || len(st.Cases) != 2 {
		t.Errorf("prefix stats = %+v P=%v R=%v", st, st.Precision(), st.Recall())
	}
	kv, err := s.CauseStats(ctx, metrics.CauseKVCacheEviction, 1)
	if err != nil {
		t.Fatal(err)
	}
	if kv.Diagnosed != 3 || kv.Confirmed != 2 || kv.Actual != 2 || len(kv.Cases) != 1 {
		t.Errorf("kv stats = %+v", kv)
	}
	all, err := s.AllCauseStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(metrics.Causes) || all[0].Cause.ID != metrics.Causes[0].ID || all[0].Diagnosed != 3 {
		t.Errorf("all stats: %d entries, first %+v", len(all), all[0])
	}
	if _, err := s.CauseStats(ctx, "no_such_cause", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown cause: %v, want ErrNotFound", err)
	}
}

func TestShareLinks(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("slow", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	now := t0
	l, err := s.CreateShare(ctx, inc.ID, "ana", now, now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Token) != 32 {
		t.Fatalf("token %q is not 128 bits of hex", l.Token)
	}
	other, err := s.CreateShare(ctx, inc.ID, "ana", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if other.Token == l.Token {
		t.Fatal("two links share a token")
	}
	tests := []struct {
		name  string
		token string
		at    time.Time
		ok    bool
	}{
		{"valid", l.Token, now.Add(time.Hour), true},
		{"expired", l.Token, now.Add(25 * time.Hour), false},
		{"unknown", "00000000000000000000000000000000", now, false},
		{"malformed", "'); DROP TABLE share_links;--", now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ResolveShare(ctx, tc.token, tc.at)
			if tc.ok && (err != nil || got.IncidentID != inc.ID) {
				t.Errorf("resolve = %+v, %v; want incident %d", got, err, inc.ID)
			}
			if !tc.ok && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("resolve: %v, want ErrNotFound", err)
			}
		})
	}
	if err := s.RevokeShare(ctx, inc.ID, l.ID, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveShare(ctx, l.Token, now.Add(2*time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked link resolves: %v", err)
	}
	if err := s.RevokeShare(ctx, inc.ID+1, other.ID, now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking through another incident: %v, want ErrNotFound", err)
	}
	links, err := s.Shares(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[1].RevokedAt.IsZero() || links[0].Token != "" {
		t.Errorf("links = %+v", links)
	}
	if _, err := s.CreateShare(ctx, inc.ID, "ana", now, now); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("expiry now: %v, want ErrInvalid", err)
	}
	if _, err := s.CreateShare(ctx, 999, "ana", now, now.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("share of missing incident: %v, want ErrNotFound", err)
	}
}
