package telemetry

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// statusBoard keeps the health of every metric source. A source's state is
// logged when it changes (first seen, failing, recovered), never on every
// attempt, so a dead target does not flood the log.
type statusBoard struct {
	log *slog.Logger
	now func() time.Time

	mu      sync.Mutex
	sources map[string]*metrics.SourceStatus
}

func newStatusBoard(log *slog.Logger) *statusBoard {
	return &statusBoard{log: log, now: time.Now, sources: make(map[string]*metrics.SourceStatus)}
}

// ok records a successful attempt of the named source.
func (b *statusBoard) ok(name string) {
	b.set(name, nil)
}

// fail records a failed attempt of the named source.
func (b *statusBoard) fail(name string, err error) {
	b.set(name, err)
}

func (b *statusBoard) set(name string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, known := b.sources[name]
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	okNow := err == nil
	if known && s.OK == okNow && s.Err == msg {
		return
	}
	now := b.now().UTC()
	if !known {
		s = &metrics.SourceStatus{Name: name}
		b.sources[name] = s
	}
	// A failure whose message changes keeps its start time and is not
	// logged again: the source has been failing since then, only the
	// reason moved (timeouts and parse errors often vary in detail).
	if known && s.OK == okNow {
		s.Err = msg
		return
	}
	s.Since = now
	s.OK, s.Err = okNow, msg
	switch {
	case !okNow:
		b.log.Warn("telemetry source failing", "source", name, "err", msg, "since", s.Since)
	case known:
		b.log.Info("telemetry source recovered", "source", name)
	default:
		b.log.Info("telemetry source up", "source", name)
	}
}

// forget drops a source that no longer exists.
func (b *statusBoard) forget(name string) {
	b.mu.Lock()
	delete(b.sources, name)
	b.mu.Unlock()
}

// list returns every source's status sorted by name.
func (b *statusBoard) list() []metrics.SourceStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]metrics.SourceStatus, 0, len(b.sources))
	for _, s := range b.sources {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
