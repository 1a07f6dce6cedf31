package views

import "context"

// StatusWordIn is a change status or outcome verdict in the request's
// language; an unknown value is shown as stored.
func StatusWordIn(ctx context.Context, s string) string {
	switch s {
	case "proposed":
		return T(ctx, "change.st_proposed")
	case "sent":
		return T(ctx, "change.st_sent")
	case "applied":
		return T(ctx, "change.st_applied")
	case "rolled_back":
		return T(ctx, "change.st_rolled_back")
	case "expected":
		return T(ctx, "change.st_expected")
	case "not_expected":
		return T(ctx, "change.st_not_expected")
	case "inconclusive":
		return T(ctx, "change.st_inconclusive")
	}
	return StatusWord(s)
}

// DeliveryIn describes the webhook delivery of a change request.
func (v ChangeView) DeliveryIn(ctx context.Context) string {
	n := len(v.Attempts)
	switch v.Row.Delivery {
	case "none":
		if v.Webhook {
			return T(ctx, "change.not_sent")
		}
		return T(ctx, "change.no_webhook")
	case "pending":
		return T(ctx, "change.pending", n)
	case "delivered":
		return T(ctx, "change.delivered_after", n)
	case "failed":
		return T(ctx, "change.failed_after", n)
	}
	return v.Row.Delivery
}
