package views

import (
	"strconv"
	"time"
)

// ChangeRow is one change request in an incident's list.
type ChangeRow struct {
	ID        int64
	Title     string
	Status    string // proposed, sent, applied, rolled_back
	Delivery  string // none, pending, delivered, failed
	Verdict   string // the outcome's verdict, "" before one
	CreatedAt time.Time
	Link      string
}

// DeliveryRow is one webhook attempt.
type DeliveryRow struct {
	Attempt int
	At      time.Time
	OK      bool
	Code    int
	Error   string
}

// OutcomeRow is the measured outcome of one expected effect.
type OutcomeRow struct {
	Metric, Direction, Before, After, Change, Verdict, Why string
}

// ChangeView is the view model of a change request page.
type ChangeView struct {
	Layout        LayoutView
	IncidentID    int64
	IncidentTitle string
	Row           ChangeRow
	UID           string
	Action        string
	Why           string
	Knob          string // "" for an operational step
	Before, After string
	Reason        string
	ArgDiff       string
	Helm          string
	Window        string // the next deployment window, "" without a schedule
	Capacity      string // the idle-GPU check, "" when not run
	Effects       []string
	Risk          string
	Rollback      string
	Markdown      string
	Webhook       bool // a webhook is configured
	Attempts      []DeliveryRow
	AppliedAt     time.Time
	// OutcomeDue is when the outcome can be measured (zero before the
	// change is applied).
	OutcomeDue time.Time
	Outcome    []OutcomeRow
	Verdict    string
}

// StatusWord is a change status for display.
func StatusWord(s string) string {
	switch s {
	case "rolled_back":
		return "rolled back"
	case "not_expected":
		return "not the expected effect"
	case "expected":
		return "the expected effect"
	}
	return s
}

// DeliveryText describes the webhook delivery of a change request.
func (v ChangeView) DeliveryText() string {
	switch v.Row.Delivery {
	case "none":
		if v.Webhook {
			return "Not sent."
		}
		return "No webhook is configured."
	case "pending":
		return "Queued for the webhook; " + plural(len(v.Attempts), "attempt") + " so far."
	case "delivered":
		return "Delivered after " + plural(len(v.Attempts), "attempt") + "."
	case "failed":
		return "Failed after " + plural(len(v.Attempts), "attempt") + "."
	}
	return v.Row.Delivery
}

// CodeText renders an HTTP status, "—" when none came back.
func (d DeliveryRow) CodeText() string {
	if d.Code == 0 {
		return "—"
	}
	return strconv.Itoa(d.Code)
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }
