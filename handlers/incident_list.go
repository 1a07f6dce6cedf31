package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// parseListFilter reads the list's query parameters: q, model, instance,
// cause, verdict (unreviewed, correct, wrong), severity, from, to (RFC 3339
// or unix seconds), after (a page cursor) and limit.
func parseListFilter(q url.Values) (store.ListFilter, views.IncidentFilters, error) {
	vf := views.IncidentFilters{
		Q: q.Get("q"), Model: q.Get("model"), Instance: q.Get("instance"), Cause: q.Get("cause"),
		Verdict: q.Get("verdict"), Severity: q.Get("severity"), From: q.Get("from"), To: q.Get("to"),
	}
	f := store.ListFilter{Query: vf.Q, Model: vf.Model, Instance: vf.Instance, Cause: vf.Cause,
		Verdict: store.VerdictFilter(vf.Verdict), Severity: vf.Severity}
	if len(f.Query) > store.MaxQueryBytes {
		return f, vf, paramError("q", "param.too_long", strconv.Itoa(store.MaxQueryBytes))
	}
	for _, p := range []struct{ name, v string }{{"model", f.Model}, {"instance", f.Instance}, {"cause", f.Cause}, {"severity", f.Severity}} {
		if p.v != "" {
			if err := checkName(p.name, p.v); err != nil {
				return f, vf, err
			}
		}
	}
	switch f.Verdict {
	case store.VerdictAny, store.VerdictUnreviewed, store.VerdictIsCorrect, store.VerdictIsWrong:
	default:
		return f, vf, paramError("verdict", "param.verdict", strconv.Quote(truncate(vf.Verdict, 32)))
	}
	var err error
	if vf.From != "" {
		if f.From, err = parseTime(vf.From); err != nil {
			return f, vf, badParam("from", "%v", err)
		}
	}
	if vf.To != "" {
		if f.To, err = parseTime(vf.To); err != nil {
			return f, vf, badParam("to", "%v", err)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		return f, vf, paramError("from", "param.from_after_to", vf.From, vf.To)
	}
	if f.After, err = store.ParseCursor(q.Get("after")); err != nil {
		return f, vf, paramError("after", "param.cursor")
	}
	if l := q.Get("limit"); l != "" {
		n := 0
		for _, r := range l {
			if r < '0' || r > '9' || n > store.MaxPageSize {
				return f, vf, badParam("limit", "must be a number from 1 to %d", store.MaxPageSize)
			}
			n = n*10 + int(r-'0')
		}
		if n < 1 || n > store.MaxPageSize {
			return f, vf, badParam("limit", "must be a number from 1 to %d", store.MaxPageSize)
		}
		f.Limit = n
	}
	return f, vf, nil
}

func incidentRow(s store.Summary) views.IncidentRow {
	r := views.IncidentRow{ID: s.ID, Title: s.Title, Scope: s.Scope, OpenedAt: s.OpenedAt, Severity: s.Severity,
		Trigger: string(s.Trigger), RootCause: s.RootCause, Confidence: s.Confidence, Verdict: string(s.Verdict), TrueCause: s.TrueCause}
	if s.Alert != nil {
		r.AlertState = string(s.Alert.State)
	}
	return r
}

// List renders the incident list with filters, search and paging.
func (h *Incidents) List(c echo.Context) error {
	ctx := c.Request().Context()
	q := c.QueryParams()
	f, vf, err := parseListFilter(q)
	if err != nil {
		return err
	}
	page, err := h.d.Archive.List(ctx, f)
	if err != nil {
		return archiveError(err, "q")
	}
	causes, err := h.d.Archive.Causes(ctx)
	if err != nil {
		return err
	}
	v := views.IncidentListView{Layout: h.d.layout(i18n.T(ctx, "incidents.title"), views.NavIncidents), Filters: vf, Causes: causeOptions(causes)}
	for _, s := range page.Items {
		v.Rows = append(v.Rows, incidentRow(s))
	}
	base := vf.Query()
	if !page.Next.IsZero() {
		next := vf.Query()
		next.Set("after", page.Next.String())
		if f.Limit > 0 {
			next.Set("limit", q.Get("limit"))
		}
		v.NextHref = route.URLQuery(route.IncidentList, next)
	}
	if !f.After.IsZero() {
		v.FirstHref = route.URLQuery(route.IncidentList, base)
	}
	return render(c, http.StatusOK, views.IncidentListPage(v))
}
