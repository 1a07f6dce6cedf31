package store

import (
	"context"
	"fmt"
)

// Page is everything the incident page shows, read in one transaction so
// the parts agree with each other.
type Page struct {
	Incident  Incident    `json:"incident"`
	Diagnoses []Diagnosis `json:"diagnoses"` // newest (current) first
	Labels    []Label     `json:"labels"`    // newest (current) first
	Notes     []Note      `json:"notes"`     // oldest first
}

// Page returns an incident with its diagnoses, label history and notes.
func (s *Store) Page(ctx context.Context, id int64) (Page, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return Page{}, fmt.Errorf("store: incident page %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	var p Page
	if p.Incident, err = getIncident(ctx, tx, `i.id = ?`, id); err != nil {
		return Page{}, fmt.Errorf("store: incident page %d: %w", id, err)
	}
	if p.Diagnoses, err = listDiagnoses(ctx, tx, id); err != nil {
		return Page{}, fmt.Errorf("store: incident page %d: diagnoses: %w", id, err)
	}
	if p.Labels, err = listLabels(ctx, tx, id); err != nil {
		return Page{}, fmt.Errorf("store: incident page %d: labels: %w", id, err)
	}
	if p.Notes, err = listNotes(ctx, tx, id); err != nil {
		return Page{}, fmt.Errorf("store: incident page %d: notes: %w", id, err)
	}
	return p, nil
}
