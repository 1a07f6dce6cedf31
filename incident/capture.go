package incident

import (
	"context"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
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

// captureWindows reads the archived chart windows around a trigger at.
func (s *Service) captureWindows(ctx context.Context, scope metrics.Scope, at, now time.Time) ([]metrics.Series, error) {
	start, end := at.Add(-s.o.Before), at.Add(s.o.After)
	if end.After(now) {
		end = now // the minutes after the trigger have not happened yet
	}
	return s.o.Capture.Range(ctx, scope, metrics.IDs(), metrics.Range{Start: start, End: end, Step: s.o.Step})
}

// completeWithin is how long after an incident's window ends its archived
// windows are still completed from the metric source.
const completeWithin = 24 * time.Hour

// lastSample is the time of the latest archived sample.
func lastSample(ws []metrics.Series) time.Time {
	var last time.Time
	for _, s := range ws {
		if n := len(s.Samples); n > 0 && s.Samples[n-1].T.After(last) {
			last = s.Samples[n-1].T
		}
	}
	return last
}

func sampleCount(ws []metrics.Series) int {
	n := 0
	for _, s := range ws {
		n += len(s.Samples)
	}
	return n
}

// CompleteWindows fills in the part of the archived window after the
// trigger that had not happened yet when the incident opened. It captures
// again only while some of the window is missing and has since passed, and
// keeps the archive when the new capture has less (the source may already
// have dropped the early minutes). Failures are logged, never returned: the
// archived evidence stands on its own.
func (s *Service) CompleteWindows(ctx context.Context, inc *store.Incident) {
	now := s.o.Now().UTC()
	last := lastSample(inc.Windows)
	switch {
	case !last.Before(inc.WindowEnd.Add(-2 * s.o.Step)): // complete
		return
	case now.Sub(last) < 2*s.o.Step: // nothing new yet
		return
	case now.Sub(inc.WindowEnd) > completeWithin: // the source has likely moved on; keep what is archived
		return
	}
	end := inc.WindowEnd
	if end.After(now) {
		end = now
	}
	if !end.After(inc.WindowStart) { // a clock set back since the incident opened
		return
	}
	ws, err := s.o.Capture.Range(ctx, inc.Scope, metrics.IDs(), metrics.Range{Start: inc.WindowStart, End: end, Step: s.o.Step})
	if err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: complete chart windows", "incident", inc.ID, "err", err)
		return
	}
	if sampleCount(ws) <= sampleCount(inc.Windows) {
		return
	}
	if err := s.o.Archive.ReplaceWindows(ctx, inc.ID, ws); err != nil {
		s.o.Logger.WarnContext(ctx, "incidents: store completed chart windows", "incident", inc.ID, "err", err)
		return
	}
	inc.Windows = ws
}
