package handlers

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// maxAPIBody bounds JSON bodies of the label and note endpoints.
const maxAPIBody = 64 << 10

// APIList answers GET /api/v1/incidents with the list's filters; "next" is
// the cursor for ?after= ("" on the last page).
func (h *IncidentAPI) APIList(c echo.Context) error {
	f, _, err := parseListFilter(c.QueryParams())
	if err != nil {
		return err
	}
	page, err := h.d.Archive.List(c.Request().Context(), f)
	if err != nil {
		return archiveError(err, "q")
	}
	items := page.Items
	if items == nil {
		items = []store.Summary{}
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items, "next": page.Next.String()})
}

// APIShow answers GET /api/v1/incidents/:id with the incident, its
// diagnoses (newest first, bodies as the engine wrote them), label history
// and notes.
func (h *IncidentAPI) APIShow(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	p, err := h.d.Archive.Page(c.Request().Context(), id)
	if err != nil {
		return archiveError(err, "id")
	}
	return c.JSON(http.StatusOK, p)
}

// APIExport answers GET /api/v1/incidents/:id/export: the postmortem as
// Markdown, or ?format=json for the full record.
func (h *IncidentAPI) APIExport(c echo.Context) error {
	switch c.QueryParam("format") {
	case "", "md", "markdown":
		return h.d.postmortem(c)
	case "json":
		return h.APIShow(c)
	}
	return badParam("format", "choose md or json")
}

// maxAPIDepth bounds the nesting of a JSON API body (labels and notes are
// flat objects).
const maxAPIDepth = 4

func decodeAPIBody(c echo.Context, v any) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxAPIBody+1))
	if err != nil {
		return badParam("body", "could not be read: %v", err)
	}
	if len(body) > maxAPIBody {
		return &ParamError{Param: "body", Reason: "is larger than 64 KiB", Status: http.StatusRequestEntityTooLarge}
	}
	if err := metrics.CheckJSONDepth(body, maxAPIDepth); err != nil {
		return badParam("body", "is nested deeper than %d levels", maxAPIDepth)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badParam("body", "%v", err)
	}
	return nil
}

// APILabelRequest is the body of POST /api/v1/incidents/:id/labels.
type APILabelRequest struct {
	Verdict   string `json:"verdict"`
	TrueCause string `json:"true_cause"`
	NewCause  string `json:"new_cause"`
	By        string `json:"by"`
	Note      string `json:"note"`
}

// APILabel appends a review label.
func (h *IncidentAPI) APILabel(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	var req APILabelRequest
	if err := decodeAPIBody(c, &req); err != nil {
		return err
	}
	l, err := h.d.Service.Review(c.Request().Context(), store.NewLabel{IncidentID: id, Verdict: store.Verdict(req.Verdict),
		TrueCause: req.TrueCause, NewCause: req.NewCause, By: author(c, req.By), Note: req.Note, At: h.d.Now()})
	if err != nil {
		return archiveError(err, "verdict")
	}
	return c.JSON(http.StatusCreated, l)
}

// APINoteRequest is the body of POST /api/v1/incidents/:id/notes.
type APINoteRequest struct {
	By   string `json:"by"`
	Body string `json:"body"`
}

// APINote appends a note.
func (h *IncidentAPI) APINote(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	var req APINoteRequest
	if err := decodeAPIBody(c, &req); err != nil {
		return err
	}
	n, err := h.d.Service.AddNote(c.Request().Context(), store.NewNote{IncidentID: id, Author: author(c, req.By), Body: req.Body, At: h.d.Now()})
	if err != nil {
		return archiveError(err, "body")
	}
	return c.JSON(http.StatusCreated, n)
}
