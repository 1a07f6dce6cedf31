package handlers

import (
	"context"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// An alert storm opens many incidents on few scopes at once: Prometheus
// stamps every alert of one rule evaluation with the same start, so a
// hundred alerts on one model would capture the same snapshot and the same
// hour of charts a hundred times. Incidents of one scope whose triggers
// fall in the same second share one capture instead: the first computes
// it, the others wait for it, and it is reused for captureReuse after.
const (
	captureReuse   = 30 * time.Second
	captureTimeout = 30 * time.Second
)

// evidence is what an incident archives from the metric source.
type evidence struct {
	snap       metrics.Snapshot
	snapErr    error
	windows    []metrics.Series
	windowsErr error
}

type captureKey struct {
	scope string
	at    int64 // unix seconds of the trigger
}

type captureCall struct {
	done chan struct{}
	ev   evidence
	at   time.Time // when the capture finished
}

// captures coalesces evidence captures; the zero value is ready.
type captures struct {
	mu    sync.Mutex
	calls map[captureKey]*captureCall
}

// get returns the evidence of scope at `at` (whole seconds), running
// capture at most once per key and reuse period. The result is shared:
// callers must not modify it.
func (c *captures) get(ctx context.Context, scope metrics.Scope, at time.Time, now time.Time, capture func(context.Context) evidence) evidence {
	key := captureKey{scope.String(), at.Unix()}
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[captureKey]*captureCall{}
	}
	for k, call := range c.calls { // drop stale results; the map stays small
		select {
		case <-call.done:
			if now.Sub(call.at) > captureReuse {
				delete(c.calls, k)
			}
		default:
		}
	}
	call, ok := c.calls[key]
	if !ok {
		call = &captureCall{done: make(chan struct{})}
		c.calls[key] = call
	}
	c.mu.Unlock()

	if !ok {
		// The capture outlives the request that started it: others wait
		// on it, so its cancellation must not fail them.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
		call.ev = capture(cctx)
		cancel()
		call.at = now
		close(call.done)
		return call.ev
	}
	select {
	case <-call.done:
		return call.ev
	case <-ctx.Done():
		return evidence{snapErr: ctx.Err(), windowsErr: ctx.Err()}
	}
}
