package watch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

var (
	testScope = metrics.Scope{Model: "llama-70b", Instance: "pod-a"}
	// Up-bad latencies and a Down-bad throughput.
	testIDs = []string{metrics.TTFT, metrics.TPOT, metrics.E2E, metrics.GenerationTPS}
)

func TestWatcherOpensOneIncidentForAMultiMetricStep(t *testing.T) {
	tests := []struct {
		name    string
		stepped []string
		factor  float64
		want    int // incidents
		metrics int // metrics named in the incident
	}{
		{"normal daily cycle", nil, 1, 0, 0},
		{"three metrics step up together", []string{metrics.TTFT, metrics.TPOT, metrics.E2E}, 2, 1, 3},
		{"throughput halves with latency up", []string{metrics.GenerationTPS, metrics.E2E}, 2, 1, 2},
		{"good-direction step raises nothing", []string{metrics.GenerationTPS}, 0.5, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{scopes: []metrics.Scope{testScope}, step: tc.factor, stepped: map[string]bool{}}
			for _, id := range tc.stepped {
				src.stepped[id] = true
			}
			var log syncBuffer
			w, op, clk := newTestWatcher(t, src, testIDs, nil, &log)
			if r := w.Round(context.Background()); r.Points == 0 || r.Opened != 0 {
				t.Fatalf("warm-up round: %+v, want points and no incident", r)
			}
			// Twelve hours of the normal cycle, then the step.
			if n := runMinutes(w, clk, 12*60); n != 0 {
				t.Fatalf("%d incidents during the normal cycle, want 0: %+v", n, op.list())
			}
			src.set(func(f *fakeSource) { f.stepAt = clk.Now().Truncate(time.Minute).Add(time.Minute) })
			runMinutes(w, clk, 30)
			got := op.list()
			if len(got) != tc.want {
				t.Fatalf("opened %d incidents, want %d: %+v\nlog:\n%s", len(got), tc.want, got, log.String())
			}
			if tc.want == 0 {
				return
			}
			inc := got[0]
			if inc.scope != testScope || inc.tr.Kind != store.TriggerDetector {
				t.Errorf("incident scope %v kind %q, want %v detector", inc.scope, inc.tr.Kind, testScope)
			}
			d, ok := ParseDetail(inc.tr.Detail)
			if !ok {
				t.Fatalf("trigger detail %s is not a detector detail", inc.tr.Detail)
			}
			// Every stepped metric is in the incident: in the detail, or
			// joined within the join window (then it is firing with the
			// incident's URL).
			named := map[string]bool{}
			for _, m := range d.Metrics {
				named[m.Metric] = true
				if !strings.Contains(inc.tr.Title, m.Metric) {
					t.Errorf("title %q does not name %s", inc.tr.Title, m.Metric)
				}
				outside := m.Value > m.Upper || m.Value < m.Lower
				if !outside || m.Outside <= 0 || m.OutsideSE <= 0 || m.Lower >= m.Upper {
					t.Errorf("detail %+v: want a value outside its band by a positive amount", m)
				}
			}
			for _, a := range w.Firing() {
				if a.Incident == 1 {
					named[a.Alert.Metric] = true
				}
				if a.URL != "http://casebook.test/incidents/1" {
					t.Errorf("firing %s links %q, want the incident page", a.Alert.Metric, a.URL)
				}
			}
			if len(named) != tc.metrics {
				t.Errorf("incident covers %v, want %d metrics %v", named, tc.metrics, tc.stepped)
			}
			// Still out of band an hour later: no second incident.
			runMinutes(w, clk, 60)
			if n := len(op.list()); n != 1 {
				t.Errorf("%d incidents after an hour more of the same anomaly, want 1", n)
			}
		})
	}
}

func TestWatcherOpensANewIncidentWhenTheAnomalyReturns(t *testing.T) {
	src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 2, stepped: map[string]bool{metrics.TTFT: true}}
	var log syncBuffer
	w, op, clk := newTestWatcher(t, src, []string{metrics.TTFT}, nil, &log)
	w.Round(context.Background())
	runMinutes(w, clk, 60)
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 20)
	src.set(func(f *fakeSource) { f.stepAt = time.Time{} }) // back to normal
	runMinutes(w, clk, 30)
	if n := len(w.Firing()); n != 0 {
		t.Fatalf("%d alerts still firing after the anomaly ended", n)
	}
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 20)
	if n := len(op.list()); n != 2 {
		t.Fatalf("opened %d incidents for two separate anomalies, want 2\n%s", n, log.String())
	}
}

func TestWatcherSurvivesBadInput(t *testing.T) {
	src := &fakeSource{scopes: []metrics.Scope{testScope, {Model: "llama-70b", Instance: "pod-b"}}, step: 1, stepped: map[string]bool{}}
	var log syncBuffer
	w, op, clk := newTestWatcher(t, src, testIDs, nil, &log)
	w.Round(context.Background())
	runMinutes(w, clk, 30)

	// A half-hour gap of NaN, then normal data again.
	src.set(func(f *fakeSource) { f.gapFrom, f.gapTo = clk.Now(), clk.Now().Add(30*time.Minute) })
	runMinutes(w, clk, 60)
	// The telemetry fails for ten rounds.
	src.set(func(f *fakeSource) { f.failing = true })
	runMinutes(w, clk, 10)
	src.set(func(f *fakeSource) { f.failing = false })
	runMinutes(w, clk, 10)
	// A scope disappears for a while, then comes back.
	src.set(func(f *fakeSource) { f.scopes = f.scopes[:1] })
	runMinutes(w, clk, 10)
	src.set(func(f *fakeSource) { f.scopes = append(f.scopes, metrics.Scope{Model: "llama-70b", Instance: "pod-b"}) })
	runMinutes(w, clk, 30)

	if got := op.list(); len(got) != 0 {
		t.Errorf("opened %d incidents on gaps, errors and a missing scope, want 0: %+v", len(got), got)
	}
	logs := log.String()
	for _, msg := range []string{"listing scopes failed", "scope no longer reports", "listing scopes works again", "scope is back"} {
		if n := strings.Count(logs, msg); n != 1 {
			t.Errorf("%q logged %d times, want once\n%s", msg, n, logs)
		}
	}
}

func TestWatcherLogsAFailedOpenAndKeepsGoing(t *testing.T) {
	src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 2, stepped: map[string]bool{metrics.TTFT: true}}
	var log syncBuffer
	w, op, clk := newTestWatcher(t, src, []string{metrics.TTFT}, nil, &log)
	op.fail = true
	w.Round(context.Background())
	runMinutes(w, clk, 30)
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 30)
	if n := strings.Count(log.String(), "opening the detector's incident failed"); n != 1 {
		t.Errorf("failed open logged %d times, want once\n%s", n, log.String())
	}
	if f := w.Firing(); len(f) != 1 || f[0].Incident != 0 || f[0].URL != "" {
		t.Errorf("firing %+v, want the alert without an incident", f)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	src, op := &fakeSource{}, &fakeOpener{}
	tests := []struct {
		name string
		opts Options
	}{
		{"no source", Options{Opener: op}},
		{"no opener", Options{Source: src}},
		{"unknown metric", Options{Source: src, Opener: op, Metrics: []string{"nope"}}},
		{"negative interval", Options{Source: src, Opener: op, Interval: -time.Second}},
	}
	for _, tc := range tests {
		if _, err := New(tc.opts); err == nil {
			t.Errorf("%s: New succeeded, want an error", tc.name)
		}
	}
}

func TestParseDetail(t *testing.T) {
	good, _ := json.Marshal(Detail{Source: DetailSource, Metrics: []MetricDetail{{Metric: metrics.TTFT, Value: 9}}})
	tests := []struct {
		raw  string
		want bool
	}{
		{string(good), true},
		{`{"source":"alertmanager"}`, false},
		{`not json`, false},
		{``, false},
	}
	for _, tc := range tests {
		d, ok := ParseDetail(json.RawMessage(tc.raw))
		if ok != tc.want {
			t.Errorf("ParseDetail(%q) ok = %v, want %v", tc.raw, ok, tc.want)
		}
		if ok && (len(d.Metrics) != 1 || d.Metrics[0].Value != 9) {
			t.Errorf("ParseDetail(%q) = %+v", tc.raw, d)
		}
	}
}

func FuzzParseDetail(f *testing.F) {
	f.Add([]byte(`{"source":"dynamic-threshold","metrics":[{"metric":"ttft_p95_ms","value":1}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, ok := ParseDetail(b); ok && d.Source != DetailSource {
			t.Fatalf("accepted a detail of source %q", d.Source)
		}
	})
}

func TestWatcherBand(t *testing.T) {
	src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 1, stepped: map[string]bool{}}
	var log syncBuffer
	w, _, clk := newTestWatcher(t, src, []string{metrics.TTFT}, nil, &log)
	from, to := clk.Now().Add(-time.Hour), clk.Now()
	if _, _, ok := w.Band(testScope, metrics.TTFT, from, to, time.Minute); ok {
		t.Fatal("a band before the first round")
	}
	w.Round(context.Background())
	tests := []struct {
		name   string
		scope  metrics.Scope
		metric string
		step   time.Duration
		want   int
	}{
		{"an hour by the minute", testScope, metrics.TTFT, time.Minute, 60},
		{"capped points", testScope, metrics.TTFT, time.Millisecond, maxBandPoints},
		{"unwatched metric", testScope, metrics.TPOT, time.Minute, 0},
		{"unknown scope", metrics.Scope{Model: "x"}, metrics.TTFT, time.Minute, 0},
		{"bad step", testScope, metrics.TTFT, 0, 0},
	}
	for _, tc := range tests {
		lo, hi, ok := w.Band(tc.scope, tc.metric, from, to, tc.step)
		if ok != (tc.want > 0) || len(lo) != tc.want || len(hi) != tc.want {
			t.Errorf("%s: ok %v, %d/%d points, want %d", tc.name, ok, len(lo), len(hi), tc.want)
			continue
		}
		for i := range lo {
			v := src.value(testScope, metrics.TTFT, lo[i].T)
			if !(lo[i].V < hi[i].V) || v < lo[i].V || v > hi[i].V {
				t.Errorf("%s: at %s band %.3g..%.3g does not hold the normal value %.3g", tc.name, lo[i].T, lo[i].V, hi[i].V, v)
				break
			}
		}
	}
}

// TestWatcherReadsDuringRounds reads bands and firing alerts while rounds
// run, as the console does; run it with -race.
func TestWatcherReadsDuringRounds(t *testing.T) {
	src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 2, stepped: map[string]bool{metrics.TTFT: true}}
	var log syncBuffer
	w, _, clk := newTestWatcher(t, src, []string{metrics.TTFT}, nil, &log)
	w.Round(context.Background())
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(10 * time.Minute) })
	done := make(chan struct{})
	reads := 0
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			now := clk.Now()
			if _, _, ok := w.Band(testScope, metrics.TTFT, now.Add(-time.Hour), now, time.Minute); ok {
				reads++
			}
			_ = w.Firing()
		}
	}()
	runMinutes(w, clk, 30)
	<-done
	if reads == 0 || len(w.Firing()) != 1 {
		t.Errorf("%d band reads, %d firing; want reads and the stepped metric firing", reads, len(w.Firing()))
	}
}

func TestWatcherFoldsAModelIntoItsInstancesIncident(t *testing.T) {
	for _, wait := range []time.Duration{0, 10 * time.Minute} {
		t.Run("corroborate "+wait.String(), func(t *testing.T) { testFoldsModel(t, wait) })
	}
}

func testFoldsModel(t *testing.T, wait time.Duration) {
	model := metrics.Scope{Model: testScope.Model}
	other := metrics.Scope{Model: "qwen-7b", Instance: "qwen-7b-0"}
	src := &fakeSource{scopes: []metrics.Scope{model, testScope, other}, step: 2, stepped: map[string]bool{metrics.TTFT: true}}
	var log syncBuffer
	w, op, clk := newTestWatcher(t, src, []string{metrics.TTFT}, nil, &log)
	w.opts.Corroborate = wait
	w.Round(context.Background())
	runMinutes(w, clk, 30)
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 20)
	got := op.list()
	// The stepped metric moves every scope: the model joins its instance's
	// incident, the other model's instance opens its own.
	if len(got) != 2 || got[0].scope.Instance == "" || got[1].scope.Instance == "" {
		t.Fatalf("opened %+v, want one incident per instance and none for the model", got)
	}
	firing := w.Firing()
	if len(firing) != 3 {
		t.Fatalf("%d alerts firing, want 3 (model, instance, other instance)", len(firing))
	}
	for _, a := range firing {
		if a.Alert.Scope == model && a.URL == "" {
			t.Errorf("the model's alert links no incident")
		}
	}
}

func TestClampBand(t *testing.T) {
	rps, _ := metrics.Lookup(metrics.ArrivalRPS)
	ratio, _ := metrics.Lookup(metrics.KVCacheUsage)
	tests := []struct {
		name           string
		m              metrics.Metric
		lo, hi         float64
		wantLo, wantHi float64
	}{
		{"a rate cannot go below zero", rps, -12, 30, 0, 30},
		{"an unbounded rate keeps its top", rps, 5, 1e6, 5, 1e6},
		{"a ratio stays in 0..1", ratio, -0.2, 1.3, 0, 1},
		{"a band inside the range is untouched", ratio, 0.2, 0.4, 0.2, 0.4},
	}
	for _, tc := range tests {
		lo, hi := clampBand(tc.m, tc.lo, tc.hi)
		if lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("%s: clampBand(%g, %g) = %g, %g; want %g, %g", tc.name, tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

func TestWatcherCorroboratesAcrossDimensions(t *testing.T) {
	const wait = 10 * time.Minute
	tests := []struct {
		name    string
		stepped []string
		lasts   time.Duration // how long the step lasts
		want    int           // incidents after 30 minutes
		within  time.Duration // the incident opened within this of the step
	}{
		{"a lone metric's short excursion opens nothing", []string{metrics.TTFT}, 5 * time.Minute, 0, 0},
		{"a lone metric that stays out opens one after the wait", []string{metrics.TTFT}, time.Hour, 1, wait + 2*time.Minute},
		{"two latencies of one excursion open nothing", []string{metrics.TTFT, metrics.E2E}, 5 * time.Minute, 0, 0},
		{"latency with throughput opens one at once", []string{metrics.TTFT, metrics.GenerationTPS}, 5 * time.Minute, 1, 5 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{scopes: []metrics.Scope{testScope}, step: 2, stepped: map[string]bool{}}
			for _, id := range tc.stepped {
				src.stepped[id] = true
			}
			var log syncBuffer
			w, op, clk := newTestWatcher(t, src, testIDs, nil, &log)
			w.opts.Corroborate = wait
			w.Round(context.Background())
			runMinutes(w, clk, 60)
			stepAt := clk.Now().Truncate(time.Minute).Add(time.Minute)
			src.set(func(f *fakeSource) { f.stepAt = stepAt })
			openedAt := time.Time{}
			for i := 0; i < 30; i++ {
				if clk.Now().Sub(stepAt) >= tc.lasts {
					src.set(func(f *fakeSource) { f.stepAt = time.Time{} })
				}
				if runMinutes(w, clk, 1) > 0 && openedAt.IsZero() {
					openedAt = clk.Now()
				}
			}
			got := op.list()
			if len(got) != tc.want {
				t.Fatalf("opened %d incidents, want %d\nlog:\n%s", len(got), tc.want, log.String())
			}
			if tc.want == 0 {
				if !strings.Contains(log.String(), "no incident") {
					t.Errorf("the dropped excursion is not logged:\n%s", log.String())
				}
				return
			}
			if d := openedAt.Sub(stepAt); d > tc.within {
				t.Errorf("opened %v after the step, want within %v", d, tc.within)
			}
			if tr := got[0].tr.At; tr.After(stepAt.Add(5 * time.Minute)) {
				t.Errorf("incident at %v, want the anomaly's start near %v, not when it was corroborated", tr, stepAt)
			}
		})
	}
}

func TestWatcherModelJoinsAnInstanceIncidentWithoutWaiting(t *testing.T) {
	// The instance shows two dimensions and opens at once; its model shows
	// only the latency and must join that incident rather than wait for
	// corroboration and open its own.
	model := metrics.Scope{Model: testScope.Model}
	src := &fakeSource{scopes: []metrics.Scope{model, testScope}, step: 2,
		stepped: map[string]bool{metrics.TTFT: true, metrics.GenerationTPS: true},
		onlyIn:  map[string]bool{testScope.String() + "|" + metrics.TTFT: true, testScope.String() + "|" + metrics.GenerationTPS: true, model.String() + "|" + metrics.TTFT: true}}
	var log syncBuffer
	w, op, clk := newTestWatcher(t, src, testIDs, nil, &log)
	w.opts.Corroborate = 10 * time.Minute
	w.Round(context.Background())
	runMinutes(w, clk, 30)
	src.set(func(f *fakeSource) { f.stepAt = clk.Now().Add(time.Minute) })
	runMinutes(w, clk, 30)
	got := op.list()
	if len(got) != 1 || got[0].scope != testScope {
		t.Fatalf("opened %+v, want the instance's incident alone\n%s", got, log.String())
	}
	for _, a := range w.Firing() {
		if a.Alert.Scope == model && a.Incident != 1 {
			t.Errorf("the model's %s alert belongs to incident %d, want the instance's", a.Alert.Metric, a.Incident)
		}
	}
}

func TestRunReportsItsLastRound(t *testing.T) {
	scopes := []metrics.Scope{testScope, {Model: testScope.Model, Instance: "other-0"}}
	src := &fakeSource{scopes: scopes, step: 1, stepped: map[string]bool{}}
	clk := &clock{t: start.Add(3 * 24 * time.Hour)}
	w, err := New(Options{Source: src, Opener: &fakeOpener{}, Metrics: testIDs, History: 24 * time.Hour,
		Interval: 10 * time.Millisecond, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.LastRound(); ok {
		t.Fatal("a report before any round")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	var r RoundReport
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var ok bool
		if r, ok = w.LastRound(); ok {
			break
		}
	}
	cancel()
	<-done
	if r.Scopes != len(scopes) || r.Began.IsZero() || r.Took <= 0 || r.Interval != 10*time.Millisecond {
		t.Fatalf("last round %+v, want both scopes, a start, a duration and the interval", r)
	}
	if want := r.Warmed == 0 && r.Took > r.Interval; r.Behind() != want {
		t.Errorf("Behind() = %v for a %s round every %s", r.Behind(), r.Took, r.Interval)
	}
}

// TestWatcherReadsWarmScopesTogether checks that after the warm-up a round
// reads every scope's new minute with one fleet-wide read, not one read
// per scope, and still observes every point.
func TestWatcherReadsWarmScopesTogether(t *testing.T) {
	scopes := []metrics.Scope{{Model: "m"}, {Model: "m", Instance: "m-0"}, {Model: "m", Instance: "m-1"}}
	src := &fakeSource{scopes: scopes, step: 1, stepped: map[string]bool{}}
	var log syncBuffer
	w, _, clk := newTestWatcher(t, src, testIDs, nil, &log)
	w.Round(context.Background())
	warm := src.ranges
	if warm < len(scopes) || src.fleetRanges != 0 {
		t.Fatalf("warm-up: %d scope reads and %d fleet reads, want at least one per scope and none", warm, src.fleetRanges)
	}
	for i := range 3 {
		clk.advance(time.Minute)
		r := w.Round(context.Background())
		if want := len(scopes) * len(testIDs); r.Points != want {
			t.Errorf("round %d observed %d points, want %d", i, r.Points, want)
		}
	}
	if src.ranges != warm || src.fleetRanges != 3 {
		t.Errorf("three rounds: %d scope reads and %d fleet reads after the warm-up, want none and 3", src.ranges-warm, src.fleetRanges)
	}
	// A failing fleet read falls back to reading scope by scope.
	src.set(func(f *fakeSource) { f.fleetFailing = true })
	clk.advance(time.Minute)
	w.Round(context.Background())
	if src.ranges != warm+len(scopes) {
		t.Errorf("after a failed fleet read: %d scope reads, want %d", src.ranges-warm, len(scopes))
	}
}
