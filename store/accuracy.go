package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Tally counts reviewed diagnoses and how many were correct.
type Tally struct {
	Key      string `json:"key"`
	Reviewed int    `json:"reviewed"`
	Correct  int    `json:"correct"`
}

// Share returns Correct/Reviewed, or 0 when nothing was reviewed.
func (t Tally) Share() float64 {
	if t.Reviewed == 0 {
		return 0
	}
	return float64(t.Correct) / float64(t.Reviewed)
}

// ConfusionCell counts current labels with this diagnosed and true cause.
type ConfusionCell struct {
	Diagnosed string `json:"diagnosed"`
	True      string `json:"true"`
	Count     int    `json:"count"`
}

// Accuracy summarises the current labels: one label per reviewed incident,
// judging the diagnosis that was current when it was given.
type Accuracy struct {
	Overall   Tally           `json:"overall"`
	ByCause   []Tally         `json:"by_cause"`  // keyed by diagnosed cause, most reviewed first
	ByEngine  []Tally         `json:"by_engine"` // keyed by engine version, by version
	ByWeek    []Tally         `json:"by_week"`   // keyed by the Monday (YYYY-MM-DD, UTC) of the week the incident opened, oldest first
	Confusion []ConfusionCell `json:"confusion"` // diagnosed vs true cause, largest first
}

// AccuracyFilter restricts the accuracy queries to incidents opened in
// [From, To); zero bounds are open.
type AccuracyFilter struct {
	From, To time.Time
}

func (f AccuracyFilter) bounds() (int64, int64) {
	from, to := int64(-1<<63), int64(1<<63-1)
	if !f.From.IsZero() {
		from = nanos(f.From)
	}
	if !f.To.IsZero() {
		to = nanos(f.To)
	}
	return from, to
}

// reviewed is the common join: current label of each reviewed incident and
// the diagnosis it judged.
const reviewed = `
	FROM incidents i
	JOIN labels l ON l.id = i.label_id
	LEFT JOIN diagnoses d ON d.id = l.diagnosis_id
	WHERE i.opened_at >= ? AND i.opened_at < ?`

// Accuracy computes the share of correct diagnoses overall, per diagnosed
// cause, per engine version and per week, and the confusion matrix.
func (s *Store) Accuracy(ctx context.Context, f AccuracyFilter) (Accuracy, error) {
	from, to := f.bounds()
	var a Accuracy
	var err error
	tallies := func(key string) ([]Tally, error) {
		rows, err := s.r.QueryContext(ctx, `
			SELECT `+key+` AS k, count(*), sum(l.verdict = 'correct')`+reviewed+`
			GROUP BY k ORDER BY k`, from, to)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []Tally
		for rows.Next() {
			var t Tally
			if err := rows.Scan(&t.Key, &t.Reviewed, &t.Correct); err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, rows.Err()
	}
	all, err := tallies(`''`)
	if err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy overall: %w", err)
	}
	if len(all) == 1 {
		a.Overall = all[0]
	}
	a.Overall.Key = "all"
	if a.ByCause, err = tallies(`coalesce(d.root_cause, i.root_cause)`); err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy by cause: %w", err)
	}
	sort.SliceStable(a.ByCause, func(i, j int) bool { return a.ByCause[i].Reviewed > a.ByCause[j].Reviewed })
	if a.ByEngine, err = tallies(`coalesce(d.engine_version, '')`); err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy by engine version: %w", err)
	}
	if a.ByWeek, err = tallies(`date(i.opened_at / 1000000000, 'unixepoch', 'weekday 0', '-6 days')`); err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy by week: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT coalesce(d.root_cause, i.root_cause) AS dc, l.true_cause, count(*) AS n`+reviewed+`
		GROUP BY dc, l.true_cause ORDER BY n DESC, dc, l.true_cause`, from, to)
	if err != nil {
		return Accuracy{}, fmt.Errorf("store: confusion matrix: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c ConfusionCell
		if err := rows.Scan(&c.Diagnosed, &c.True, &c.Count); err != nil {
			return Accuracy{}, fmt.Errorf("store: confusion matrix: %w", err)
		}
		a.Confusion = append(a.Confusion, c)
	}
	if err := rows.Err(); err != nil {
		return Accuracy{}, fmt.Errorf("store: confusion matrix: %w", err)
	}
	return a, nil
}

// CauseStats is the knowledge-base view of one cause, from current labels.
type CauseStats struct {
	Cause Cause `json:"cause"`
	// Diagnosed counts reviewed incidents diagnosed as this cause;
	// Confirmed counts those whose true cause is it too (true positives);
	// Actual counts reviewed incidents whose true cause is this cause.
	Diagnosed int `json:"diagnosed"`
	Confirmed int `json:"confirmed"`
	Actual    int `json:"actual"`
	// Cases are the most recent incidents whose true cause is this cause.
	Cases []Summary `json:"cases,omitempty"`
}

// Precision is Confirmed/Diagnosed: how often a diagnosis of this cause was
// right. It is 0 when nothing diagnosed as this cause was reviewed.
func (c CauseStats) Precision() float64 {
	if c.Diagnosed == 0 {
		return 0
	}
	return float64(c.Confirmed) / float64(c.Diagnosed)
}

// Recall is Confirmed/Actual: how often incidents truly of this cause were
// diagnosed as it. It is 0 when no reviewed incident had this cause.
func (c CauseStats) Recall() float64 {
	if c.Actual == 0 {
		return 0
	}
	return float64(c.Confirmed) / float64(c.Actual)
}

// CauseStats returns one cause's counts and up to cases of its confirmed
// incidents, newest first.
func (s *Store) CauseStats(ctx context.Context, id string, cases int) (CauseStats, error) {
	c, err := getCause(ctx, s.r, id)
	if err != nil {
		return CauseStats{}, fmt.Errorf("store: cause stats: %w", err)
	}
	all, err := s.causeCounts(ctx)
	if err != nil {
		return CauseStats{}, err
	}
	st := all[id]
	st.Cause = c
	if cases > 0 {
		rows, err := s.r.QueryContext(ctx, `
			SELECT `+summaryColumns+` FROM incidents i
			WHERE i.true_cause = ? ORDER BY i.opened_at DESC, i.id DESC LIMIT ?`, id, cases)
		if err != nil {
			return CauseStats{}, fmt.Errorf("store: cases of cause %s: %w", id, err)
		}
		defer rows.Close()
		for rows.Next() {
			sum, err := scanSummary(rows)
			if err != nil {
				return CauseStats{}, fmt.Errorf("store: cases of cause %s: %w", id, err)
			}
			st.Cases = append(st.Cases, sum)
		}
		if err := rows.Err(); err != nil {
			return CauseStats{}, fmt.Errorf("store: cases of cause %s: %w", id, err)
		}
	}
	return st, nil
}

// AllCauseStats returns the counts of every cause (without cases), in the
// order of Causes.
func (s *Store) AllCauseStats(ctx context.Context) ([]CauseStats, error) {
	causes, err := s.Causes(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := s.causeCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CauseStats, len(causes))
	for i, c := range causes {
		out[i] = counts[c.ID]
		out[i].Cause = c
	}
	return out, nil
}

func (s *Store) causeCounts(ctx context.Context) (map[string]CauseStats, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT coalesce(d.root_cause, i.root_cause) AS dc, l.true_cause, count(*)`+reviewed+`
		GROUP BY dc, l.true_cause`, int64(-1<<63), int64(1<<63-1))
	if err != nil {
		return nil, fmt.Errorf("store: cause counts: %w", err)
	}
	defer rows.Close()
	out := map[string]CauseStats{}
	for rows.Next() {
		var dc, tc string
		var n int
		if err := rows.Scan(&dc, &tc, &n); err != nil {
			return nil, fmt.Errorf("store: cause counts: %w", err)
		}
		d := out[dc]
		d.Diagnosed += n
		if dc == tc {
			d.Confirmed += n
		}
		out[dc] = d
		t := out[tc]
		t.Actual += n
		out[tc] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: cause counts: %w", err)
	}
	return out, nil
}

func taxonomyOrder() []string {
	ids := make([]string, len(metrics.Causes))
	for i, c := range metrics.Causes {
		ids[i] = c.ID
	}
	return ids
}

func sortCauses(cs []Cause) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Title < cs[j].Title })
}
