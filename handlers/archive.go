package handlers

import (
	"context"
	"net/http"
	"slices"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Accuracy renders the accuracy page.
func (h *Knowledge) Accuracy(c echo.Context) error {
	a, err := h.d.Archive.Accuracy(c.Request().Context(), store.AccuracyFilter{})
	if err != nil {
		return err
	}
	rows := func(ts []store.Tally, label func(string) string) []views.AccuracyRow {
		out := make([]views.AccuracyRow, len(ts))
		for i, t := range ts {
			out[i] = views.AccuracyRow{Key: t.Key, Label: label(t.Key), Reviewed: t.Reviewed, Correct: t.Correct}
		}
		return out
	}
	same := func(s string) string { return s }
	v := views.AccuracyView{
		Layout:   h.d.layout(i18n.T(c.Request().Context(), "nav.accuracy"), views.NavAccuracy),
		Overall:  views.AccuracyRow{Key: "all", Label: "All", Reviewed: a.Overall.Reviewed, Correct: a.Overall.Correct},
		ByCause:  rows(a.ByCause, views.CauseTitle),
		ByEngine: rows(a.ByEngine, same),
		ByWeek:   rows(a.ByWeek, same),
	}
	v.Trend = views.NewAccuracyTrend(c.Request().Context(), v.ByWeek)
	v.Confusion = confusion(a.Confusion)
	return render(c, http.StatusOK, views.AccuracyPage(v))
}

func confusion(cells []store.ConfusionCell) views.ConfusionView {
	cv := views.ConfusionView{Counts: map[[2]string]int{}}
	rows, cols := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		cv.Counts[[2]string{c.Diagnosed, c.True}] = c.Count
		rows[c.Diagnosed], cols[c.True] = true, true
	}
	cv.Diagnosed, cv.True = causeOrder(rows), causeOrder(cols)
	return cv
}

// causeOrder sorts cause ids in taxonomy order, custom causes last.
func causeOrder(set map[string]bool) []string {
	rank := map[string]int{}
	for i, c := range metrics.Causes {
		rank[c.ID] = i
	}
	var out []string
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return out[i] < out[j]
	})
	return out
}

func causeRow(st store.CauseStats) views.CauseRow {
	r := views.CauseRow{ID: st.Cause.ID, Title: st.Cause.Title, Description: st.Cause.Description, Custom: !st.Cause.Builtin,
		Diagnosed: st.Diagnosed, Confirmed: st.Confirmed, Actual: st.Actual}
	if c, ok := metrics.LookupCause(st.Cause.ID); ok {
		r.Signature = c.Signature
	}
	return r
}

// KB renders the knowledge-base index.
func (h *Knowledge) KB(c echo.Context) error {
	stats, err := h.d.Archive.AllCauseStats(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.KBView{Layout: h.d.layout(i18n.T(c.Request().Context(), "nav.knowledge"), views.NavKnowledge)}
	for _, st := range stats {
		v.Causes = append(v.Causes, causeRow(st))
	}
	return render(c, http.StatusOK, views.KBPage(v))
}

// kbCases is how many confirmed incidents a cause page lists.
const kbCases = 25

// KBCause renders one cause's knowledge-base page. The typical actions come
// from the latest confirmed incident's diagnosis.
func (h *Knowledge) KBCause(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("cause")
	if err := checkName("cause", id); err != nil {
		return err
	}
	st, err := h.d.Archive.CauseStats(ctx, id, kbCases)
	if err != nil {
		return archiveError(err, "cause")
	}
	v := views.CauseView{Layout: h.d.layout(causeRow(st).TitleIn(ctx), views.NavKnowledge), Cause: causeRow(st)}
	for _, s := range st.Cases {
		v.Cases = append(v.Cases, incidentRow(s))
	}
	// Actions: from the most recent confirmed case whose current diagnosis
	// named this cause.
	for _, s := range st.Cases {
		if s.RootCause != id {
			continue
		}
		p, err := h.d.Archive.Page(ctx, s.ID)
		if err != nil || len(p.Diagnoses) == 0 {
			continue
		}
		for _, a := range incident.DecodeDiagnosis(p.Diagnoses[0]).Actions {
			v.Actions = append(v.Actions, views.KBActionView{ID: a.ID, Title: a.Title, Why: a.Why, Risk: a.Risk})
		}
		break
	}
	if len(v.Actions) == 0 {
		for _, a := range diagnose.ActionsFor(id) {
			v.Actions = append(v.Actions, views.KBActionView{ID: a.ID, Title: a.Title, Why: a.Why, Risk: a.Risk})
		}
	}
	if h.d.Changes != nil {
		h.addOutcomes(ctx, &v, id)
	}
	return render(c, http.StatusOK, views.CausePage(v))
}

// addOutcomes counts, per action of a cause, the change requests made, the
// ones applied and how often they had the expected effect. Actions with
// change requests that are no longer among the typical ones are listed
// too.
func (h *Knowledge) addOutcomes(ctx context.Context, v *views.CauseView, cause string) {
	outs, err := h.d.Changes.d.Store.ActionOutcomes(ctx, cause)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "kb: action outcomes", "cause", cause, "err", err)
		return
	}
	for _, o := range outs {
		i := slices.IndexFunc(v.Actions, func(a views.KBActionView) bool { return a.ID == o.ActionID })
		if i < 0 {
			v.Actions = append(v.Actions, views.KBActionView{ID: o.ActionID, Title: o.ActionID})
			i = len(v.Actions) - 1
		}
		a := &v.Actions[i]
		a.Requested, a.Applied, a.Expected = o.Requested, o.Applied, o.Expected
		a.Measured = o.Expected + o.NotExpected + o.Inconclusive
	}
}
