package incident

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/store"
)

// caseState tracks whether the archive's reviewed incidents have been
// loaded into the diagnoser.
type caseState struct {
	mu     sync.Mutex
	loaded bool
}

// backfillBatch is how many reviewed incidents without a usable stored
// signature LoadCases signs from their snapshots and stores at a time.
const backfillBatch = 256

// unsigned is a reviewed incident whose signature LoadCases computes: its
// id and its place in the case list.
type unsigned struct {
	id  int64
	idx int
}

// LoadCases teaches the diagnoser every reviewed incident of the archive
// (its stored signature, the rules' own cause stored with it, and its
// true cause), oldest first, and returns
// how many. The signatures are read in one query; a reviewed incident
// without one for its current label and the current signature format (an
// archive from before signatures were stored, a format change, a write
// that failed) is signed from its snapshot and its signature stored, so
// that happens once. The console calls it at start; the incident handlers
// call it before their first diagnosis if nothing did, and learn each new
// label as it is added.
func (s *Service) LoadCases(ctx context.Context) (int, error) {
	l := s.o.Learner
	if l == nil {
		return 0, nil
	}
	s.cases.mu.Lock()
	defer s.cases.mu.Unlock()
	var (
		cases   []diagnose.SignedCase
		missing []unsigned
		bad     int
	)
	err := s.o.Archive.EachReviewedCase(ctx, diagnose.SignatureVersion, func(rc store.ReviewedCase) error {
		c := diagnose.SignedCase{ID: strconv.FormatInt(rc.IncidentID, 10), Cause: rc.Cause, Review: reviewOf(rc.Verdict), At: rc.At, RulesCause: rc.RulesCause}
		if rc.Signature != nil {
			if err := c.Signature.UnmarshalBinary(rc.Signature); err == nil {
				cases = append(cases, c)
				return nil
			}
			bad++
		}
		missing = append(missing, unsigned{id: rc.IncidentID, idx: len(cases)})
		cases = append(cases, c)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("incidents: load reviewed incidents: %w", err)
	}
	if bad > 0 {
		s.o.Logger.WarnContext(ctx, "incidents: stored case signatures unreadable; signing their snapshots again", "cases", bad)
	}
	if len(missing) > 0 {
		if cases, err = s.backfill(ctx, cases, missing); err != nil {
			return 0, err
		}
	}
	if err := l.LearnSigned(cases); err != nil {
		return 0, fmt.Errorf("incidents: learn reviewed incidents: %w", err)
	}
	s.cases.loaded = true
	return len(cases), nil
}

// backfill signs the missing cases from their snapshots, stores their
// signatures, and returns cases without those that teach nothing (no
// snapshot values). A failed store is logged: the cases are learned all
// the same and signed again at the next start.
func (s *Service) backfill(ctx context.Context, cases []diagnose.SignedCase, missing []unsigned) ([]diagnose.SignedCase, error) {
	drop := make(map[int]bool)
	stored := 0
	for lo := 0; lo < len(missing); lo += backfillBatch {
		part := missing[lo:min(lo+backfillBatch, len(missing))]
		ids := make([]int64, len(part))
		for i, u := range part {
			ids[i] = u.id
		}
		snaps, unreadable, err := s.o.Archive.CaseSnapshots(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("incidents: sign reviewed incidents: %w", err)
		}
		if len(unreadable) > 0 {
			s.o.Logger.WarnContext(ctx, "incidents: reviewed incidents with an unreadable snapshot teach nothing", "incidents", unreadable)
		}
		rows := make([]store.CaseSignature, 0, len(part))
		for _, u := range part {
			snap, ok := snaps[u.id]
			if !ok || len(snap.Current) == 0 {
				drop[u.idx] = true
				continue
			}
			c := &cases[u.idx]
			c.Signature = diagnose.NewSignature(snap)
			c.RulesCause = s.o.Learner.RulesCause(snap)
			rows = append(rows, signatureRow(u.id, *c))
		}
		n, err := s.o.Archive.PutCaseSignatures(ctx, rows)
		if err != nil {
			s.o.Logger.WarnContext(ctx, "incidents: case signatures not stored; signing them again at the next start", "cases", len(rows), "err", err)
		}
		stored += n
	}
	s.o.Logger.InfoContext(ctx, "incidents: signed reviewed incidents without a stored signature", "signed", len(missing)-len(drop), "stored", stored)
	if len(drop) == 0 {
		return cases, nil
	}
	out := cases[:0]
	for i, c := range cases {
		if !drop[i] {
			out = append(out, c)
		}
	}
	return out, nil
}

// reviewOf is the review kind of a verdict: a correct verdict confirms the
// diagnosed cause, a wrong one corrects it.
func reviewOf(v store.Verdict) diagnose.Review {
	if v == store.VerdictWrong {
		return diagnose.Corrected
	}
	return diagnose.Confirmed
}

// signatureRow is the stored form of incident id's case c.
func signatureRow(id int64, c diagnose.SignedCase) store.CaseSignature {
	b, _ := c.Signature.MarshalBinary() // never fails
	v := store.VerdictCorrect
	if c.Review == diagnose.Corrected {
		v = store.VerdictWrong
	}
	return store.CaseSignature{IncidentID: id, Version: diagnose.SignatureVersion, Verdict: v, Cause: c.Cause, Signature: b, RulesCause: c.RulesCause}
}

// ensureCases loads the reviewed incidents once, before the first
// diagnosis that could use them. A failure is logged and retried on the
// next call; the diagnosis goes ahead with the rules.
func (s *Service) ensureCases(ctx context.Context) {
	if s.o.Learner == nil {
		return
	}
	s.cases.mu.Lock()
	loaded := s.cases.loaded
	s.cases.mu.Unlock()
	if loaded {
		return
	}
	n, err := s.LoadCases(ctx)
	if err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: knowledge base not loaded", "err", err)
		return
	}
	s.o.Logger.InfoContext(ctx, "incidents: knowledge base loaded", "cases", n)
}

// learnIncident signs the current label of incident id after a review,
// stores the signature and the rules' own cause beside the label and
// teaches the diagnoser the case. The label itself is already stored: failures are logged, and a
// signature that was not stored is computed again at the next start.
func (s *Service) learnIncident(ctx context.Context, id int64) {
	inc, err := s.o.Archive.Incident(ctx, id)
	if err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: label not learned", "incident", id, "err", err)
		return
	}
	c, ok := signedCase(inc)
	if !ok {
		return
	}
	l := s.o.Learner
	if l != nil {
		c.RulesCause = l.RulesCause(inc.Snapshot)
	}
	if _, err := s.o.Archive.PutCaseSignatures(ctx, []store.CaseSignature{signatureRow(inc.ID, c)}); err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: case signature not stored; it is recomputed at the next start", "incident", id, "err", err)
	}
	if l == nil {
		return
	}
	s.ensureCases(ctx) // a first load already includes this label
	if err := l.LearnSignedCase(c); err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: label not learned", "incident", id, "err", err)
	}
}

// signedCase turns a reviewed incident into a signed case: a correct
// verdict confirms the diagnosed cause, a wrong one corrects it.
// Unreviewed incidents and incidents without a snapshot teach nothing.
func signedCase(inc store.Incident) (diagnose.SignedCase, bool) {
	if len(inc.Snapshot.Current) == 0 {
		return diagnose.SignedCase{}, false
	}
	if inc.Verdict != store.VerdictCorrect && inc.Verdict != store.VerdictWrong {
		return diagnose.SignedCase{}, false
	}
	c := diagnose.SignedCase{ID: strconv.FormatInt(inc.ID, 10), At: inc.OpenedAt, Review: reviewOf(inc.Verdict), Cause: inc.TrueCause}
	if c.Cause == "" && inc.Verdict == store.VerdictCorrect {
		c.Cause = inc.RootCause // a confirmation stored without a true cause
	}
	if c.Cause == "" {
		return diagnose.SignedCase{}, false
	}
	c.Signature = diagnose.NewSignature(inc.Snapshot)
	return c, true
}
