package handlers

import (
	"github.com/casebook/casebook/internal/route"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// queueSize is how many incidents the review queue shows at once.
const queueSize = 50

// queueWeek is the recent window the queue counts what is left in.
const queueWeek = 7 * 24 * time.Hour

// Queue renders the review queue: unreviewed incidents, worst and oldest
// first, each with its one-click review.
func (h *Incidents) Queue(c echo.Context) error {
	ctx := c.Request().Context()
	model, cause := strings.TrimSpace(c.QueryParam("model")), strings.TrimSpace(c.QueryParam("cause"))
	for name, v := range map[string]string{"model": model, "cause": cause} {
		if len(v) > store.MaxNameBytes {
			return paramError(name, "param.too_long", strconv.Itoa(store.MaxNameBytes))
		}
	}
	now := h.d.Now()
	q, err := h.d.Archive.ReviewQueue(ctx, store.QueueFilter{Model: model, Cause: cause, Since: now.Add(-queueWeek), Limit: queueSize})
	if err != nil {
		return archiveError(err, "cause")
	}
	causes, err := h.d.Archive.Causes(ctx)
	if err != nil {
		return err
	}
	opts := causeOptions(causes)
	v := views.ReviewQueueView{
		Layout: h.d.layout(i18n.T(ctx, "queue.title"), views.NavAccuracy),
		Model:  model, Cause: cause, Models: q.Models, Causes: opts,
		Left: q.Recent, Total: q.Total, More: q.Total > len(q.Items), Now: now,
	}
	next := views.ReviewQueuePath(model, cause)
	for _, s := range q.Items {
		it := views.QueueItem{ID: s.ID, Title: s.Title, Scope: s.Scope, OpenedAt: s.OpenedAt,
			Severity: s.Severity, Cause: s.RootCause, Confidence: s.Confidence, Recent: !s.OpenedAt.Before(now.Add(-queueWeek)),
			Review: reviewControls(s.ID, s.RootCause, "", "", opts, next)}
		if ds, err := h.d.Archive.Diagnoses(ctx, s.ID); err == nil && len(ds) > 0 {
			if ev := views.NewDiagnosisPanel(incident.DecodeDiagnosis(ds[0])).EvidenceIn(ctx); len(ev) > 0 {
				it.Evidence = ev[0]
			}
		}
		v.Items = append(v.Items, it)
	}
	return render(c, http.StatusOK, views.ReviewQueuePage(v))
}

// reviewControls builds an incident's one-click review.
func reviewControls(id int64, diagnosed, verdict, trueCauseTitle string, causes []views.CauseOption, next string) views.ReviewControls {
	return views.ReviewControls{
		IncidentID: id, Diagnosed: diagnosed, Verdict: verdict,
		State: views.VerdictState(verdict, trueCauseTitle), TrueCauseTitle: trueCauseTitle,
		Causes: views.WrongCauses(causes, diagnosed), Next: next,
	}
}

// reviewNext is where a review or note form returns without the script:
// the queue it came from, or the incident. Only the queue is accepted, so
// that the field cannot send a reviewer elsewhere.
func reviewNext(c echo.Context, id int64) string {
	n, queue := c.FormValue("next"), route.URL(route.ReviewQueue)
	if n == queue || strings.HasPrefix(n, queue+"?") {
		return n
	}
	return route.URL(route.IncidentShow, id)
}

// wantsJSON reports a request from the console's script, which saves a
// review in place and reads the answer as JSON.
func wantsJSON(c echo.Context) bool {
	return strings.Contains(c.Request().Header.Get(echo.HeaderAccept), echo.MIMEApplicationJSON)
}

// reviewResult is the script's answer to a saved review or note.
type reviewResult struct {
	Incident  int64  `json:"incident"`
	Verdict   string `json:"verdict,omitempty"`
	TrueCause string `json:"true_cause,omitempty"`
	By        string `json:"by"`
	// State says the review in words, as the page shows it.
	State string `json:"state,omitempty"`
}
