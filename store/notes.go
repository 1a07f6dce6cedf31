package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// NewNote is a note to add to an incident's timeline.
type NewNote struct {
	IncidentID int64
	Author     string
	Body       string // 1..MaxNoteBytes bytes of UTF-8
	At         time.Time
}

// Note is one stored note.
type Note struct {
	ID         int64     `json:"id"`
	IncidentID int64     `json:"incident_id"`
	Author     string    `json:"author"`
	At         time.Time `json:"at"`
	Body       string    `json:"body"`
}

// AddNote appends a note to an incident; notes are searchable at once.
func (s *Store) AddNote(ctx context.Context, n NewNote) (Note, error) {
	switch {
	case strings.TrimSpace(n.Body) == "":
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, invalidf("the note is empty"))
	case len(n.Body) > MaxNoteBytes:
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, invalidf("the note is %d bytes, the limit is %d", len(n.Body), MaxNoteBytes))
	case !utf8.ValidString(n.Body):
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, invalidf("the note is not valid UTF-8"))
	case strings.ContainsRune(n.Body, 0) || strings.ContainsRune(n.Author, 0):
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, invalidf("the note or author contains a NUL character"))
	case strings.TrimSpace(n.Author) == "" || len(n.Author) > MaxNameBytes:
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, invalidf("author is empty or too long"))
	}
	if n.At.IsZero() {
		n.At = time.Now()
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return Note{}, fmt.Errorf("store: note on incident %d: begin: %w", n.IncidentID, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO notes (incident_id, author, created_at, body) VALUES (?, ?, ?, ?) RETURNING id`,
		n.IncidentID, n.Author, nanos(n.At), n.Body).Scan(&id)
	if isForeignKey(err) {
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, ErrNotFound)
	}
	if err != nil {
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, err)
	}
	after := map[string]any{"id": id, "author": n.Author, "body": n.Body}
	if err := audit(ctx, tx, n.At, "note.create", fmt.Sprintf("incident %d", n.IncidentID), nil, after); err != nil {
		return Note{}, fmt.Errorf("store: note on incident %d: %w", n.IncidentID, err)
	}
	if err := tx.Commit(); err != nil {
		return Note{}, fmt.Errorf("store: note on incident %d: commit: %w", n.IncidentID, err)
	}
	return Note{ID: id, IncidentID: n.IncidentID, Author: n.Author, At: n.At.UTC(), Body: n.Body}, nil
}

// Notes returns an incident's notes, oldest first.
func (s *Store) Notes(ctx context.Context, incidentID int64) ([]Note, error) {
	out, err := listNotes(ctx, s.r, incidentID)
	if err != nil {
		return nil, fmt.Errorf("store: notes of incident %d: %w", incidentID, err)
	}
	return out, nil
}

func listNotes(ctx context.Context, q querier, incidentID int64) ([]Note, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT id, incident_id, author, created_at, body FROM notes WHERE incident_id = ? ORDER BY id`, incidentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		var at int64
		if err := rows.Scan(&n.ID, &n.IncidentID, &n.Author, &at, &n.Body); err != nil {
			return nil, err
		}
		n.At = fromNanos(at)
		out = append(out, n)
	}
	return out, rows.Err()
}
