package handlers

import (
	"bytes"
	"fmt"
	"github.com/casebook/casebook/internal/route"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Preview draws an incident's link-preview picture (PNG). It is for the
// people who can open the console: a request that brings neither a
// sign-in nor a cookie of the console, as a chat tool's link crawler
// does, is refused. To unfurl an incident outside the console, share it:
// the share link's picture is public to whoever holds the link.
func (h *Incidents) Preview(c echo.Context) error {
	if !consoleReader(c) {
		return HTTPError(http.StatusForbidden, "error.preview_inside")
	}
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	p, err := h.d.Archive.Page(c.Request().Context(), id)
	if err != nil {
		return archiveError(err, "id")
	}
	c.Response().Header().Set("Cache-Control", "private, no-cache")
	return writePreview(c, p)
}

// SharedPreview draws the preview picture of the incident behind a share
// link: the chart and cause its page shows, nothing more. Unknown, expired
// and revoked tokens are 404, as for the page.
func (h *Incidents) SharedPreview(c echo.Context) error {
	p, err := h.sharedPage(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	c.Response().Header().Set("Cache-Control", "no-store")
	return writePreview(c, p)
}

// consoleReader reports whether the request comes from someone using the
// console: signed in (a session, the proxy, an API token) or, without
// authentication, a browser holding the console's form cookie.
func consoleReader(c echo.Context) bool {
	switch auth.FromContext(c.Request().Context()).Kind {
	case auth.KindSession, auth.KindProxy, auth.KindToken:
		return true
	case auth.KindOpen:
		ck, err := c.Cookie(CSRFCookie)
		return err == nil && ck.Value != ""
	}
	return false
}

func writePreview(c echo.Context, p store.Page) error {
	var buf bytes.Buffer
	if err := views.RenderPreview(&buf, previewOf(p)); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "image/png", buf.Bytes())
}

// previewOf is an incident's preview: its diagnosed cause, and the chart
// of the first evidence metric that has an archived window (else the
// first of the causal chain, else engine E2E latency).
func previewOf(p store.Page) views.Preview {
	inc := p.Incident
	var d diagnose.Diagnosis
	if len(p.Diagnoses) > 0 {
		d = incident.DecodeDiagnosis(p.Diagnoses[0])
	}
	panel := views.NewDiagnosisPanel(d)
	pv := views.Preview{
		Title:    inc.Title,
		Subtitle: inc.Scope.String() + " · " + inc.Severity + " · opened " + views.FormatTime(inc.OpenedAt),
		Status:   views.StatusOfSeverityWord(inc.Severity),
		Start:    inc.WindowStart, End: inc.WindowEnd, Marker: triggerTime(inc),
	}
	if d.RootCause != "" {
		pv.Title = panel.Title() + " · " + panel.Confidence()
		pv.Status = panel.Status()
	}
	windows := map[string][]metrics.Sample{}
	for _, s := range inc.Windows {
		if _, seen := windows[s.Metric]; !seen && len(s.Samples) > 0 {
			windows[s.Metric] = s.Samples
		}
	}
	var candidates []string
	for _, e := range d.Evidence {
		candidates = append(candidates, e.Metric)
	}
	candidates = append(candidates, d.CausalChain...)
	candidates = append(candidates, metrics.E2E, metrics.TTFT)
	for _, id := range candidates {
		if ss, ok := windows[id]; ok {
			pv.Metric, pv.Samples = id, ss
			break
		}
	}
	for _, e := range d.Evidence {
		if e.Metric == pv.Metric {
			pv.Baseline, pv.HasBaseline = e.BaselineMean, true
			break
		}
	}
	return pv
}

// triggerTime is the instant the incident is about: the alert's start,
// else the snapshot's time, else when it was opened.
func triggerTime(inc store.Incident) time.Time {
	switch {
	case inc.Alert != nil && !inc.Alert.StartsAt.IsZero():
		return inc.Alert.StartsAt
	case !inc.Snapshot.At.IsZero():
		return inc.Snapshot.At
	}
	return inc.OpenedAt
}

// baseURL is the console's address as links outside it need it: the
// configured base URL, else the request's own scheme and host.
func (h *Incidents) baseURL(c echo.Context) string {
	if base := strings.TrimSuffix(h.d.BaseURL, "/"); base != "" {
		return base
	}
	return c.Scheme() + "://" + c.Request().Host
}

// sharePath is the page of a share link; sharePreviewPath its picture.
func sharePath(token string) string        { return route.URL(route.ShareShow, token) }
func sharePreviewPath(token string) string { return route.URL(route.SharePreview, token) }

// incidentPreviewPath is the picture of an incident's page.
func incidentPreviewPath(id int64) string { return route.URL(route.IncidentPreview, id) }

// card is the link preview of an incident page at pageURL with its
// picture at imageURL (both absolute).
func card(v views.IncidentView, pageURL, imageURL string) *views.Card {
	title := fmt.Sprintf("#%d %s · %s", v.ID, v.CauseHeadline(), v.Scope.String())
	parts := []string{strings.ToUpper(v.SeverityText()[:1]) + v.SeverityText()[1:]}
	if v.HasDiagnosis() {
		parts = append(parts, v.Current.Confidence()+" confidence")
	}
	parts = append(parts, "opened "+views.FormatTime(v.OpenedAt), v.Title)
	if ev := v.TopEvidence(1); len(ev) > 0 {
		parts = append(parts, ev[0].Label+" "+ev[0].Value+" (baseline "+ev[0].Baseline+")")
	}
	return &views.Card{
		Title: title, Description: strings.Join(parts, " · "), URL: pageURL, Image: imageURL,
		ImageAlt: "Chart of the incident's key metric around its trigger, " + v.CauseHeadline(),
	}
}
