package views

import (
	"github.com/casebook/casebook/internal/route"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// ReviewControls is the view model of the one-click review: "Correct" is
// one form with one button, "Wrong" opens a cause picker whose every
// cause is a submit button, so that a review takes one click (correct)
// or two (wrong, then the true cause) with or without the script.
type ReviewControls struct {
	IncidentID int64
	// Diagnosed is the cause the current diagnosis names; the wrong
	// picker leaves it out.
	Diagnosed string
	Verdict   string // "", "correct" or "wrong"
	// State says the current review in words (English, for the JSON
	// answer); TrueCauseTitle names the true cause of a wrong verdict.
	State          string
	TrueCauseTitle string
	// Causes are the picker's causes, numbered from 1 in this order (the
	// keyboard shortcut "w" then a number picks one).
	Causes []CauseOption
	// Next, when set, is where a form post without the script returns
	// (the review queue); empty means the incident page.
	Next string
}

// LabelAction is where the review forms post.
func (r ReviewControls) LabelAction() string { return route.URL(route.IncidentLabel, r.IncidentID) }

// NoteAction is where the queue's note form posts.
func (r ReviewControls) NoteAction() string { return route.URL(route.IncidentNote, r.IncidentID) }

// Number is a picker cause's number as shown ("1").
func (r ReviewControls) Number(i int) string { return strconv.Itoa(i + 1) }

// idAttr is a DOM id unique to the incident's controls.
func (r ReviewControls) idAttr(part string) string {
	return "review-" + strconv.FormatInt(r.IncidentID, 10) + "-" + part
}

// WrongCauses are the causes a "wrong" verdict may name: every cause
// but the diagnosed one, taxonomy first, then the causes engineers
// created.
func WrongCauses(all []CauseOption, diagnosed string) []CauseOption {
	out := make([]CauseOption, 0, len(all))
	for _, c := range all {
		if c.ID != diagnosed {
			out = append(out, c)
		}
	}
	return out
}

// VerdictState describes a review state in words; trueCauseTitle names
// the true cause of a wrong verdict.
func VerdictState(verdict, trueCauseTitle string) string {
	switch verdict {
	case "correct":
		return "Reviewed: diagnosis correct"
	case "wrong":
		return "Reviewed: diagnosis wrong, true cause " + trueCauseTitle
	}
	return "Not reviewed yet"
}

// QueueItem is one unreviewed incident of the review queue.
type QueueItem struct {
	ID         int64
	Title      string
	Scope      metrics.Scope
	OpenedAt   time.Time
	Severity   string
	Cause      string // the diagnosed cause id
	Confidence float64
	// Evidence is the diagnosis's first evidence line, if any.
	Evidence EvidenceRow
	// Recent is true when the incident opened in the last seven days (it
	// counts toward what is left).
	Recent bool
	Review ReviewControls
}

// Status is the item's colour from its severity.
func (q QueueItem) Status() Status { return StatusOfSeverityWord(q.Severity) }

// CauseTitle names the diagnosed cause.
func (q QueueItem) CauseTitle() string { return CauseTitle(q.Cause) }

// ReviewQueueView is the view model of the review queue.
type ReviewQueueView struct {
	Layout LayoutView
	Items  []QueueItem
	// Model and Cause are the active filters ("" for all).
	Model, Cause string
	Models       []string
	Causes       []CauseOption
	// Left is how many incidents opened in the last seven days (under the
	// filters) are still unreviewed; Total is the same over all time.
	Left, Total int
	// More is true when the queue holds more than Items.
	More bool
	Now  time.Time
}

// ReviewQueuePath is the queue's URL with its filters.
func ReviewQueuePath(model, cause string) string {
	q := url.Values{}
	if model != "" {
		q.Set("model", model)
	}
	if cause != "" {
		q.Set("cause", cause)
	}
	return route.URLQuery(route.ReviewQueue, q)
}

// Path is the queue's URL with the active filters.
func (v ReviewQueueView) Path() string { return ReviewQueuePath(v.Model, v.Cause) }

// LeftText says what is left to review.
func (v ReviewQueueView) LeftText() string {
	switch v.Left {
	case 0:
		return "Nothing left to review from the last 7 days"
	case 1:
		return "1 incident of the last 7 days left to review"
	}
	return strconv.Itoa(v.Left) + " incidents of the last 7 days left to review"
}

// TotalText says how many unreviewed incidents the queue holds in all.
func (v ReviewQueueView) TotalText() string {
	return strconv.Itoa(v.Total) + " unreviewed in all"
}

func (v ReviewQueueView) filterText() string {
	var parts []string
	if v.Model != "" {
		parts = append(parts, "of "+v.Model)
	}
	if v.Cause != "" {
		parts = append(parts, "diagnosed "+CauseTitle(v.Cause))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, ", ")
}
