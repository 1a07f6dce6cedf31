package handlers

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/telemetry"
	"github.com/casebook/casebook/views"
)

// scoredFleet is one reading of the fleet, classified and grouped by
// model once: requests only filter, page and render it. It is shared and
// must not be modified.
type scoredFleet struct {
	at      time.Time
	groups  []*fleetGroup // worst first
	summary views.FleetSummary
	counts  map[views.Status]int // models by status
	byScope map[metrics.Scope]*classified
	byModel map[string]*fleetGroup
}

// fleetScores keeps the latest scored reading. A newer reading is scored
// in the background while requests are served the previous one, as
// Telemetry.Fleet serves its latest reading while it reads anew: at 500
// engines classifying every scope takes a good part of a page's budget.
type fleetScores struct {
	mu      sync.Mutex
	last    *scoredFleet
	scoring bool // a newer reading is being scored in the background
	// first serialises the scoring of a reading that has no scored
	// predecessor to serve, so that concurrent requests score it once.
	first sync.Mutex
}

// scoreStaleFor is how much older than the reading it was asked for a
// scored reading may stand in for it; as telemetry.FleetStaleFor.
const scoreStaleFor = telemetry.FleetStaleFor

// scored returns the fleet's reading at `at` (see Telemetry.Fleet),
// classified: the reading's own scoring when done, else the previous
// reading's while it is scored in the background, when that is at most
// scoreStaleFor older.
func (d *Deps) scored(ctx context.Context, at time.Time) (*scoredFleet, error) {
	f, err := d.Telemetry.Fleet(ctx, at)
	if err != nil {
		return nil, err
	}
	return d.scoreReading(f), nil
}

// cachedScored is scored for pages that show a few scopes: it reads
// nothing, and is false when no recent reading of the fleet can stand for
// one at `at` (see Telemetry.CachedFleet).
func (d *Deps) cachedScored(at time.Time) (*scoredFleet, bool) {
	f, ok := d.Telemetry.CachedFleet(at)
	if !ok {
		return nil, false
	}
	return d.scoreReading(f), true
}

func (d *Deps) scoreReading(f metrics.Fleet) *scoredFleet {
	s := d.scores
	s.mu.Lock()
	last := s.last
	switch {
	case last != nil && last.at.Equal(f.At):
		s.mu.Unlock()
		return last
	case last != nil && last.at.Before(f.At) && f.At.Sub(last.at) < scoreStaleFor:
		if !s.scoring {
			s.scoring = true
			go func() {
				defer func() {
					s.mu.Lock()
					s.scoring = false
					s.mu.Unlock()
				}()
				d.keepScored(d.scoreFleet(f))
			}()
		}
		s.mu.Unlock()
		return last
	}
	s.mu.Unlock()

	s.first.Lock()
	defer s.first.Unlock()
	s.mu.Lock()
	if s.last != nil && s.last.at.Equal(f.At) { // scored while we waited
		defer s.mu.Unlock()
		return s.last
	}
	s.mu.Unlock()
	sf := d.scoreFleet(f)
	d.keepScored(sf)
	return sf
}

// keepScored keeps sf as the latest scored reading unless a later one is
// kept already.
func (d *Deps) keepScored(sf *scoredFleet) {
	s := d.scores
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil || !sf.at.Before(s.last.at) {
		s.last = sf
	}
}

// scoreFleet classifies and groups every scope of f.
func (d *Deps) scoreFleet(f metrics.Fleet) (sf *scoredFleet) {
	defer func() {
		// Scoring may run outside a request, where a panic would take
		// the process down: keep an empty scoring and say why.
		if p := recover(); p != nil {
			d.Logger.Error("overview: scoring the fleet panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			sf = &scoredFleet{at: f.At, counts: map[views.Status]int{}, byScope: map[metrics.Scope]*classified{},
				byModel: map[string]*fleetGroup{}, summary: views.FleetSummary{GPUs: -1}}
		}
	}()
	groups := d.classifyFleet(f)
	sf = &scoredFleet{at: f.At, groups: groups, summary: fleetSummary(f, groups), counts: map[views.Status]int{},
		byScope: make(map[metrics.Scope]*classified, len(f.Snapshots)), byModel: make(map[string]*fleetGroup, len(groups))}
	for _, g := range groups {
		sf.counts[g.status]++
		sf.byModel[g.model.row.Scope.Model] = g
		sf.byScope[g.model.row.Scope] = &g.model
		for i := range g.instances {
			sf.byScope[g.instances[i].row.Scope] = &g.instances[i]
		}
	}
	return sf
}
