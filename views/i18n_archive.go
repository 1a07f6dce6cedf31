package views

import (
	"context"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// taxonomy reports whether id is a built-in cause whose texts the
// catalogs translate (an engineer's own cause is shown as written).
func taxonomy(id string) bool {
	_, ok := metrics.LookupCause(id)
	return ok
}

// LabelIn is the row's label: a cause's title in the request's language,
// an engine version or week as it is.
func (r AccuracyRow) LabelIn(ctx context.Context) string {
	if taxonomy(r.Key) && r.Label == CauseTitle(r.Key) {
		return CauseTitleIn(ctx, r.Key)
	}
	if r.Key == "all" {
		return T(ctx, "acc.all")
	}
	return r.Label
}

// TitleIn is the cause's title in the request's language.
func (r CauseRow) TitleIn(ctx context.Context) string {
	if !r.Custom && taxonomy(r.ID) {
		return CauseTitleIn(ctx, r.ID)
	}
	return r.Title
}

// DescriptionIn is what happens in the cause, in the request's language.
func (r CauseRow) DescriptionIn(ctx context.Context) string {
	if !r.Custom && taxonomy(r.ID) {
		return CauseWhatIn(ctx, r.ID)
	}
	return r.Description
}

// SignatureIn is how the cause shows in the metrics.
func (r CauseRow) SignatureIn(ctx context.Context) string {
	if !r.Custom && taxonomy(r.ID) {
		return diagnose.CauseSignatureIn(lang(ctx), r.ID)
	}
	return r.Signature
}

// ActionsIn are the cause's typical actions with their texts in the
// request's language.
func (v CauseView) ActionsIn(ctx context.Context) []KBActionView {
	out := make([]KBActionView, len(v.Actions))
	for i, a := range v.Actions {
		t := diagnose.ActionIn(lang(ctx), v.Cause.ID, diagnose.Action{ID: a.ID, Title: a.Title, Why: a.Why, Risk: a.Risk})
		a.Title, a.Why, a.Risk = t.Title, t.Why, t.Risk
		out[i] = a
	}
	return out
}

// OutcomeIn summarises what happened when the action was applied.
func (a KBActionView) OutcomeIn(ctx context.Context) string {
	switch {
	case a.Requested == 0:
		return T(ctx, "kb.no_change")
	case a.Applied == 0:
		return T(ctx, "kb.none_applied", a.Requested)
	case a.Measured == 0:
		return T(ctx, "kb.not_measured", timesIn(ctx, a.Applied))
	}
	return T(ctx, "kb.outcome", timesIn(ctx, a.Applied), timesIn(ctx, a.Expected), a.Measured)
}

func timesIn(ctx context.Context, n int) string {
	if n == 1 {
		return T(ctx, "kb.once")
	}
	return T(ctx, "kb.times", n)
}
