package store

import (
	"context"
	"fmt"
	"math"
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

// tallyRows is one row per (day, diagnosed cause, true cause, verdict,
// engine version) with its count of current labels, from two sources: the
// label_tally table for whole UTC days inside the filter, and the labels
// themselves for the partial days at its edges. A filter without bounds
// reads the tally alone.
const tallyRows = `
	SELECT date(day * 86400, 'unixepoch', 'weekday 0', '-6 days') AS week,
		diagnosed_cause, true_cause, correct, engine_version, n
	FROM label_tally WHERE n > 0 AND day >= ? AND day < ?
	UNION ALL
	SELECT date(i.opened_at / 1000000000, 'unixepoch', 'weekday 0', '-6 days'),
		l.diagnosed_cause, l.true_cause, l.verdict = 'correct', l.engine_version, 1
	FROM incidents i JOIN labels l ON l.id = i.label_id
	WHERE i.verdict IN ('correct', 'wrong')
		AND ((i.opened_at >= ? AND i.opened_at < ?) OR (i.opened_at >= ? AND i.opened_at < ?))`

const dayNanos = int64(24 * time.Hour)

// tallyArgs splits [from, to) into the whole UTC days the tally answers
// and the partial days at the edges, read from the labels.
func tallyArgs(from, to int64) []any {
	firstDay, endDay := int64(math.MinInt64)/dayNanos, int64(math.MaxInt64)/dayNanos+1
	var left, right [2]int64 // [from, to) in nanoseconds; zero is empty
	if from != math.MinInt64 {
		firstDay = ceilDiv(from, dayNanos)
		left = [2]int64{from, firstDay * dayNanos}
	}
	if to != math.MaxInt64 {
		endDay = floorDiv(to, dayNanos)
		right = [2]int64{endDay * dayNanos, to}
	}
	if firstDay >= endDay { // within one day: labels only
		return []any{0, 0, from, to, 0, 0}
	}
	return []any{firstDay, endDay, left[0], left[1], right[0], right[1]}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// Accuracy computes the share of correct diagnoses overall, per diagnosed
// cause, per engine version and per week, and the confusion matrix, from
// the label tally (plus the labels of partial days at the filter's edges).
func (s *Store) Accuracy(ctx context.Context, f AccuracyFilter) (Accuracy, error) {
	from, to := f.bounds()
	rows, err := s.r.QueryContext(ctx, `
		SELECT diagnosed_cause, true_cause, correct, engine_version, week, sum(n)
		FROM (`+tallyRows+`)
		GROUP BY 1, 2, 3, 4, 5`, tallyArgs(from, to)...)
	if err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy: %w", err)
	}
	defer rows.Close()
	a := Accuracy{Overall: Tally{Key: "all"}}
	byCause, byEngine, byWeek := map[string]*Tally{}, map[string]*Tally{}, map[string]*Tally{}
	confusion := map[[2]string]int{}
	add := func(m map[string]*Tally, key string, n int, correct bool) {
		t := m[key]
		if t == nil {
			t = &Tally{Key: key}
			m[key] = t
		}
		t.Reviewed += n
		if correct {
			t.Correct += n
		}
	}
	for rows.Next() {
		var diagnosed, truth, engine, week string
		var correct bool
		var n int
		if err := rows.Scan(&diagnosed, &truth, &correct, &engine, &week, &n); err != nil {
			return Accuracy{}, fmt.Errorf("store: accuracy: %w", err)
		}
		a.Overall.Reviewed += n
		if correct {
			a.Overall.Correct += n
		}
		add(byCause, diagnosed, n, correct)
		add(byEngine, engine, n, correct)
		add(byWeek, week, n, correct)
		confusion[[2]string{diagnosed, truth}] += n
	}
	if err := rows.Err(); err != nil {
		return Accuracy{}, fmt.Errorf("store: accuracy: %w", err)
	}
	flat := func(m map[string]*Tally) []Tally {
		out := make([]Tally, 0, len(m))
		for _, t := range m {
			out = append(out, *t)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out
	}
	a.ByCause, a.ByEngine, a.ByWeek = flat(byCause), flat(byEngine), flat(byWeek)
	sort.SliceStable(a.ByCause, func(i, j int) bool { return a.ByCause[i].Reviewed > a.ByCause[j].Reviewed })
	for k, n := range confusion {
		a.Confusion = append(a.Confusion, ConfusionCell{Diagnosed: k[0], True: k[1], Count: n})
	}
	sort.Slice(a.Confusion, func(i, j int) bool {
		x, y := a.Confusion[i], a.Confusion[j]
		if x.Count != y.Count {
			return x.Count > y.Count
		}
		if x.Diagnosed != y.Diagnosed {
			return x.Diagnosed < y.Diagnosed
		}
		return x.True < y.True
	})
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
		SELECT diagnosed_cause, true_cause, sum(n) FROM label_tally WHERE n > 0 GROUP BY 1, 2`)
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
