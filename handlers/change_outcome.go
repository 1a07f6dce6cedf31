package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// MeasureDue measures every applied change whose outcome window has
// passed and returns how many it measured.
func (h *Changes) MeasureDue(ctx context.Context) (int, error) {
	if h.d.Capture == nil {
		return 0, nil
	}
	due, err := h.d.Store.UnmeasuredChanges(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ch := range due {
		p, err := h.d.Store.Page(ctx, ch.IncidentID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got, err := h.measure(ctx, p.Incident.Scope, ch)
		if err != nil {
			errs = append(errs, fmt.Errorf("change %d: %w", ch.ID, err))
			continue
		}
		if len(got.Outcome) > 0 {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// measure evaluates an applied change's outcome once its window has
// passed, and stores it.
func (h *Changes) measure(ctx context.Context, scope metrics.Scope, ch store.Change) (store.Change, error) {
	if ch.Status != store.ChangeApplied || ch.AppliedAt.IsZero() || len(ch.Outcome) > 0 || h.d.Capture == nil {
		return ch, nil
	}
	if h.d.Now().Before(change.OutcomeDue(ch.AppliedAt, h.d.OutcomeWindow)) {
		return ch, nil
	}
	req, err := change.DecodeRequest(ch.Doc)
	if err != nil {
		return ch, fmt.Errorf("change %d: %w", ch.ID, err)
	}
	o, err := change.Measure(req, ch.AppliedAt, h.d.OutcomeWindow, func(ids []string, r metrics.Range) ([]metrics.Series, error) {
		return h.d.Capture.Range(ctx, scope, ids, r)
	})
	if err != nil {
		return ch, err
	}
	body, err := o.Encode()
	if err != nil {
		return ch, err
	}
	if err := h.d.Store.SetChangeOutcome(ctx, ch.IncidentID, ch.ID, body, o.Verdict); err != nil {
		return ch, err
	}
	ch.Outcome, ch.Verdict = body, o.Verdict
	return ch, nil
}
