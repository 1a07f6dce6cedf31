package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// TraceRole says what period an attached kernel trace shows.
type TraceRole string

// The trace roles.
const (
	// TraceIncident is a trace of the slow period the incident is about.
	TraceIncident TraceRole = "incident"
	// TraceBaseline is a trace of a healthy period, to compare with.
	TraceBaseline TraceRole = "baseline"
)

// Valid reports whether r is one of the trace roles.
func (r TraceRole) Valid() bool { return r == TraceIncident || r == TraceBaseline }

// Trace limits.
const (
	// MaxTraceSummaryBytes bounds the summary JSON of one trace. A summary
	// holds a fixed number of kernels and timeline lanes, so a real one
	// stays far below this.
	MaxTraceSummaryBytes = 4 << 20
	// MaxTracesPerIncident bounds how many traces one incident keeps.
	MaxTracesPerIncident = 32
)

// NewTrace is a parsed kernel trace to attach to an incident. Only its
// summary is stored, never the uploaded file.
type NewTrace struct {
	IncidentID int64
	Role       TraceRole
	Name       string // the uploaded file's name, 1..MaxNameBytes bytes of UTF-8
	Kind       string // the file format, e.g. "chrome", "chrome+gzip", "nsight"
	Size       int64  // bytes uploaded
	UploadedAt time.Time
	// Summary is the trace summary as JSON (traces.Summary); the store
	// keeps it opaque and returns it byte for byte.
	Summary json.RawMessage
}

// Trace is one stored trace with its summary.
type Trace struct {
	ID         int64           `json:"id"`
	IncidentID int64           `json:"incident_id"`
	Role       TraceRole       `json:"role"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	Size       int64           `json:"size"`
	UploadedAt time.Time       `json:"uploaded_at"`
	Summary    json.RawMessage `json:"summary"`
}

func (t NewTrace) problems() []string {
	var p []string
	if !t.Role.Valid() {
		p = append(p, fmt.Sprintf("role %q is not %q or %q", t.Role, TraceIncident, TraceBaseline))
	}
	if strings.TrimSpace(t.Name) == "" || len(t.Name) > MaxNameBytes || !utf8.ValidString(t.Name) {
		p = append(p, fmt.Sprintf("the name must be 1 to %d bytes of UTF-8", MaxNameBytes))
	}
	if strings.TrimSpace(t.Kind) == "" || len(t.Kind) > MaxNameBytes {
		p = append(p, "the kind is empty or too long")
	}
	if t.Size < 0 {
		p = append(p, "the size is negative")
	}
	switch {
	case len(t.Summary) == 0:
		p = append(p, "the summary is empty")
	case len(t.Summary) > MaxTraceSummaryBytes:
		p = append(p, fmt.Sprintf("the summary is %d bytes, the limit is %d", len(t.Summary), MaxTraceSummaryBytes))
	case !json.Valid(t.Summary):
		p = append(p, "the summary is not JSON")
	}
	return p
}

// AddTrace attaches a trace summary to an incident. It returns ErrNotFound
// when the incident does not exist and ErrInvalid for a bad trace or when
// the incident already holds MaxTracesPerIncident traces.
func (s *Store) AddTrace(ctx context.Context, t NewTrace) (Trace, error) {
	if p := t.problems(); len(p) > 0 {
		return Trace{}, fmt.Errorf("store: trace on incident %d: %w", t.IncidentID, invalidf("%s", strings.Join(p, "; ")))
	}
	if t.UploadedAt.IsZero() {
		t.UploadedAt = time.Now()
	}
	blob, err := compress(t.Summary)
	if err != nil {
		return Trace{}, fmt.Errorf("store: trace on incident %d: compress summary: %w", t.IncidentID, err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Trace{}, fmt.Errorf("store: trace on incident %d: begin: %w", t.IncidentID, err)
	}
	defer tx.Rollback()
	var n int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM traces WHERE incident_id = ?`, t.IncidentID).Scan(&n)
	if err != nil {
		return Trace{}, fmt.Errorf("store: trace on incident %d: count: %w", t.IncidentID, err)
	}
	if n >= MaxTracesPerIncident {
		return Trace{}, fmt.Errorf("store: trace on incident %d: %w", t.IncidentID, invalidf("the incident already has %d traces, the limit", n))
	}
	var id int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO traces (incident_id, role, name, kind, size, uploaded_at, summary)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		t.IncidentID, string(t.Role), t.Name, t.Kind, t.Size, nanos(t.UploadedAt), blob).Scan(&id)
	if isForeignKey(err) {
		return Trace{}, fmt.Errorf("store: trace on incident %d: %w", t.IncidentID, ErrNotFound)
	}
	if err != nil {
		return Trace{}, fmt.Errorf("store: trace on incident %d: %w", t.IncidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return Trace{}, fmt.Errorf("store: trace on incident %d: commit: %w", t.IncidentID, err)
	}
	return Trace{
		ID: id, IncidentID: t.IncidentID, Role: t.Role, Name: t.Name, Kind: t.Kind, Size: t.Size,
		UploadedAt: t.UploadedAt.UTC(), Summary: t.Summary,
	}, nil
}

// Traces returns an incident's traces with their summaries, oldest first.
// An incident without traces (or an unknown one) has none.
func (s *Store) Traces(ctx context.Context, incidentID int64) ([]Trace, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT id, incident_id, role, name, kind, size, uploaded_at, summary
		FROM traces WHERE incident_id = ? ORDER BY id`, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: traces of incident %d: %w", incidentID, err)
	}
	defer rows.Close()
	var out []Trace
	for rows.Next() {
		var t Trace
		var role string
		var at int64
		var blob []byte
		if err := rows.Scan(&t.ID, &t.IncidentID, &role, &t.Name, &t.Kind, &t.Size, &at, &blob); err != nil {
			return nil, fmt.Errorf("store: traces of incident %d: %w", incidentID, err)
		}
		t.Role, t.UploadedAt = TraceRole(role), fromNanos(at)
		var raw json.RawMessage
		if err := unpackJSON(blob, &raw); err != nil {
			return nil, fmt.Errorf("store: trace %d of incident %d: summary: %w", t.ID, incidentID, err)
		}
		t.Summary = raw
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: traces of incident %d: %w", incidentID, err)
	}
	return out, nil
}

// DeleteTrace removes one trace of an incident. It returns ErrNotFound when
// the incident has no trace with that id.
func (s *Store) DeleteTrace(ctx context.Context, incidentID, id int64) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM traces WHERE id = ? AND incident_id = ?`, id, incidentID)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("store: delete trace %d of incident %d: %w", id, incidentID, err)
	}
	return nil
}
