package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// TestAccuracyTallyMatchesLabels relabels incidents at random over ten
// days and checks that the accuracy numbers, read from the label tally and
// the partial days at a filter's edges, equal a count over the current
// labels kept by the test itself, for filters that cut days in half.
func TestAccuracyTallyMatchesLabels(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	r := rand.New(rand.NewPCG(7, 8))
	causes := []string{metrics.CauseKVCacheEviction, metrics.CauseQueueBacklog, metrics.CausePrefixCacheMiss}
	type current struct {
		at               time.Time
		diagnosed, truth string
		version          string
	}
	labelled := map[int64]current{}
	var ids []int64
	var opened []time.Time
	for i := 0; i < 120; i++ {
		off := time.Duration(r.IntN(10*24*60)) * time.Minute
		diag := causes[r.IntN(len(causes))]
		ver := fmt.Sprint("v", 1+r.IntN(2))
		inc := mustOpen(t, s, newIncident(fmt.Sprint("tally ", i), off, nil), newDiagnosis(diag, ver))
		ids, opened = append(ids, inc.ID), append(opened, inc.OpenedAt)
		labelled[inc.ID] = current{at: inc.OpenedAt, diagnosed: diag, version: ver}
	}
	for k := range labelled { // start unreviewed
		c := labelled[k]
		c.truth = ""
		labelled[k] = c
	}
	for n := 0; n < 300; n++ { // labels and re-labels
		id := ids[r.IntN(len(ids))]
		c := labelled[id]
		truth := causes[r.IntN(len(causes))]
		v := store.VerdictWrong
		if truth == c.diagnosed {
			v = store.VerdictCorrect
		}
		if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: id, Verdict: v, TrueCause: truth, By: "ana"}); err != nil {
			t.Fatal(err)
		}
		c.truth = truth
		labelled[id] = c
	}

	want := func(from, to time.Time) (reviewed, correct int, byEngine map[string]int) {
		byEngine = map[string]int{}
		for _, c := range labelled {
			if c.truth == "" || (!from.IsZero() && c.at.Before(from)) || (!to.IsZero() && !c.at.Before(to)) {
				continue
			}
			reviewed++
			byEngine[c.version]++
			if c.truth == c.diagnosed {
				correct++
			}
		}
		return reviewed, correct, byEngine
	}
	filters := []store.AccuracyFilter{
		{},
		{From: t0.Add(36 * time.Hour)},
		{To: t0.Add(100 * time.Hour)},
		{From: t0.Add(30 * time.Hour), To: t0.Add(200 * time.Hour)},
		{From: t0.Add(50 * time.Hour), To: t0.Add(55 * time.Hour)}, // inside one day
		{From: opened[3], To: opened[4]},
		{From: t0.Truncate(24 * time.Hour).Add(48 * time.Hour), To: t0.Truncate(24 * time.Hour).Add(120 * time.Hour)}, // whole days
	}
	for _, f := range filters {
		a, err := s.Accuracy(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rev, cor, byEngine := want(f.From, f.To)
		if a.Overall.Reviewed != rev || a.Overall.Correct != cor {
			t.Errorf("filter %v..%v: overall %d/%d, want %d/%d", f.From, f.To, a.Overall.Correct, a.Overall.Reviewed, cor, rev)
		}
		for _, e := range a.ByEngine {
			if e.Reviewed != byEngine[e.Key] {
				t.Errorf("filter %v..%v: engine %s reviewed %d, want %d", f.From, f.To, e.Key, e.Reviewed, byEngine[e.Key])
			}
		}
	}

	all, err := s.AllCauseStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range all {
		var diagnosed, confirmed, actual int
		for _, c := range labelled {
			if c.truth == "" {
				continue
			}
			if c.diagnosed == st.Cause.ID {
				diagnosed++
				if c.truth == c.diagnosed {
					confirmed++
				}
			}
			if c.truth == st.Cause.ID {
				actual++
			}
		}
		if st.Diagnosed != diagnosed || st.Confirmed != confirmed || st.Actual != actual {
			t.Errorf("%s: diagnosed/confirmed/actual %d/%d/%d, want %d/%d/%d", st.Cause.ID, st.Diagnosed, st.Confirmed, st.Actual, diagnosed, confirmed, actual)
		}
	}
}
