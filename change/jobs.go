package change

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// JobStore is what the background jobs read and write in the archive.
// *store.Store implements it.
type JobStore interface {
	Page(ctx context.Context, id int64) (store.Page, error)
	PendingChanges(ctx context.Context) ([]store.Change, error)
	UnmeasuredChanges(ctx context.Context) ([]store.Change, error)
	RecordDelivery(ctx context.Context, changeID int64, d store.Delivery, final bool) error
	SetChangeOutcome(ctx context.Context, incidentID, id int64, outcome json.RawMessage, verdict string) error
}

// ScopeReader reads the windows of a scope an outcome compares.
type ScopeReader func(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)

// Jobs delivers change requests to the webhook in the background and
// measures the outcome of applied changes once their window has passed.
type Jobs struct {
	Store   JobStore    // required
	Webhook *Webhook    // nil: no outbound delivery
	Capture ScopeReader // nil: no outcomes
	// OutcomeWindow is how long before and after a change its outcome
	// compares; zero means 1 h.
	OutcomeWindow time.Duration
	Logger        *slog.Logger
	Now           func() time.Time

	bg       context.Context
	inflight sync.Map // change id -> struct{}: deliveries under way
}

// Start prepares the jobs: deliveries started later run under bg, so that
// they outlive the request that started them and stop with the server.
func (j *Jobs) Start(bg context.Context) *Jobs {
	if bg == nil {
		bg = context.Background()
	}
	j.bg = bg
	if j.Logger == nil {
		j.Logger = slog.New(slog.DiscardHandler)
	}
	if j.Now == nil {
		j.Now = time.Now
	}
	if j.OutcomeWindow <= 0 {
		j.OutcomeWindow = time.Hour
	}
	return j
}

// Deliver delivers one change request in the background unless a
// delivery of it is already under way, or no webhook is configured.
func (j *Jobs) Deliver(ch store.Change) {
	if j.Webhook == nil {
		return
	}
	if _, busy := j.inflight.LoadOrStore(ch.ID, struct{}{}); busy {
		return
	}
	go func() {
		defer j.inflight.Delete(ch.ID)
		j.deliver(j.bg, ch)
	}()
}

func (j *Jobs) deliver(ctx context.Context, ch store.Change) {
	w := j.Webhook
	// Attempts are numbered across rounds; the webhook counts the
	// current round's.
	done := max(0, len(ch.Attempts)-ch.RoundStart)
	w.Deliver(ctx, ch.UID, ch.Doc, done, func(a Attempt) {
		final := !a.OK && (!a.Retry || a.N >= w.Attempts())
		d := store.Delivery{Attempt: ch.RoundStart + a.N, At: a.At, OK: a.OK, Code: a.Code, Error: a.Error}
		if err := j.Store.RecordDelivery(context.WithoutCancel(ctx), ch.ID, d, final); err != nil {
			j.Logger.ErrorContext(ctx, "changes: record delivery", "change", ch.ID, "err", err)
		}
		j.Logger.InfoContext(ctx, "changes: webhook attempt", "change", ch.UID, "attempt", a.N, "ok", a.OK, "code", a.Code, "err", a.Error)
	})
}

// Run re-tries pending deliveries (left by a restart or a failed round)
// and measures the applied changes whose outcome window has passed, every
// interval until ctx is done.
func (j *Jobs) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if j.Webhook != nil {
			pending, err := j.Store.PendingChanges(ctx)
			if err != nil && ctx.Err() == nil {
				j.Logger.WarnContext(ctx, "changes: pending deliveries", "err", err)
			}
			for _, ch := range pending {
				j.Deliver(ch)
			}
		}
		if _, err := j.MeasureDue(ctx); err != nil && ctx.Err() == nil {
			j.Logger.WarnContext(ctx, "changes: outcomes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// MeasureDue measures every applied change whose outcome window has
// passed and returns how many it measured.
func (j *Jobs) MeasureDue(ctx context.Context) (int, error) {
	if j.Capture == nil {
		return 0, nil
	}
	due, err := j.Store.UnmeasuredChanges(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ch := range due {
		p, err := j.Store.Page(ctx, ch.IncidentID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got, err := j.Measure(ctx, p.Incident.Scope, ch)
		if err != nil {
			errs = append(errs, fmt.Errorf("change %d: %w", ch.ID, err))
			continue
		}
		if len(got.Outcome) > 0 {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// Measure evaluates an applied change's outcome once its window has
// passed, and stores it. A change not yet due comes back unchanged.
func (j *Jobs) Measure(ctx context.Context, scope metrics.Scope, ch store.Change) (store.Change, error) {
	if ch.Status != store.ChangeApplied || ch.AppliedAt.IsZero() || len(ch.Outcome) > 0 || j.Capture == nil {
		return ch, nil
	}
	if j.Now().Before(OutcomeDue(ch.AppliedAt, j.OutcomeWindow)) {
		return ch, nil
	}
	req, err := DecodeRequest(ch.Doc)
	if err != nil {
		return ch, fmt.Errorf("change %d: %w", ch.ID, err)
	}
	o, err := Measure(req, ch.AppliedAt, j.OutcomeWindow, func(ids []string, r metrics.Range) ([]metrics.Series, error) {
		return j.Capture(ctx, scope, ids, r)
	})
	if err != nil {
		return ch, err
	}
	body, err := o.Encode()
	if err != nil {
		return ch, err
	}
	if err := j.Store.SetChangeOutcome(ctx, ch.IncidentID, ch.ID, body, o.Verdict); err != nil {
		return ch, err
	}
	ch.Outcome, ch.Verdict = body, o.Verdict
	return ch, nil
}
