package handlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

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
	w := h.d.OutcomeWindow
	settle := w / 4
	if h.d.Now().Before(ch.AppliedAt.Add(settle + w)) {
		return ch, nil
	}
	req, err := change.DecodeRequest(ch.Doc)
	if err != nil {
		return ch, fmt.Errorf("change %d: %w", ch.ID, err)
	}
	ids := []string{metrics.ArrivalRPS, metrics.ThroughputRPS}
	for _, e := range req.Effects {
		ids = append(ids, e.Metric)
	}
	window := func(start time.Time) ([]metrics.Point, error) {
		step := max(w/60, 15*time.Second)
		series, err := h.d.Capture.Range(ctx, scope, ids, metrics.Range{Start: start, End: start.Add(w), Step: step})
		if err != nil {
			return nil, err
		}
		return pointsOf(series), nil
	}
	before, err := window(ch.AppliedAt.Add(-w))
	if err != nil {
		return ch, err
	}
	after, err := window(ch.AppliedAt.Add(settle))
	if err != nil {
		return ch, err
	}
	o := change.Evaluate(req.Effects, before, after, ch.AppliedAt, w)
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

// pointsOf turns per-metric series into points by timestamp.
func pointsOf(series []metrics.Series) []metrics.Point {
	byT := map[int64]metrics.Values{}
	var order []int64
	for _, s := range series {
		for _, x := range s.Samples {
			k := x.T.UnixNano()
			v, ok := byT[k]
			if !ok {
				v = metrics.Values{}
				byT[k] = v
				order = append(order, k)
			}
			if _, seen := v[s.Metric]; !seen && !math.IsNaN(x.V) {
				v[s.Metric] = x.V
			}
		}
	}
	out := make([]metrics.Point, 0, len(order))
	for _, k := range order {
		out = append(out, metrics.Point{At: time.Unix(0, k).UTC(), Values: byT[k]})
	}
	return out
}
