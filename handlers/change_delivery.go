package handlers

import (
	"context"
	"time"

	"github.com/casebook/casebook/change"
	"github.com/casebook/casebook/store"
)

// startDelivery delivers one change request in the background unless a
// delivery of it is already under way.
func (h *Changes) startDelivery(ch store.Change) {
	if _, busy := h.inflight.LoadOrStore(ch.ID, struct{}{}); busy {
		return
	}
	go func() {
		defer h.inflight.Delete(ch.ID)
		h.deliver(h.bg, ch)
	}()
}

func (h *Changes) deliver(ctx context.Context, ch store.Change) {
	w := h.d.Webhook
	// Attempts are numbered across rounds; the webhook counts the
	// current round's.
	done := max(0, len(ch.Attempts)-ch.RoundStart)
	w.Deliver(ctx, ch.UID, ch.Doc, done, func(a change.Attempt) {
		final := !a.OK && (!a.Retry || a.N >= w.Attempts())
		d := store.Delivery{Attempt: ch.RoundStart + a.N, At: a.At, OK: a.OK, Code: a.Code, Error: a.Error}
		if err := h.d.Store.RecordDelivery(context.WithoutCancel(ctx), ch.ID, d, final); err != nil {
			h.d.Logger.ErrorContext(ctx, "changes: record delivery", "change", ch.ID, "err", err)
		}
		h.d.Logger.InfoContext(ctx, "changes: webhook attempt", "change", ch.UID, "attempt", a.N, "ok", a.OK, "code", a.Code, "err", a.Error)
	})
}

// Run re-tries pending deliveries (left by a restart or a failed round)
// and measures the applied changes whose outcome window has passed, every
// interval until ctx is done.
func (h *Changes) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if h.d.Webhook != nil {
			pending, err := h.d.Store.PendingChanges(ctx)
			if err != nil && ctx.Err() == nil {
				h.d.Logger.WarnContext(ctx, "changes: pending deliveries", "err", err)
			}
			for _, ch := range pending {
				h.startDelivery(ch)
			}
		}
		if _, err := h.MeasureDue(ctx); err != nil && ctx.Err() == nil {
			h.d.Logger.WarnContext(ctx, "changes: outcomes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
