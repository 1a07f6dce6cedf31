package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/casebook/casebook/metrics"
)

// TriggerKind says what opened an incident.
type TriggerKind string

// Trigger kinds.
const (
	TriggerAlertmanager TriggerKind = "alertmanager"
	TriggerManual       TriggerKind = "manual"
	TriggerDetector     TriggerKind = "detector"
)

// Valid reports whether k is one of the known trigger kinds.
func (k TriggerKind) Valid() bool {
	return k == TriggerAlertmanager || k == TriggerManual || k == TriggerDetector
}

// AlertState is the state of the alert that opened an incident.
type AlertState string

// Alert states.
const (
	AlertFiring   AlertState = "firing"
	AlertResolved AlertState = "resolved"
)

// Alert identifies the Alertmanager alert behind an incident. Fingerprint
// plus StartsAt is unique: a webhook retry finds the incident it opened.
type Alert struct {
	Fingerprint string     `json:"fingerprint"`
	StartsAt    time.Time  `json:"starts_at"`
	State       AlertState `json:"state"`
	ResolvedAt  time.Time  `json:"resolved_at,omitzero"`
}

// Limits on stored text.
const (
	MaxTitleBytes  = 512
	MaxNoteBytes   = 8192
	MaxNameBytes   = 256
	MaxDetailBytes = 64 << 10
)

// NewIncident is what opening an incident stores.
type NewIncident struct {
	Title         string
	Scope         metrics.Scope
	Trigger       TriggerKind
	TriggerDetail json.RawMessage // e.g. the alert's labels and annotations; nil means {}
	Alert         *Alert          // set only for Alertmanager triggers
	OpenedAt      time.Time
	WindowStart   time.Time
	WindowEnd     time.Time
	Severity      string
	Snapshot      metrics.Snapshot
	Windows       []metrics.Series // the archived chart windows, all four dimensions
}

// DiagnosisRecord is one diagnosis as the store keeps it: the JSON body as
// the engine produced it plus the columns queries need.
type DiagnosisRecord struct {
	EngineVersion string          `json:"engine_version"`
	CreatedAt     time.Time       `json:"created_at"`
	RootCause     string          `json:"root_cause"`
	Confidence    float64         `json:"confidence"`
	Severity      string          `json:"severity"`
	Body          json.RawMessage `json:"body"`
	// Text is the evidence text indexed for search. When empty, the store
	// collects the body's "title" and "evidence[].text" fields.
	Text string `json:"-"`
}

// Diagnosis is a stored diagnosis of an incident.
type Diagnosis struct {
	ID         int64 `json:"id"`
	IncidentID int64 `json:"incident_id"`
	DiagnosisRecord
}

// Verdict is a reviewer's judgement of a diagnosis.
type Verdict string

// Verdicts. Unreviewed incidents have the empty verdict.
const (
	VerdictNone    Verdict = ""
	VerdictCorrect Verdict = "correct"
	VerdictWrong   Verdict = "wrong"
)

// Summary is an incident without its evidence blobs: what lists show.
type Summary struct {
	ID          int64         `json:"id"`
	Title       string        `json:"title"`
	Scope       metrics.Scope `json:"scope"`
	Trigger     TriggerKind   `json:"trigger"`
	Alert       *Alert        `json:"alert,omitempty"`
	OpenedAt    time.Time     `json:"opened_at"`
	Severity    string        `json:"severity"`
	DiagnosisID int64         `json:"diagnosis_id,omitempty"`
	RootCause   string        `json:"root_cause"` // of the current diagnosis
	Confidence  float64       `json:"confidence"`
	Verdict     Verdict       `json:"verdict"`              // of the current label
	TrueCause   string        `json:"true_cause,omitempty"` // of the current label
	// Cause is the best knowledge of the cause: TrueCause when reviewed,
	// else RootCause.
	Cause string `json:"cause"`
}

// Incident is one archived incident with its evidence.
type Incident struct {
	Summary
	TriggerDetail json.RawMessage  `json:"trigger_detail"`
	WindowStart   time.Time        `json:"window_start"`
	WindowEnd     time.Time        `json:"window_end"`
	Snapshot      metrics.Snapshot `json:"snapshot"`
	Windows       []metrics.Series `json:"windows"`
}

func (in *NewIncident) validate() error {
	var problems []string
	if strings.TrimSpace(in.Title) == "" {
		problems = append(problems, "title is empty")
	}
	if len(in.Title) > MaxTitleBytes {
		problems = append(problems, fmt.Sprintf("title is longer than %d bytes", MaxTitleBytes))
	}
	if !utf8.ValidString(in.Title) {
		problems = append(problems, "title is not valid UTF-8")
	}
	if in.Scope.Model == "" {
		problems = append(problems, "scope model is empty")
	}
	if len(in.Scope.Model) > MaxNameBytes || len(in.Scope.Instance) > MaxNameBytes {
		problems = append(problems, fmt.Sprintf("scope names are limited to %d bytes", MaxNameBytes))
	}
	if !utf8.ValidString(in.Scope.Model) || !utf8.ValidString(in.Scope.Instance) || !utf8.ValidString(in.Severity) {
		problems = append(problems, "scope names and severity must be valid UTF-8")
	}
	if !in.Trigger.Valid() {
		problems = append(problems, fmt.Sprintf("trigger kind %q is not alertmanager, manual or detector", in.Trigger))
	}
	if in.Trigger == TriggerAlertmanager && in.Alert == nil {
		problems = append(problems, "an alertmanager incident needs its alert")
	}
	if in.Alert != nil {
		if in.Alert.Fingerprint == "" || len(in.Alert.Fingerprint) > MaxNameBytes {
			problems = append(problems, "alert fingerprint is empty or too long")
		}
		if in.Alert.StartsAt.IsZero() {
			problems = append(problems, "alert startsAt is missing")
		}
		if in.Alert.State != AlertFiring && in.Alert.State != AlertResolved {
			problems = append(problems, fmt.Sprintf("alert state %q is not firing or resolved", in.Alert.State))
		}
	}
	if in.OpenedAt.IsZero() {
		problems = append(problems, "opened time is missing")
	}
	if in.WindowEnd.Before(in.WindowStart) {
		problems = append(problems, "window ends before it starts")
	}
	if len(in.TriggerDetail) > MaxDetailBytes {
		problems = append(problems, fmt.Sprintf("trigger detail is longer than %d bytes", MaxDetailBytes))
	} else if len(in.TriggerDetail) > 0 && !json.Valid(in.TriggerDetail) {
		problems = append(problems, "trigger detail is not valid JSON")
	}
	if len(problems) > 0 {
		return invalidf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func (d *DiagnosisRecord) validate() error {
	var problems []string
	if d.RootCause == "" || len(d.RootCause) > MaxNameBytes {
		problems = append(problems, "root cause is empty or too long")
	}
	if d.EngineVersion == "" || len(d.EngineVersion) > MaxNameBytes {
		problems = append(problems, "engine version is empty or too long")
	}
	if !(d.Confidence >= 0 && d.Confidence <= 1) {
		problems = append(problems, fmt.Sprintf("confidence %g is outside 0..1", d.Confidence))
	}
	if len(d.Body) == 0 || !json.Valid(d.Body) {
		problems = append(problems, "body is not valid JSON")
	}
	if len(problems) > 0 {
		return invalidf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// searchText returns the text indexed for a diagnosis.
func (d *DiagnosisRecord) searchText() string {
	if d.Text != "" {
		return d.Text
	}
	var body struct {
		Title    string `json:"title"`
		Evidence []struct {
			Text string `json:"text"`
		} `json:"evidence"`
	}
	if json.Unmarshal(d.Body, &body) != nil {
		return ""
	}
	parts := []string{d.RootCause, body.Title}
	for _, e := range body.Evidence {
		parts = append(parts, e.Text)
	}
	return strings.Join(parts, "\n")
}

// OpenIncident stores a new incident and its first diagnosis in one
// transaction. When the incident comes from an alert already archived (same
// fingerprint and startsAt, as on a webhook retry), nothing is written and
// the existing incident is returned with created false.
//
// Concurrent calls are group-committed: one writer runs every waiting
// incident in a single transaction (each in its own savepoint, so one
// failure does not affect the others) and one fsync acknowledges them all.
// The result is returned only after that commit.
func (s *Store) OpenIncident(ctx context.Context, in NewIncident, d DiagnosisRecord) (Incident, bool, error) {
	if err := in.validate(); err != nil {
		return Incident{}, false, fmt.Errorf("store: open incident: %w", err)
	}
	if err := d.validate(); err != nil {
		return Incident{}, false, fmt.Errorf("store: open incident: diagnosis: %w", err)
	}
	p, err := pack(in)
	if err != nil {
		return Incident{}, false, fmt.Errorf("store: open incident: %w", err)
	}
	req := &openRequest{ctx: ctx, in: in, d: d, packed: p, done: make(chan openResult, 1)}
	if err := s.opens.submit(req); err != nil {
		return Incident{}, false, fmt.Errorf("store: open incident: %w", err)
	}
	var res openResult
	select {
	case res = <-req.done:
	case <-ctx.Done():
		return Incident{}, false, fmt.Errorf("store: open incident: %w", ctx.Err())
	}
	if res.err != nil {
		return Incident{}, false, fmt.Errorf("store: open incident: %w", res.err)
	}
	if !res.created {
		inc, err := s.IncidentByAlert(ctx, in.Alert.Fingerprint, in.Alert.StartsAt)
		return inc, false, err
	}
	inc := newIncidentValue(res.id, in, d)
	inc.DiagnosisID = res.diagnosisID
	return inc, true, nil
}

// newIncidentValue is the stored form of a just-opened incident, built
// without reading it back.
func newIncidentValue(id int64, in NewIncident, d DiagnosisRecord) Incident {
	detail := in.TriggerDetail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	inc := Incident{
		Summary: Summary{
			ID: id, Title: in.Title, Scope: in.Scope, Trigger: in.Trigger,
			OpenedAt: in.OpenedAt.UTC(), Severity: in.Severity,
			RootCause: d.RootCause, Confidence: d.Confidence, Cause: d.RootCause,
		},
		TriggerDetail: detail,
		WindowStart:   in.WindowStart.UTC(),
		WindowEnd:     in.WindowEnd.UTC(),
		Snapshot:      in.Snapshot,
		Windows:       in.Windows,
	}
	if in.Alert != nil {
		a := *in.Alert
		a.StartsAt, a.ResolvedAt = a.StartsAt.UTC(), a.ResolvedAt.UTC()
		inc.Alert = &a
	}
	return inc
}

// openIncident inserts a validated incident, its evidence and its first
// diagnosis in tx. It returns created false, writing nothing, when the
// alert is already archived.
func openIncident(ctx context.Context, tx execer, in NewIncident, d DiagnosisRecord, p packed) (id, diagnosisID int64, created bool, err error) {
	detail := string(in.TriggerDetail)
	if detail == "" {
		detail = "{}"
	}
	var fp sql.NullString
	var startsAt, resolvedAt sql.NullInt64
	var state sql.NullString
	if in.Alert != nil {
		fp = sql.NullString{String: in.Alert.Fingerprint, Valid: true}
		startsAt = nullNanos(in.Alert.StartsAt)
		state = sql.NullString{String: string(in.Alert.State), Valid: true}
		resolvedAt = nullNanos(in.Alert.ResolvedAt)
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = in.OpenedAt
	}
	res, err := tx.ExecContext(ctx, `
		INSERT INTO incidents (title, model, instance, trigger_kind, trigger_detail,
			alert_fingerprint, alert_starts_at, alert_state, alert_resolved_at,
			opened_at, window_start, window_end, severity)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (alert_fingerprint, alert_starts_at) DO NOTHING`,
		in.Title, in.Scope.Model, in.Scope.Instance, string(in.Trigger), detail,
		fp, startsAt, state, resolvedAt,
		nanos(in.OpenedAt), nanos(in.WindowStart), nanos(in.WindowEnd), in.Severity)
	if err != nil {
		return 0, 0, false, fmt.Errorf("insert: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, 0, false, err
	}
	if n == 0 {
		return 0, 0, false, nil
	}
	id, err = res.LastInsertId()
	if err != nil {
		return 0, 0, false, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO incident_evidence (incident_id, snapshot, windows) VALUES (?, ?, ?)`, id, p.snapshot, p.windows)
	if err != nil {
		return 0, 0, false, fmt.Errorf("insert evidence: %w", err)
	}
	diag, err := addDiagnosis(ctx, tx, id, d)
	if err != nil {
		return 0, 0, false, err
	}
	return id, diag.ID, true, nil
}

// AddDiagnosis appends a diagnosis to an incident and makes it the current
// one; earlier diagnoses are kept.
func (s *Store) AddDiagnosis(ctx context.Context, incidentID int64, d DiagnosisRecord) (Diagnosis, error) {
	if err := d.validate(); err != nil {
		return Diagnosis{}, fmt.Errorf("store: add diagnosis to incident %d: %w", incidentID, err)
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Diagnosis{}, fmt.Errorf("store: add diagnosis: begin: %w", err)
	}
	defer tx.Rollback()
	out, err := addDiagnosis(ctx, tx, incidentID, d)
	if err != nil {
		return Diagnosis{}, fmt.Errorf("store: add diagnosis to incident %d: %w", incidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return Diagnosis{}, fmt.Errorf("store: add diagnosis: commit: %w", err)
	}
	return out, nil
}

func addDiagnosis(ctx context.Context, tx execer, incidentID int64, d DiagnosisRecord) (Diagnosis, error) {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO diagnoses (incident_id, engine_version, created_at, root_cause, confidence, severity, body, evidence_text)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		incidentID, d.EngineVersion, nanos(d.CreatedAt), d.RootCause, d.Confidence, d.Severity, string(d.Body), d.searchText())
	if isForeignKey(err) {
		return Diagnosis{}, fmt.Errorf("incident %d: %w", incidentID, ErrNotFound)
	}
	if err != nil {
		return Diagnosis{}, fmt.Errorf("insert diagnosis: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return Diagnosis{}, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE incidents SET diagnosis_id = ?, root_cause = ?, confidence = ?,
		cause = CASE WHEN verdict = '' THEN ? ELSE cause END WHERE id = ?`,
		id, d.RootCause, d.Confidence, d.RootCause, incidentID)
	if err != nil {
		return Diagnosis{}, fmt.Errorf("update current diagnosis: %w", err)
	}
	d.CreatedAt = d.CreatedAt.UTC()
	return Diagnosis{ID: id, IncidentID: incidentID, DiagnosisRecord: d}, nil
}

const summaryColumns = `i.id, i.title, i.model, i.instance, i.trigger_kind,
	i.alert_fingerprint, i.alert_starts_at, i.alert_state, i.alert_resolved_at,
	i.opened_at, i.severity, i.diagnosis_id, i.root_cause, i.confidence, i.verdict, i.true_cause, i.cause`

type scanner interface{ Scan(dest ...any) error }

func scanSummary(sc scanner, extra ...any) (Summary, error) {
	var (
		s         Summary
		trig      string
		fp, state sql.NullString
		starts    sql.NullInt64
		resolved  sql.NullInt64
		opened    int64
		diagnosis sql.NullInt64
		verdict   string
	)
	dest := append([]any{&s.ID, &s.Title, &s.Scope.Model, &s.Scope.Instance, &trig,
		&fp, &starts, &state, &resolved,
		&opened, &s.Severity, &diagnosis, &s.RootCause, &s.Confidence, &verdict, &s.TrueCause, &s.Cause}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return Summary{}, err
	}
	s.Trigger = TriggerKind(trig)
	s.OpenedAt = fromNanos(opened)
	s.DiagnosisID = diagnosis.Int64
	s.Verdict = Verdict(verdict)
	if fp.Valid {
		s.Alert = &Alert{Fingerprint: fp.String, StartsAt: fromNullNanos(starts), State: AlertState(state.String), ResolvedAt: fromNullNanos(resolved)}
	}
	return s, nil
}

func getIncident(ctx context.Context, q querier, where string, args ...any) (Incident, error) {
	var (
		inc           Incident
		detail        string
		wstart, wend  int64
		snap, windows []byte
	)
	row := q.QueryRowContext(ctx, `SELECT `+summaryColumns+`, i.trigger_detail, i.window_start, i.window_end, e.snapshot, e.windows
		FROM incidents i JOIN incident_evidence e ON e.incident_id = i.id WHERE `+where, args...)
	sum, err := scanSummary(row, &detail, &wstart, &wend, &snap, &windows)
	if errors.Is(err, sql.ErrNoRows) {
		return Incident{}, ErrNotFound
	}
	if err != nil {
		return Incident{}, err
	}
	inc.Summary = sum
	inc.TriggerDetail = json.RawMessage(detail)
	inc.WindowStart, inc.WindowEnd = fromNanos(wstart), fromNanos(wend)
	if inc.Snapshot, err = unpackSnapshot(snap); err != nil {
		return Incident{}, fmt.Errorf("snapshot: %w", err)
	}
	if inc.Windows, err = unpackWindows(windows); err != nil {
		return Incident{}, fmt.Errorf("windows: %w", err)
	}
	return inc, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Incident returns one incident with its evidence.
func (s *Store) Incident(ctx context.Context, id int64) (Incident, error) {
	inc, err := getIncident(ctx, s.r, `i.id = ?`, id)
	if err != nil {
		return Incident{}, fmt.Errorf("store: incident %d: %w", id, err)
	}
	return inc, nil
}

// IncidentByAlert returns the incident opened by the alert with this
// fingerprint and start time.
func (s *Store) IncidentByAlert(ctx context.Context, fingerprint string, startsAt time.Time) (Incident, error) {
	inc, err := getIncident(ctx, s.r, `i.alert_fingerprint = ? AND i.alert_starts_at = ?`, fingerprint, nanos(startsAt))
	if err != nil {
		return Incident{}, fmt.Errorf("store: incident for alert %s at %s: %w", fingerprint, startsAt.UTC().Format(time.RFC3339Nano), err)
	}
	return inc, nil
}

// ResolveAlert marks the alert of the incident it opened as resolved at
// resolvedAt and returns that incident's id. Resolving twice keeps the first
// resolve time.
func (s *Store) ResolveAlert(ctx context.Context, fingerprint string, startsAt, resolvedAt time.Time) (int64, error) {
	var id int64
	err := s.w.QueryRowContext(ctx, `
		UPDATE incidents SET alert_state = 'resolved', alert_resolved_at = coalesce(alert_resolved_at, ?)
		WHERE alert_fingerprint = ? AND alert_starts_at = ?
		RETURNING id`, nanos(resolvedAt), fingerprint, nanos(startsAt)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: resolve alert %s: %w", fingerprint, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("store: resolve alert %s: %w", fingerprint, err)
	}
	return id, nil
}

// Diagnoses returns every diagnosis of an incident, newest first.
func (s *Store) Diagnoses(ctx context.Context, incidentID int64) ([]Diagnosis, error) {
	out, err := listDiagnoses(ctx, s.r, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: diagnoses of incident %d: %w", incidentID, err)
	}
	return out, nil
}

func listDiagnoses(ctx context.Context, q querier, incidentID int64) ([]Diagnosis, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT id, incident_id, engine_version, created_at, root_cause, confidence, severity, body, evidence_text
		FROM diagnoses WHERE incident_id = ? ORDER BY id DESC`, incidentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Diagnosis
	for rows.Next() {
		var d Diagnosis
		var created int64
		var body string
		if err := rows.Scan(&d.ID, &d.IncidentID, &d.EngineVersion, &created, &d.RootCause, &d.Confidence, &d.Severity, &body, &d.Text); err != nil {
			return nil, err
		}
		d.CreatedAt = fromNanos(created)
		d.Body = json.RawMessage(body)
		out = append(out, d)
	}
	return out, rows.Err()
}

// ReplaceWindows replaces an incident's archived chart windows, for filling
// in the minutes after the trigger that had not happened when it opened.
// The snapshot and diagnoses are never rewritten.
func (s *Store) ReplaceWindows(ctx context.Context, id int64, windows []metrics.Series) error {
	packed, err := packWindows(windows)
	if err != nil {
		return fmt.Errorf("store: replace windows of incident %d: encode: %w", id, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE incident_evidence SET windows = ? WHERE incident_id = ?`, packed, id)
	if err != nil {
		return fmt.Errorf("store: replace windows of incident %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("store: replace windows of incident %d: %w", id, ErrNotFound)
	}
	return nil
}
