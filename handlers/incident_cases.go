package handlers

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// CaseLearner is a Diagnoser that learns from reviewed incidents for
// similar-case matching. *diagnose.Engine implements it; a Diagnoser that
// does not is used without matching.
type CaseLearner interface {
	// Learn replaces every learned case.
	Learn(cases []diagnose.LabelledCase) error
	// LearnCase learns one case, replacing an earlier one with its ID.
	LearnCase(c diagnose.LabelledCase) error
}

// caseState tracks whether the archive's reviewed incidents have been
// loaded into the diagnoser.
type caseState struct {
	mu     sync.Mutex
	loaded bool
}

// learner returns the diagnoser as a CaseLearner, or nil.
func (h *Incidents) learner() CaseLearner {
	l, _ := h.d.Diagnoser.(CaseLearner)
	return l
}

// LoadCases teaches the diagnoser every reviewed incident of the archive
// (its snapshot and its true cause) and returns how many. The console
// calls it at start; the incident handlers call it before their first
// diagnosis if nothing did, and learn each new label as it is added.
func (h *Incidents) LoadCases(ctx context.Context) (int, error) {
	l := h.learner()
	if l == nil {
		return 0, nil
	}
	h.cases.mu.Lock()
	defer h.cases.mu.Unlock()
	var cases []diagnose.LabelledCase
	for _, v := range []store.VerdictFilter{store.VerdictIsCorrect, store.VerdictIsWrong} {
		f := store.ListFilter{Verdict: v, Limit: store.MaxPageSize}
		for {
			page, err := h.d.Archive.List(ctx, f)
			if err != nil {
				return 0, fmt.Errorf("incidents: load reviewed incidents: %w", err)
			}
			for _, s := range page.Items {
				inc, err := h.d.Archive.Incident(ctx, s.ID)
				if err != nil {
					return 0, fmt.Errorf("incidents: load reviewed incidents: %w", err)
				}
				if c, ok := labelledCase(inc); ok {
					cases = append(cases, c)
				}
			}
			if page.Next.IsZero() {
				break
			}
			f.After = page.Next
		}
	}
	if err := l.Learn(cases); err != nil {
		return 0, fmt.Errorf("incidents: learn reviewed incidents: %w", err)
	}
	h.cases.loaded = true
	return len(cases), nil
}

// ensureCases loads the reviewed incidents once, before the first
// diagnosis that could use them. A failure is logged and retried on the
// next call; the diagnosis goes ahead with the rules.
func (h *Incidents) ensureCases(ctx context.Context) { h.firstLoad(ctx) }

// firstLoad is ensureCases, reporting whether this call loaded cases into
// the diagnoser (so a diagnosis made before it is stale).
func (h *Incidents) firstLoad(ctx context.Context) bool {
	if h.learner() == nil {
		return false
	}
	h.cases.mu.Lock()
	loaded := h.cases.loaded
	h.cases.mu.Unlock()
	if loaded {
		return false
	}
	n, err := h.LoadCases(ctx)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "incidents: knowledge base not loaded", "err", err)
		return false
	}
	h.d.Logger.InfoContext(ctx, "incidents: knowledge base loaded", "cases", n)
	return n > 0
}

// learnIncident teaches the diagnoser the current label of incident id,
// after a review. Failures are logged: the label itself is stored.
func (h *Incidents) learnIncident(ctx context.Context, id int64) {
	l := h.learner()
	if l == nil {
		return
	}
	h.ensureCases(ctx) // a first load already includes this label
	inc, err := h.d.Archive.Incident(ctx, id)
	if err == nil {
		if c, ok := labelledCase(inc); ok {
			err = l.LearnCase(c)
		}
	}
	if err != nil {
		h.d.Logger.WarnContext(ctx, "incidents: label not learned", "incident", id, "err", err)
	}
}

// labelledCase turns a reviewed incident into a case: a correct verdict
// confirms the diagnosed cause, a wrong one corrects it. Unreviewed
// incidents and incidents without a snapshot teach nothing.
func labelledCase(inc store.Incident) (diagnose.LabelledCase, bool) {
	if len(inc.Snapshot.Current) == 0 {
		return diagnose.LabelledCase{}, false
	}
	c := diagnose.LabelledCase{ID: strconv.FormatInt(inc.ID, 10), Snapshot: inc.Snapshot, At: inc.OpenedAt}
	switch inc.Verdict {
	case store.VerdictCorrect:
		c.Review, c.Cause = diagnose.Confirmed, inc.TrueCause
		if c.Cause == "" {
			c.Cause = inc.RootCause
		}
	case store.VerdictWrong:
		c.Review, c.Cause = diagnose.Corrected, inc.TrueCause
	default:
		return diagnose.LabelledCase{}, false
	}
	return c, c.Cause != ""
}

// similarIncidents resolves the similar cases of a diagnosis to archived
// incidents for the incident page: title, verdict, true cause, similarity
// and the deviations they share. Cases that are not incidents of this
// archive (ids from a case file) or no longer exist are listed without a
// link.
func (h *Incidents) similarIncidents(ctx context.Context, d diagnose.Diagnosis, self int64, title func(string) string) []views.SimilarIncident {
	var out []views.SimilarIncident
	for _, sc := range d.SimilarCases {
		row := views.SimilarIncident{Case: sc.ID, Cause: sc.RootCause, CauseTitle: title(sc.RootCause), Similarity: sc.Similarity, Shared: sc.Shared}
		if id, err := strconv.ParseInt(sc.ID, 10, 64); err == nil && id > 0 && id != self {
			if inc, err := h.d.Archive.Incident(ctx, id); err == nil {
				row.ID, row.Title, row.Verdict, row.OpenedAt = inc.ID, inc.Title, string(inc.Verdict), inc.OpenedAt
			}
		}
		out = append(out, row)
	}
	return out
}
