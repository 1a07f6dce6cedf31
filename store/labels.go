package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// NewLabel is a review of an incident's current diagnosis.
type NewLabel struct {
	IncidentID int64
	Verdict    Verdict // correct or wrong
	// TrueCause is the id of the actual root cause: a taxonomy id or an
	// engineer-created cause. For a correct verdict it may be empty and
	// defaults to the diagnosed cause.
	TrueCause string
	// NewCause, when set, names a cause to create (or reuse, when one with
	// the same id exists) in the same transaction; it overrides TrueCause.
	NewCause string
	By       string
	Note     string
	At       time.Time
}

// Label is one stored review. Labels are append-only: the newest is the
// incident's current label and the older ones are its history.
type Label struct {
	ID          int64     `json:"id"`
	IncidentID  int64     `json:"incident_id"`
	DiagnosisID int64     `json:"diagnosis_id,omitempty"` // the diagnosis that was reviewed
	Verdict     Verdict   `json:"verdict"`
	TrueCause   string    `json:"true_cause"`
	By          string    `json:"by"`
	At          time.Time `json:"at"`
	Note        string    `json:"note,omitempty"`
}

// Cause is a root cause that labels can name: a built-in taxonomy entry or
// one an engineer created.
type Cause struct {
	ID          string    `json:"id"`
	Title       string    `json:"title"`
	Description string    `json:"description,omitempty"`
	Builtin     bool      `json:"builtin"`
	CreatedBy   string    `json:"created_by,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// CauseID derives the id of an engineer-created cause from its name:
// lower-case ASCII letters and digits joined by underscores, prefixed with
// "custom_" so it can never shadow a taxonomy id.
func CauseID(name string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(name) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			sep = false
		} else {
			sep = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "custom_" + b.String()
}

// AddLabel appends a review label and makes it the incident's current one.
func (s *Store) AddLabel(ctx context.Context, l NewLabel) (Label, error) {
	if l.Verdict != VerdictCorrect && l.Verdict != VerdictWrong {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("verdict %q is not correct or wrong", l.Verdict))
	}
	if strings.TrimSpace(l.By) == "" || len(l.By) > MaxNameBytes {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("reviewer name is empty or too long"))
	}
	if len(l.Note) > MaxNoteBytes || !utf8.ValidString(l.Note) {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("note is longer than %d bytes or not UTF-8", MaxNoteBytes))
	}
	for _, f := range []string{l.By, l.Note, l.NewCause, l.TrueCause} {
		if strings.ContainsRune(f, 0) {
			return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("a field contains a NUL character"))
		}
	}
	if l.At.IsZero() {
		l.At = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: begin: %w", l.IncidentID, err)
	}
	defer tx.Rollback()

	var diagnosisID sql.NullInt64
	var diagnosed, engineVersion, prevVerdict, prevCause string
	err = tx.QueryRowContext(ctx, `
		SELECT i.diagnosis_id, i.root_cause, coalesce(d.engine_version, ''), coalesce(i.verdict, ''), coalesce(i.true_cause, '')
		FROM incidents i LEFT JOIN diagnoses d ON d.id = i.diagnosis_id WHERE i.id = ?`, l.IncidentID).
		Scan(&diagnosisID, &diagnosed, &engineVersion, &prevVerdict, &prevCause)
	if errors.Is(err, sql.ErrNoRows) {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, ErrNotFound)
	}
	if err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, err)
	}
	if strings.TrimSpace(l.NewCause) != "" {
		c, err := ensureCause(ctx, tx, l.NewCause, "", l.By, l.At)
		if err != nil {
			return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, err)
		}
		l.TrueCause = c.ID
	}
	if l.TrueCause == "" && l.Verdict == VerdictCorrect {
		l.TrueCause = diagnosed
	}
	if l.TrueCause == "" {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("a wrong verdict needs the true cause"))
	}
	if l.Verdict == VerdictCorrect && l.TrueCause != diagnosed {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("verdict correct but true cause %q differs from the diagnosed %q", l.TrueCause, diagnosed))
	}
	if l.Verdict == VerdictWrong && l.TrueCause == diagnosed {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("verdict wrong but the true cause is the diagnosed one"))
	}
	res, err := tx.ExecContext(ctx, `
		INSERT INTO labels (incident_id, diagnosis_id, diagnosed_cause, engine_version, verdict, true_cause, labeled_by, created_at, note)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.IncidentID, diagnosisID, diagnosed, engineVersion, string(l.Verdict), l.TrueCause, l.By, nanos(l.At), l.Note)
	if isForeignKey(err) {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, invalidf("unknown cause %q", l.TrueCause))
	}
	if err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: insert: %w", l.IncidentID, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE incidents SET label_id = ?, verdict = ?, true_cause = ?, cause = ? WHERE id = ?`,
		id, string(l.Verdict), l.TrueCause, l.TrueCause, l.IncidentID)
	if err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: update current label: %w", l.IncidentID, err)
	}
	var before any
	if prevVerdict != "" {
		before = map[string]string{"verdict": prevVerdict, "true_cause": prevCause}
	}
	after := map[string]string{"verdict": string(l.Verdict), "true_cause": l.TrueCause, "by": l.By, "note": l.Note}
	if err := audit(ctx, tx, l.At, "label.create", fmt.Sprintf("incident %d", l.IncidentID), before, after); err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: %w", l.IncidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return Label{}, fmt.Errorf("store: label incident %d: commit: %w", l.IncidentID, err)
	}
	return Label{ID: id, IncidentID: l.IncidentID, DiagnosisID: diagnosisID.Int64, Verdict: l.Verdict,
		TrueCause: l.TrueCause, By: l.By, At: l.At.UTC(), Note: l.Note}, nil
}

// Labels returns an incident's label history, newest first.
func (s *Store) Labels(ctx context.Context, incidentID int64) ([]Label, error) {
	out, err := listLabels(ctx, s.r, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: labels of incident %d: %w", incidentID, err)
	}
	return out, nil
}

func listLabels(ctx context.Context, q querier, incidentID int64) ([]Label, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT id, incident_id, diagnosis_id, verdict, true_cause, labeled_by, created_at, note
		FROM labels WHERE incident_id = ? ORDER BY id DESC`, incidentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Label
	for rows.Next() {
		var l Label
		var diag sql.NullInt64
		var verdict string
		var at int64
		if err := rows.Scan(&l.ID, &l.IncidentID, &diag, &verdict, &l.TrueCause, &l.By, &at, &l.Note); err != nil {
			return nil, err
		}
		l.DiagnosisID, l.Verdict, l.At = diag.Int64, Verdict(verdict), fromNanos(at)
		out = append(out, l)
	}
	return out, rows.Err()
}

// CreateCause adds an engineer-created cause named name. Its id is
// CauseID(name); creating a cause whose id exists returns ErrConflict.
func (s *Store) CreateCause(ctx context.Context, name, description, by string) (Cause, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Cause{}, fmt.Errorf("store: create cause: begin: %w", err)
	}
	defer tx.Rollback()
	id := CauseID(name)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM causes WHERE id = ?`, id).Scan(&n); err != nil {
		return Cause{}, fmt.Errorf("store: create cause: %w", err)
	}
	if n > 0 {
		return Cause{}, fmt.Errorf("store: create cause %q: %w: it exists", id, ErrConflict)
	}
	c, err := ensureCause(ctx, tx, name, description, by, time.Now())
	if err != nil {
		return Cause{}, fmt.Errorf("store: create cause: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Cause{}, fmt.Errorf("store: create cause: commit: %w", err)
	}
	return c, nil
}

func ensureCause(ctx context.Context, tx *sql.Tx, name, description, by string, at time.Time) (Cause, error) {
	name = strings.TrimSpace(name)
	id := CauseID(name)
	if id == "" {
		return Cause{}, invalidf("cause name %q has no letters or digits", name)
	}
	if len(name) > MaxNameBytes || len(description) > MaxNoteBytes || !utf8.ValidString(name) {
		return Cause{}, invalidf("cause name or description too long")
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO causes (id, title, description, builtin, created_by, created_at) VALUES (?, ?, ?, 0, ?, ?)
		ON CONFLICT (id) DO NOTHING`, id, name, description, by, nanos(at))
	if err != nil {
		return Cause{}, fmt.Errorf("insert cause %s: %w", id, err)
	}
	return getCause(ctx, tx, id)
}

func getCause(ctx context.Context, q querier, id string) (Cause, error) {
	var c Cause
	var builtin int
	var at int64
	err := q.QueryRowContext(ctx, `SELECT id, title, description, builtin, created_by, created_at FROM causes WHERE id = ?`, id).
		Scan(&c.ID, &c.Title, &c.Description, &builtin, &c.CreatedBy, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Cause{}, fmt.Errorf("cause %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Cause{}, fmt.Errorf("cause %q: %w", id, err)
	}
	c.Builtin, c.CreatedAt = builtin == 1, fromNanos(at)
	return c, nil
}

// Cause returns one cause by id.
func (s *Store) Cause(ctx context.Context, id string) (Cause, error) {
	c, err := getCause(ctx, s.r, id)
	if err != nil {
		return Cause{}, fmt.Errorf("store: %w", err)
	}
	return c, nil
}

// Causes returns every cause: the built-in taxonomy first in its order, then
// engineer-created causes by name.
func (s *Store) Causes(ctx context.Context) ([]Cause, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, title, description, builtin, created_by, created_at FROM causes`)
	if err != nil {
		return nil, fmt.Errorf("store: causes: %w", err)
	}
	defer rows.Close()
	var builtin, custom []Cause
	byID := map[string]Cause{}
	for rows.Next() {
		var c Cause
		var b int
		var at int64
		if err := rows.Scan(&c.ID, &c.Title, &c.Description, &b, &c.CreatedBy, &at); err != nil {
			return nil, fmt.Errorf("store: causes: %w", err)
		}
		c.Builtin, c.CreatedAt = b == 1, fromNanos(at)
		if c.Builtin {
			byID[c.ID] = c
		} else {
			custom = append(custom, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: causes: %w", err)
	}
	for _, id := range taxonomyOrder() {
		if c, ok := byID[id]; ok {
			builtin = append(builtin, c)
		}
	}
	sortCauses(custom)
	return append(builtin, custom...), nil
}
