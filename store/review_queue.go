package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// QueueFilter selects the review queue. Zero fields do not filter.
type QueueFilter struct {
	Model string
	// Cause is the diagnosed cause.
	Cause string
	// Since starts the recent window Queue.Recent counts (the last seven
	// days, say); zero counts nothing.
	Since time.Time
	Limit int // default DefaultPageSize, at most MaxPageSize
}

// Queue is the review queue: unreviewed, diagnosed incidents, worst
// severity first and, within a severity, oldest first.
type Queue struct {
	Items []Summary
	// Total counts every incident of the queue under the filter; Recent
	// those opened at or after QueueFilter.Since.
	Total, Recent int
	// Models lists the models that have unreviewed incidents (for the
	// filter), whatever the filter.
	Models []string
}

// ReviewQueue returns the incidents waiting for a review.
func (s *Store) ReviewQueue(ctx context.Context, f QueueFilter) (Queue, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	where := []string{`i.verdict = ''`, `i.diagnosis_id IS NOT NULL`}
	var args []any
	if f.Model != "" {
		where, args = append(where, `i.model = ?`), append(args, f.Model)
	}
	if f.Cause != "" {
		where, args = append(where, `i.root_cause = ?`), append(args, f.Cause)
	}
	cond := strings.Join(where, ` AND `)

	var q Queue
	since := int64(1<<63 - 1) // no window: nothing is recent
	if !f.Since.IsZero() {
		since = nanos(f.Since)
	}
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN i.opened_at >= ? THEN 1 END)
		FROM incidents i WHERE `+cond, append([]any{since}, args...)...).Scan(&q.Total, &q.Recent)
	if err != nil {
		return Queue{}, fmt.Errorf("store: review queue: count: %w", err)
	}

	rows, err := s.r.QueryContext(ctx, `SELECT `+summaryColumns+` FROM incidents i WHERE `+cond+`
		ORDER BY CASE i.severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'info' THEN 2 ELSE 3 END,
			i.opened_at ASC, i.id ASC
		LIMIT ?`, append(args, limit)...)
	if err != nil {
		return Queue{}, fmt.Errorf("store: review queue: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		sum, err := scanSummary(rows)
		if err != nil {
			return Queue{}, fmt.Errorf("store: review queue: %w", err)
		}
		q.Items = append(q.Items, sum)
	}
	if err := rows.Err(); err != nil {
		return Queue{}, fmt.Errorf("store: review queue: %w", err)
	}

	mrows, err := s.r.QueryContext(ctx, `SELECT DISTINCT model FROM incidents
		WHERE verdict = '' AND diagnosis_id IS NOT NULL ORDER BY model`)
	if err != nil {
		return Queue{}, fmt.Errorf("store: review queue: models: %w", err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var m string
		if err := mrows.Scan(&m); err != nil {
			return Queue{}, fmt.Errorf("store: review queue: models: %w", err)
		}
		q.Models = append(q.Models, m)
	}
	if err := mrows.Err(); err != nil {
		return Queue{}, fmt.Errorf("store: review queue: models: %w", err)
	}
	return q, nil
}
