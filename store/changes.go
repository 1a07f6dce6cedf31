package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ChangeStatus is where a change request stands in the team's process.
type ChangeStatus string

// The change statuses.
const (
	ChangeProposed   ChangeStatus = "proposed"
	ChangeSent       ChangeStatus = "sent"
	ChangeApplied    ChangeStatus = "applied"
	ChangeRolledBack ChangeStatus = "rolled_back"
)

// Delivery states of a change request's webhook.
const (
	DeliveryNone      = "none"
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// MaxChangeDocBytes bounds a change request's JSON and its Markdown.
const MaxChangeDocBytes = 1 << 20

// NewChange is a change request to store with its incident.
type NewChange struct {
	IncidentID int64
	UID        string // the document's id
	RootCause  string
	ActionID   string
	Knob       string
	Before     string
	After      string
	Doc        json.RawMessage
	Markdown   string
	CreatedAt  time.Time
	CreatedBy  string
	// Deliver marks it pending for the webhook.
	Deliver bool
}

// Change is one stored change request.
type Change struct {
	ID         int64           `json:"id"`
	IncidentID int64           `json:"incident_id"`
	UID        string          `json:"uid"`
	RootCause  string          `json:"root_cause"`
	ActionID   string          `json:"action_id"`
	Knob       string          `json:"knob,omitempty"`
	Before     string          `json:"before,omitempty"`
	After      string          `json:"after,omitempty"`
	Doc        json.RawMessage `json:"doc"`
	Markdown   string          `json:"markdown"`
	Status     ChangeStatus    `json:"status"`
	CreatedAt  time.Time       `json:"created_at"`
	CreatedBy  string          `json:"created_by,omitempty"`
	AppliedAt  time.Time       `json:"applied_at,omitzero"`
	Outcome    json.RawMessage `json:"outcome,omitempty"`
	Verdict    string          `json:"verdict,omitempty"`
	Delivery   string          `json:"delivery"`
	// RoundStart is how many of Attempts belong to earlier rounds of
	// delivery; the current round's attempts follow them.
	RoundStart int        `json:"round_start,omitempty"`
	Attempts   []Delivery `json:"attempts,omitempty"`
}

// Delivery is one webhook attempt of a change request.
type Delivery struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	OK      bool      `json:"ok"`
	Code    int       `json:"code,omitempty"`
	Error   string    `json:"error,omitempty"`
}

func (c NewChange) problems() []string {
	var p []string
	if strings.TrimSpace(c.UID) == "" || len(c.UID) > MaxNameBytes {
		p = append(p, "the id is empty or too long")
	}
	if strings.TrimSpace(c.ActionID) == "" || len(c.ActionID) > MaxNameBytes {
		p = append(p, "the action id is empty or too long")
	}
	if len(c.Doc) == 0 || len(c.Doc) > MaxChangeDocBytes || !json.Valid(c.Doc) {
		p = append(p, "the document is empty, too large or not JSON")
	}
	if len(c.Markdown) > MaxChangeDocBytes {
		p = append(p, "the Markdown is too large")
	}
	return p
}

// AddChange stores a change request. It returns ErrNotFound for an unknown
// incident, ErrConflict for a repeated id and ErrInvalid for bad input.
func (s *Store) AddChange(ctx context.Context, c NewChange) (Change, error) {
	if p := c.problems(); len(p) > 0 {
		return Change{}, fmt.Errorf("store: change on incident %d: %w", c.IncidentID, invalidf("%s", strings.Join(p, "; ")))
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = time.Now()
	}
	delivery := DeliveryNone
	if c.Deliver {
		delivery = DeliveryPending
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Change{}, fmt.Errorf("store: change on incident %d: begin: %w", c.IncidentID, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO change_requests (incident_id, uid, root_cause, action_id, knob, before_value, after_value,
			doc, markdown, created_at, created_by, delivery)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.IncidentID, c.UID, c.RootCause, c.ActionID, c.Knob, c.Before, c.After, string(c.Doc), c.Markdown,
		nanos(c.CreatedAt), c.CreatedBy, delivery).Scan(&id)
	switch {
	case isForeignKey(err):
		return Change{}, fmt.Errorf("store: change on incident %d: %w", c.IncidentID, ErrNotFound)
	case isUnique(err):
		return Change{}, fmt.Errorf("store: change on incident %d: id %s: %w", c.IncidentID, c.UID, ErrConflict)
	case err != nil:
		return Change{}, fmt.Errorf("store: change on incident %d: %w", c.IncidentID, err)
	}
	after := map[string]any{"id": id, "uid": c.UID, "action": c.ActionID, "knob": c.Knob, "before": c.Before, "after": c.After}
	if err := audit(ctx, tx, c.CreatedAt, "change.create", fmt.Sprintf("incident %d", c.IncidentID), nil, after); err != nil {
		return Change{}, fmt.Errorf("store: change on incident %d: %w", c.IncidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return Change{}, fmt.Errorf("store: change on incident %d: commit: %w", c.IncidentID, err)
	}
	return s.Change(ctx, c.IncidentID, id)
}

const changeColumns = `id, incident_id, uid, root_cause, action_id, knob, before_value, after_value, doc, markdown,
	status, created_at, created_by, applied_at, outcome, verdict, delivery, round_start`

func scanChange(row interface{ Scan(...any) error }) (Change, error) {
	var c Change
	var status, doc string
	var created int64
	var applied sql.NullInt64
	var outcome sql.NullString
	err := row.Scan(&c.ID, &c.IncidentID, &c.UID, &c.RootCause, &c.ActionID, &c.Knob, &c.Before, &c.After, &doc, &c.Markdown,
		&status, &created, &c.CreatedBy, &applied, &outcome, &c.Verdict, &c.Delivery, &c.RoundStart)
	if err != nil {
		return Change{}, err
	}
	c.Status, c.Doc, c.CreatedAt = ChangeStatus(status), json.RawMessage(doc), fromNanos(created)
	if applied.Valid {
		c.AppliedAt = fromNanos(applied.Int64)
	}
	if outcome.Valid {
		c.Outcome = json.RawMessage(outcome.String)
	}
	return c, nil
}

// Change returns one change request of an incident with its delivery
// attempts. It returns ErrNotFound when the incident has no such change.
func (s *Store) Change(ctx context.Context, incidentID, id int64) (Change, error) {
	c, err := scanChange(s.r.QueryRowContext(ctx, `SELECT `+changeColumns+` FROM change_requests WHERE id = ? AND incident_id = ?`, id, incidentID))
	if errors.Is(err, sql.ErrNoRows) {
		return Change{}, fmt.Errorf("store: change %d of incident %d: %w", id, incidentID, ErrNotFound)
	}
	if err != nil {
		return Change{}, fmt.Errorf("store: change %d of incident %d: %w", id, incidentID, err)
	}
	if c.Attempts, err = s.deliveries(ctx, id); err != nil {
		return Change{}, err
	}
	return c, nil
}

// Changes returns an incident's change requests with their delivery
// attempts, oldest first.
func (s *Store) Changes(ctx context.Context, incidentID int64) ([]Change, error) {
	out, err := s.queryChanges(ctx, `SELECT `+changeColumns+` FROM change_requests WHERE incident_id = ? ORDER BY id`, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: changes of incident %d: %w", incidentID, err)
	}
	for i := range out {
		if out[i].Attempts, err = s.deliveries(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PendingChanges returns the change requests whose webhook delivery is
// still to be tried, oldest first, with the attempts made so far.
func (s *Store) PendingChanges(ctx context.Context) ([]Change, error) {
	out, err := s.queryChanges(ctx, `SELECT `+changeColumns+` FROM change_requests WHERE delivery = 'pending' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: pending changes: %w", err)
	}
	for i := range out {
		if out[i].Attempts, err = s.deliveries(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UnmeasuredChanges returns the applied change requests whose outcome has
// not been measured yet, oldest first.
func (s *Store) UnmeasuredChanges(ctx context.Context) ([]Change, error) {
	out, err := s.queryChanges(ctx, `SELECT `+changeColumns+` FROM change_requests
		WHERE status = 'applied' AND applied_at IS NOT NULL AND outcome IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: unmeasured changes: %w", err)
	}
	return out, nil
}

func (s *Store) queryChanges(ctx context.Context, q string, args ...any) ([]Change, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Change
	for rows.Next() {
		c, err := scanChange(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *Store) deliveries(ctx context.Context, changeID int64) ([]Delivery, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT attempt, at, ok, code, error FROM change_deliveries WHERE change_id = ? ORDER BY id`, changeID)
	if err != nil {
		return nil, fmt.Errorf("store: deliveries of change %d: %w", changeID, err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var at int64
		if err := rows.Scan(&d.Attempt, &at, &d.OK, &d.Code, &d.Error); err != nil {
			return nil, fmt.Errorf("store: deliveries of change %d: %w", changeID, err)
		}
		d.At = fromNanos(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: deliveries of change %d: %w", changeID, err)
	}
	return out, nil
}

// RecordDelivery stores one webhook attempt and moves the delivery
// state: delivered on success (and a proposed change becomes sent),
// failed when final, pending otherwise.
func (s *Store) RecordDelivery(ctx context.Context, changeID int64, d Delivery, final bool) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: delivery of change %d: begin: %w", changeID, err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, `INSERT INTO change_deliveries (change_id, attempt, at, ok, code, error) VALUES (?, ?, ?, ?, ?, ?)`,
		changeID, d.Attempt, nanos(d.At), d.OK, d.Code, truncate(d.Error, 1000))
	if isForeignKey(err) {
		return fmt.Errorf("store: delivery of change %d: %w", changeID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: delivery of change %d: %w", changeID, err)
	}
	state := DeliveryPending
	switch {
	case d.OK:
		state = DeliveryDelivered
	case final:
		state = DeliveryFailed
	}
	_, err = tx.ExecContext(ctx, `
		UPDATE change_requests SET delivery = ?,
			status = CASE WHEN ? AND status = 'proposed' THEN 'sent' ELSE status END
		WHERE id = ?`, state, d.OK, changeID)
	if err != nil {
		return fmt.Errorf("store: delivery of change %d: %w", changeID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: delivery of change %d: commit: %w", changeID, err)
	}
	return nil
}

// Redeliver marks a change request pending for the webhook again, in a
// new round of attempts.
func (s *Store) Redeliver(ctx context.Context, incidentID, id int64) error {
	res, err := s.w.ExecContext(ctx, `
		UPDATE change_requests SET delivery = 'pending',
			round_start = (SELECT count(*) FROM change_deliveries WHERE change_id = change_requests.id)
		WHERE id = ? AND incident_id = ?`, id, incidentID)
	return rowsChanged(res, err, fmt.Sprintf("store: redeliver change %d of incident %d", id, incidentID))
}

// SetChangeStatus moves a change request to status; marking it applied
// records at as its application time.
func (s *Store) SetChangeStatus(ctx context.Context, incidentID, id int64, status ChangeStatus, at time.Time) error {
	switch status {
	case ChangeProposed, ChangeSent, ChangeApplied, ChangeRolledBack:
	default:
		return fmt.Errorf("store: change %d: %w", id, invalidf("status %q", status))
	}
	var applied any
	if status == ChangeApplied {
		applied = nanos(at)
	}
	op := fmt.Sprintf("store: change %d of incident %d", id, incidentID)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", op, err)
	}
	defer tx.Rollback()
	var before string
	err = tx.QueryRowContext(ctx, `SELECT status FROM change_requests WHERE id = ? AND incident_id = ?`, id, incidentID).Scan(&before)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE change_requests SET status = ?, applied_at = coalesce(?, applied_at)
		WHERE id = ? AND incident_id = ?`, string(status), applied, id, incidentID); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	target := fmt.Sprintf("incident %d change %d", incidentID, id)
	if err := audit(ctx, tx, at, "change.status", target, map[string]string{"status": before}, map[string]string{"status": string(status)}); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", op, err)
	}
	return nil
}

// SetChangeOutcome stores the evaluated outcome of an applied change.
func (s *Store) SetChangeOutcome(ctx context.Context, incidentID, id int64, outcome json.RawMessage, verdict string) error {
	if !json.Valid(outcome) || len(outcome) > MaxChangeDocBytes {
		return fmt.Errorf("store: outcome of change %d: %w", id, invalidf("not JSON or too large"))
	}
	res, err := s.w.ExecContext(ctx, `UPDATE change_requests SET outcome = ?, verdict = ? WHERE id = ? AND incident_id = ?`,
		string(outcome), verdict, id, incidentID)
	return rowsChanged(res, err, fmt.Sprintf("store: outcome of change %d of incident %d", id, incidentID))
}

// ActionOutcome counts, for one action of a cause, how often a change
// request was applied and how often its outcome had the expected effect.
type ActionOutcome struct {
	ActionID     string `json:"action_id"`
	Requested    int    `json:"requested"`
	Applied      int    `json:"applied"`
	Expected     int    `json:"expected"`
	NotExpected  int    `json:"not_expected"`
	Inconclusive int    `json:"inconclusive"`
}

// ActionOutcomes returns the per-action counts of a root cause, the most
// applied first.
func (s *Store) ActionOutcomes(ctx context.Context, cause string) ([]ActionOutcome, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT action_id, count(*),
			sum(applied_at IS NOT NULL),
			sum(verdict = 'expected'), sum(verdict = 'not_expected'), sum(verdict = 'inconclusive')
		FROM change_requests WHERE root_cause = ?
		GROUP BY action_id ORDER BY 3 DESC, 2 DESC, action_id`, cause)
	if err != nil {
		return nil, fmt.Errorf("store: action outcomes of %s: %w", cause, err)
	}
	defer rows.Close()
	var out []ActionOutcome
	for rows.Next() {
		var a ActionOutcome
		if err := rows.Scan(&a.ActionID, &a.Requested, &a.Applied, &a.Expected, &a.NotExpected, &a.Inconclusive); err != nil {
			return nil, fmt.Errorf("store: action outcomes of %s: %w", cause, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: action outcomes of %s: %w", cause, err)
	}
	return out, nil
}

func rowsChanged(res sql.Result, err error, op string) error {
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
