package handlers

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
)

// Show renders the incident page.
func (h *Incidents) Show(c echo.Context) error {
	v, err := h.incidentView(c, false)
	if err != nil {
		return err
	}
	base := h.baseURL(c)
	v.Layout.Card = card(v, base+route.URL(route.IncidentShow, v.ID), base+incidentPreviewPath(v.ID))
	return render(c, http.StatusOK, views.IncidentPage(v))
}

// Print renders the printable postmortem page.
func (h *Incidents) Print(c echo.Context) error {
	v, err := h.incidentView(c, true)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.IncidentPrintPage(v))
}

// Shared renders the incident behind a share link, read-only. Unknown,
// expired and revoked tokens are all 404.
func (h *Incidents) Shared(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := h.sharedPage(c)
	if err != nil {
		return err
	}
	v := h.buildView(ctx, p, nil, true)
	base := h.baseURL(c)
	tok := c.Param("token") // resolved above: a live link
	v.Layout.Card = card(v, base+sharePath(tok), base+sharePreviewPath(tok))
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusOK, views.IncidentSharedPage(v))
}

// sharedPage reads the incident behind the request's share token; an
// unknown, expired or revoked token is 404.
func (h *Incidents) sharedPage(c echo.Context) (store.Page, error) {
	ctx := c.Request().Context()
	link, err := h.d.Archive.ResolveShare(ctx, c.Param("token"), h.d.Now())
	if err != nil {
		return store.Page{}, archiveError(err, "token")
	}
	p, err := h.d.Archive.Page(ctx, link.IncidentID)
	if err != nil {
		return store.Page{}, archiveError(err, "token")
	}
	return p, nil
}

func (h *Incidents) incidentView(c echo.Context, readOnly bool) (views.IncidentView, error) {
	ctx := c.Request().Context()
	id, err := incidentID(c)
	if err != nil {
		return views.IncidentView{}, err
	}
	p, err := h.d.Archive.Page(ctx, id)
	if err != nil {
		return views.IncidentView{}, archiveError(err, "id")
	}
	h.d.Service.CompleteWindows(ctx, &p.Incident)
	var shares []store.ShareLink
	if !readOnly {
		if shares, err = h.d.Archive.Shares(ctx, id); err != nil {
			return views.IncidentView{}, err
		}
	}
	v := h.buildView(ctx, p, shares, readOnly)
	if !readOnly {
		causes, err := h.d.Archive.Causes(ctx)
		if err != nil {
			return views.IncidentView{}, err
		}
		v.Causes = causeOptions(causes)
		v.Review = reviewControls(v.ID, v.Current.D.RootCause, v.Verdict, v.TrueCauseTitle, v.Causes, "")
	}
	return v, nil
}

func causeOptions(cs []store.Cause) []views.CauseOption {
	out := make([]views.CauseOption, len(cs))
	for i, c := range cs {
		out[i] = views.CauseOption{ID: c.ID, Title: c.Title, Custom: !c.Builtin}
	}
	return out
}

// triggerTextIn says what opened the incident, in the request's language:
// the alert's name, the bands the detector's metrics left, or the manual
// "diagnose now".
func triggerTextIn(ctx context.Context, inc store.Incident) string {
	detail, _ := incident.DecodeTriggerDetail(inc.TriggerDetail) // an unreadable detail names the trigger only
	switch inc.Trigger {
	case store.TriggerAlertmanager:
		text := i18n.T(ctx, "trigger.alertmanager")
		if detail.AlertName != "" {
			text += " " + detail.AlertName
		}
		return text + lostAlertsText(ctx, detail)
	case store.TriggerDetector:
		if left := bandsLeft(ctx, detail.Bands); left != "" {
			return i18n.T(ctx, "trigger.detector_bands", left)
		}
		if detail.Metric != "" {
			return i18n.T(ctx, "trigger.detector_on", views.MetricLabelIn(ctx, detail.Metric))
		}
		return i18n.T(ctx, "trigger.detector")
	default:
		return i18n.T(ctx, "trigger.manual")
	}
}

// lostAlertsText says how many alerts of the incident's webhook message
// opened nothing: dropped past the per-message limit, or truncated by
// Alertmanager's max_alerts; "" when none were.
func lostAlertsText(ctx context.Context, detail incident.TriggerDetail) string {
	var parts []string
	if detail.DroppedAlerts > 0 {
		parts = append(parts, i18n.T(ctx, "trigger.dropped_alerts", strconv.Itoa(detail.DroppedAlerts), strconv.Itoa(incident.MaxAlertsPerMessage)))
	}
	if detail.TruncatedAlerts > 0 {
		parts = append(parts, i18n.T(ctx, "trigger.truncated_alerts", strconv.Itoa(detail.TruncatedAlerts)))
	}
	if len(parts) == 0 {
		return ""
	}
	return i18n.T(ctx, "trigger.lost", strings.Join(parts, i18n.T(ctx, "trigger.sep")))
}

// bandsLeft says which forecast bands a detector incident's metrics left
// and by how much; "" when it lists none of the catalog's metrics.
func bandsLeft(ctx context.Context, bands []incident.BandExit) string {
	var parts []string
	for _, m := range bands {
		if _, ok := metrics.Lookup(m.Metric); !ok {
			continue
		}
		key := "trigger.band_above"
		if m.Value < m.Lower {
			key = "trigger.band_below"
		}
		part := i18n.T(ctx, key,
			views.MetricLabelIn(ctx, m.Metric), views.FormatValue(m.Metric, m.Value),
			views.FormatValue(m.Metric, m.Lower), views.FormatValue(m.Metric, m.Upper),
			views.FormatValue(m.Metric, m.Outside))
		if m.OutsideSE > 0 { // 0: the series had no spread to measure it by
			part += i18n.T(ctx, "trigger.band_se", fmt.Sprintf("%.1f", m.OutsideSE))
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, i18n.T(ctx, "trigger.sep"))
}

func (h *Incidents) buildView(ctx context.Context, p store.Page, shares []store.ShareLink, readOnly bool) views.IncidentView {
	inc := p.Incident
	now := h.d.Now()
	v := views.IncidentView{
		Layout:      h.d.layout(i18n.T(ctx, "incident.page_title", fmt.Sprint(inc.ID), inc.Title), views.NavIncidents),
		ID:          inc.ID,
		Title:       inc.Title,
		Scope:       inc.Scope,
		Trigger:     triggerTextIn(ctx, inc),
		OpenedAt:    inc.OpenedAt,
		WindowStart: inc.WindowStart,
		WindowEnd:   inc.WindowEnd,
		Severity:    inc.Severity,
		Verdict:     string(inc.Verdict),
		TrueCause:   inc.TrueCause,
		ReadOnly:    readOnly,
		Now:         now,
	}
	if inc.Alert != nil {
		v.AlertState, v.ResolvedAt = string(inc.Alert.State), inc.Alert.ResolvedAt
	}
	v.Panels = archivedPanels(inc)
	for i, d := range p.Diagnoses {
		panel := withEngineKnobs(views.NewDiagnosisPanel(incident.DecodeDiagnosis(d)), inc.Snapshot.Engine)
		if i == 0 {
			v.Current = panel
		} else {
			v.Past = append(v.Past, views.PastDiagnosis{ID: d.ID, At: d.CreatedAt, Panel: panel})
		}
	}
	title := h.d.Service.CauseTitles(ctx)
	v.TrueCauseTitle = title(inc.TrueCause)
	if len(p.Diagnoses) > 0 {
		v.Similar = h.similarIncidents(ctx, incident.DecodeDiagnosis(p.Diagnoses[0]), inc.ID, title)
	}
	v.Timeline = timeline(ctx, p, title)
	if h.d.Changes != nil {
		h.addChanges(ctx, &v, inc, readOnly)
	}
	for _, s := range shares {
		v.Shares = append(v.Shares, views.ShareRow{ID: s.ID, CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt,
			ExpiresAt: s.ExpiresAt, RevokedAt: s.RevokedAt, Active: s.Active(now)})
	}
	v.Traces = h.d.tracesView(ctx, inc.ID, readOnly)
	return v
}

// archivedPanels draws the four dimensions from the archived windows, with
// the trigger marked.
func archivedPanels(inc store.Incident) []views.IncidentPanel {
	byID := map[string][]metrics.Sample{}
	for _, s := range inc.Windows {
		if _, seen := byID[s.Metric]; !seen {
			byID[s.Metric] = s.Samples
		}
	}
	trigger := triggerTime(inc)
	step := 30 * time.Second
	for _, s := range inc.Windows {
		if len(s.Samples) > 1 {
			step = s.Samples[1].T.Sub(s.Samples[0].T)
			break
		}
	}
	var out []views.IncidentPanel
	for _, p := range panelDefs {
		panel := views.IncidentPanel{ID: string(p.dim), Title: views.DimensionTitle(p.dim)}
		for _, cd := range p.charts {
			spec := views.ChartSpec{ID: "incident-" + cd.id, Title: cd.title, Unit: cd.unit,
				Start: inc.WindowStart, End: inc.WindowEnd, Step: step, Marker: trigger, MarkerLabel: "trigger"}
			for _, id := range cd.ids {
				spec.Series = append(spec.Series, views.ChartSeries{Metric: id, Samples: byID[id]})
			}
			panel.Charts = append(panel.Charts, views.NewChart(spec))
		}
		out = append(out, panel)
	}
	return out
}

// timeline merges the incident's events, oldest first.
func timeline(ctx context.Context, p store.Page, causeTitle func(string) string) []views.TimelineEntry {
	inc := p.Incident
	out := []views.TimelineEntry{{At: inc.OpenedAt, Kind: "opened", Text: triggerTextIn(ctx, inc)}}
	for _, d := range p.Diagnoses {
		out = append(out, views.TimelineEntry{At: d.CreatedAt, Kind: "diagnosis",
			Text: i18n.T(ctx, "timeline.diagnosis_text", views.CauseTitleIn(ctx, d.RootCause), views.FormatPercent(d.Confidence), d.EngineVersion)})
	}
	for _, l := range p.Labels {
		text := i18n.T(ctx, "timeline.label_correct")
		if l.Verdict == store.VerdictWrong {
			text = i18n.T(ctx, "timeline.label_wrong", causeTitleIn(ctx, causeTitle, l.TrueCause))
		}
		if l.Note != "" {
			text += ". " + l.Note
		}
		out = append(out, views.TimelineEntry{At: l.At, Kind: "label", Who: l.By, Text: text})
	}
	for _, n := range p.Notes {
		out = append(out, views.TimelineEntry{At: n.At, Kind: "note", Who: n.Author, Text: n.Body})
	}
	if inc.Alert != nil && inc.Alert.State == store.AlertResolved {
		out = append(out, views.TimelineEntry{At: inc.Alert.ResolvedAt, Kind: "resolved", Text: i18n.T(ctx, "timeline.alert_resolved")})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Label records a review from the incident page's or the queue's
// buttons. A form post is redirected back (to the queue it came from, or
// the incident); the console's script asks for JSON and stays on the page.
func (h *Incidents) Label(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l := store.NewLabel{
		IncidentID: id,
		Verdict:    store.Verdict(c.FormValue("verdict")),
		TrueCause:  strings.TrimSpace(c.FormValue("true_cause")),
		NewCause:   strings.TrimSpace(c.FormValue("new_cause")),
		By:         author(c, c.FormValue("by")),
		Note:       strings.TrimSpace(c.FormValue("note")),
		At:         h.d.Now(),
	}
	switch {
	case l.Verdict == store.VerdictCorrect:
		l.TrueCause, l.NewCause = "", "" // the diagnosed cause
	case l.TrueCause != "":
		l.NewCause = "" // the picker's cause button was pressed, not "Save new cause"
	}
	label, err := h.d.Service.Review(ctx, l)
	if err != nil {
		return archiveError(err, "verdict")
	}
	if wantsJSON(c) {
		title := h.d.Service.CauseTitles(ctx)
		return c.JSON(http.StatusOK, reviewResult{Incident: id, Verdict: string(label.Verdict), TrueCause: label.TrueCause,
			By: label.By, State: views.VerdictStateIn(ctx, string(label.Verdict), title(label.TrueCause))})
	}
	return redirect(c, reviewNext(c, id))
}

// Note adds a note from the incident page's or the queue's form.
func (h *Incidents) Note(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	n := store.NewNote{IncidentID: id, Author: author(c, c.FormValue("by")), Body: c.FormValue("body"), At: h.d.Now()}
	saved, err := h.d.Service.AddNote(c.Request().Context(), n)
	if err != nil {
		return archiveError(err, "body")
	}
	if wantsJSON(c) {
		return c.JSON(http.StatusOK, reviewResult{Incident: id, By: saved.Author})
	}
	return redirect(c, reviewNext(c, id))
}

// Rediagnose diagnoses the archived snapshot again with the current engine;
// the earlier diagnoses stay.
func (h *Incidents) Rediagnose(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	if err := h.d.rediagnose(c.Request().Context(), id); err != nil {
		return err
	}
	return redirect(c, route.URL(route.IncidentShow, id))
}

// rediagnose diagnoses an archived incident's snapshot again, with the
// kernel evidence of its latest trace.
func (d *IncidentDeps) rediagnose(ctx context.Context, id int64) error {
	if _, err := d.Service.Rediagnose(ctx, id, d.kernelEvidence(ctx, id)); err != nil {
		return archiveError(err, "id")
	}
	return nil
}

// Share ttl choices.
var shareTTLs = map[string]time.Duration{"24h": 24 * time.Hour, "168h": 7 * 24 * time.Hour, "720h": 30 * 24 * time.Hour}

// Share creates a read-only link and shows it once on the incident page.
func (h *Incidents) Share(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ttl, ok := shareTTLs[c.FormValue("ttl")]
	if !ok {
		return paramError("ttl", "param.ttl")
	}
	now := h.d.Now()
	link, err := h.d.Archive.CreateShare(ctx, id, author(c, c.FormValue("by")), now, now.Add(ttl))
	if err != nil {
		return archiveError(err, "by")
	}
	v, err := h.incidentView(c, false)
	if err != nil {
		return err
	}
	v.NewShareURL = h.shareURL(c, link.Token)
	c.Response().Header().Set("Cache-Control", "no-store")
	return render(c, http.StatusCreated, views.IncidentPage(v))
}

func (h *Incidents) shareURL(c echo.Context, token string) string {
	return h.baseURL(c) + sharePath(token)
}

// Revoke revokes a share link of the incident.
func (h *Incidents) Revoke(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	var sid int64
	if _, err := fmt.Sscan(c.Param("share"), &sid); err != nil || sid <= 0 {
		return paramError("share", "param.share_number")
	}
	if err := h.d.Archive.RevokeShare(c.Request().Context(), id, sid, h.d.Now()); err != nil {
		return archiveError(err, "share")
	}
	return redirect(c, route.URL(route.IncidentShow, id))
}

// addChanges puts the incident's change requests on its page and, unless
// read-only, a change-request form under each action.
func (h *Incidents) addChanges(ctx context.Context, v *views.IncidentView, inc store.Incident, readOnly bool) {
	cs, err := h.d.Changes.d.Store.Changes(ctx, inc.ID)
	if err != nil {
		h.d.Logger.WarnContext(ctx, "incidents: change requests", "incident", inc.ID, "err", err)
	}
	v.Changes = ChangeRows(cs)
	v.Timeline = append(v.Timeline, changeTimeline(ctx, cs)...)
	sort.SliceStable(v.Timeline, func(i, j int) bool { return v.Timeline[i].At.Before(v.Timeline[j].At) })
	if !readOnly {
		v.Current.ChangeURL = route.URL(route.ChangeCreate, inc.ID)
		v.Current.Current = h.d.Changes.Current(ctx, inc.Scope)
	}
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

// causeTitleIn names a cause in the request's language: the taxonomy's
// causes are translated, an engineer's own keep the name causeTitle gives.
func causeTitleIn(ctx context.Context, causeTitle func(string) string, id string) string {
	if _, ok := metrics.LookupCause(id); ok {
		return views.CauseTitleIn(ctx, id)
	}
	return causeTitle(id)
}
