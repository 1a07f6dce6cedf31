package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// reviewedCases collects EachReviewedCase, copying the signatures.
func reviewedCases(t *testing.T, s *store.Store, version int) []store.ReviewedCase {
	t.Helper()
	var out []store.ReviewedCase
	err := s.EachReviewedCase(context.Background(), version, func(c store.ReviewedCase) error {
		c.Signature = bytes.Clone(c.Signature)
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCaseSignatures: reviewed incidents stream oldest first with the
// signature stored for their current label; a relabel or another format
// version hides the stored row until it is rewritten, and a signature for
// a label that is no longer current is not stored.
func TestCaseSignatures(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	late := mustOpen(t, s, newIncident("late", time.Hour, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	early := mustOpen(t, s, newIncident("early", 0, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	open := mustOpen(t, s, newIncident("unreviewed", 2*time.Hour, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	label := func(id int64, v store.Verdict, cause string) {
		t.Helper()
		if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: id, Verdict: v, TrueCause: cause, By: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	label(late.ID, store.VerdictCorrect, "")
	label(early.ID, store.VerdictWrong, metrics.CauseNone)

	got := reviewedCases(t, s, 1)
	if len(got) != 2 || got[0].IncidentID != early.ID || got[1].IncidentID != late.ID {
		t.Fatalf("reviewed cases %+v, want early then late", got)
	}
	if got[0].Cause != metrics.CauseNone || got[0].Verdict != store.VerdictWrong || !got[0].At.Equal(early.OpenedAt) ||
		got[1].Cause != metrics.CauseKVCacheEviction || got[1].Verdict != store.VerdictCorrect {
		t.Errorf("reviewed cases %+v", got)
	}
	for _, c := range got {
		if c.Signature != nil {
			t.Errorf("incident %d has a signature before any was stored", c.IncidentID)
		}
	}

	sigA, sigB := bytes.Repeat([]byte{1}, 128), bytes.Repeat([]byte{2}, 128)
	n, err := s.PutCaseSignatures(ctx, []store.CaseSignature{
		{IncidentID: early.ID, Version: 1, Verdict: store.VerdictWrong, Cause: metrics.CauseNone, Signature: sigA},
		{IncidentID: late.ID, Version: 1, Verdict: store.VerdictCorrect, Cause: metrics.CauseKVCacheEviction, Signature: sigB},
		{IncidentID: open.ID, Version: 1, Verdict: store.VerdictCorrect, Cause: metrics.CauseQueueBacklog, Signature: sigA},
		{IncidentID: 4242, Version: 1, Verdict: store.VerdictCorrect, Cause: metrics.CauseQueueBacklog, Signature: sigA},
	})
	if err != nil || n != 2 {
		t.Fatalf("put: %d stored, %v; want the 2 reviewed", n, err)
	}
	got = reviewedCases(t, s, 1)
	if len(got) != 2 || !bytes.Equal(got[0].Signature, sigA) || !bytes.Equal(got[1].Signature, sigB) {
		t.Fatalf("stored signatures not read back: %+v", got)
	}
	for _, c := range reviewedCases(t, s, 2) {
		if c.Signature != nil {
			t.Errorf("incident %d: a version-1 signature served for version 2", c.IncidentID)
		}
	}

	// Relabel: the stored row no longer counts, a late write for the old
	// label is refused, one for the new label replaces it.
	label(early.ID, store.VerdictWrong, metrics.CauseGPUThrottling)
	got = reviewedCases(t, s, 1)
	if got[0].Cause != metrics.CauseGPUThrottling || got[0].Signature != nil {
		t.Errorf("after relabel: %+v, want the new cause without a signature", got[0])
	}
	if n, err := s.PutCaseSignatures(ctx, []store.CaseSignature{{IncidentID: early.ID, Version: 1, Verdict: store.VerdictWrong, Cause: metrics.CauseNone, Signature: sigA}}); err != nil || n != 0 {
		t.Errorf("a signature of the old label: %d stored, %v; want none", n, err)
	}
	if n, err := s.PutCaseSignatures(ctx, []store.CaseSignature{{IncidentID: early.ID, Version: 1, Verdict: store.VerdictWrong, Cause: metrics.CauseGPUThrottling, Signature: sigB}}); err != nil || n != 1 {
		t.Errorf("a signature of the new label: %d stored, %v", n, err)
	}
	if got = reviewedCases(t, s, 1); !bytes.Equal(got[0].Signature, sigB) {
		t.Errorf("after rewrite: %+v", got[0])
	}

	for _, bad := range []store.CaseSignature{
		{IncidentID: late.ID, Version: 1, Verdict: "", Cause: "x", Signature: sigA},
		{IncidentID: late.ID, Version: 1, Verdict: store.VerdictCorrect, Cause: "x"},
		{IncidentID: late.ID, Version: 1, Verdict: store.VerdictCorrect, Cause: "x", Signature: make([]byte, store.MaxSignatureBytes+1)},
	} {
		if _, err := s.PutCaseSignatures(ctx, []store.CaseSignature{bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("put %+v: %v, want ErrInvalid", bad.Verdict, err)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.EachReviewedCase(ctx, 1, func(store.ReviewedCase) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("callback error: %v after %d calls", err, calls)
	}
}

// TestCaseSnapshots reads the snapshots of existing incidents only, and
// lists a damaged one instead of failing the batch.
func TestCaseSnapshots(t *testing.T) {
	s := openTest(t)
	a := mustOpen(t, s, newIncident("a", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	in := newIncident("b", time.Minute, nil)
	in.Snapshot.Current[metrics.TPOT] = 42
	b := mustOpen(t, s, in, newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	c := mustOpen(t, s, newIncident("c", 2*time.Minute, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	if err := s.ExecForTest(context.Background(), `UPDATE incident_evidence SET snapshot = x'00ff13' WHERE incident_id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	got, unreadable, err := s.CaseSnapshots(context.Background(), []int64{a.ID, b.ID, c.ID, 4242})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[b.ID].Current[metrics.TPOT] != 42 || got[a.ID].Current[metrics.TTFT] != 950 || !got[a.ID].At.Equal(a.OpenedAt) {
		t.Errorf("snapshots %+v", got)
	}
	if len(unreadable) != 1 || unreadable[0] != c.ID {
		t.Errorf("unreadable %v, want the damaged incident %d alone", unreadable, c.ID)
	}
	if got, _, err := s.CaseSnapshots(context.Background(), nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: %v, %v", got, err)
	}
}
