package forecast

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// feed plays samples into a detector under metric and returns its events.
func feed(d *Detector, metric string, s []metrics.Sample) []Alert {
	var out []Alert
	for _, p := range s {
		if a, ok := d.Observe(metric, p.T, p.V); ok {
			out = append(out, a)
		}
	}
	return out
}

func count(alerts []Alert, state State) int {
	n := 0
	for _, a := range alerts {
		if a.State == state {
			n++
		}
	}
	return n
}

// history is three days of a daily-seasonal series at 1-minute steps.
func history(level, noise float64, seed uint64) []metrics.Sample {
	return gen(3*1440, time.Minute, noise, seed, func(t time.Time) float64 {
		return level * (1 + 0.2*math.Sin(2*math.Pi*float64(t.Unix()%86400)/86400))
	})
}

// after returns n further points of the same series with f applied to
// the point index and value.
func after(h []metrics.Sample, n int, level, noise float64, seed uint64, f func(i int, v float64) float64) []metrics.Sample {
	rng := rand.New(rand.NewPCG(seed, 99))
	last := h[len(h)-1].T
	out := make([]metrics.Sample, n)
	for i := range out {
		t := last.Add(time.Duration(i+1) * time.Minute)
		v := level*(1+0.2*math.Sin(2*math.Pi*float64(t.Unix()%86400)/86400)) + noise*rng.NormFloat64()
		out[i] = metrics.Sample{T: t, V: f(i, v)}
	}
	return out
}

func TestDetectorDirections(t *testing.T) {
	step := func(size float64) func(i int, v float64) float64 {
		return func(i int, v float64) float64 {
			if i >= 30 && i < 60 {
				return v + size
			}
			return v
		}
	}
	tests := []struct {
		name      string
		metric    string // TPOT is bad up, throughput bad down, running_seqs both
		size      float64
		wantFired int
	}{
		{"TPOT up: alert", metrics.TPOT, 30, 1},
		{"TPOT down: good direction, no alert", metrics.TPOT, -30, 0},
		{"throughput down: alert", metrics.ThroughputRPS, -30, 1},
		{"throughput up: no alert", metrics.ThroughputRPS, 30, 0},
		{"running_seqs up: both, alert", metrics.RunningSeqs, 30, 1},
		{"running_seqs down: both, alert", metrics.RunningSeqs, -30, 1},
		{"unknown metric: both ways", "my_metric", -30, 1},
		{"TPOT tiny step inside the band: no alert", metrics.TPOT, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := history(100, 1, 1)
			d := NewDetector(DetectorOptions{})
			if a := feed(d, tc.metric, h); count(a, Firing) != 0 {
				t.Fatalf("alerts on clean history: %v", a)
			}
			events := feed(d, tc.metric, after(h, 120, 100, 1, 2, step(tc.size)))
			if got := count(events, Firing); got != tc.wantFired {
				t.Fatalf("fired %d alerts, want %d: %v", got, tc.wantFired, events)
			}
			if tc.wantFired == 0 {
				return
			}
			fired := events[0]
			wantDir := metrics.Up
			if tc.size < 0 {
				wantDir = metrics.Down
			}
			if fired.Direction != wantDir || fired.Metric != tc.metric {
				t.Errorf("alert = %+v, want direction %s", fired, wantDir)
			}
			// The step starts at index 30 (minute 31): the third point
			// in a row fires.
			start := h[len(h)-1].T.Add(31 * time.Minute)
			if !fired.Start.Equal(start) || fired.At.Sub(fired.Start) != 2*time.Minute {
				t.Errorf("alert start %s at %s, want start %s and firing two minutes later", fired.Start, fired.At, start)
			}
			if count(events, Resolved) != 1 {
				t.Errorf("want the alert resolved after the step: %v", events)
			}
		})
	}
}

func TestDetectorNeedsKConsecutive(t *testing.T) {
	tests := []struct {
		name        string
		consecutive int
		spike       int // points in a row beyond the band
		want        int
	}{
		{"K=3, two points: none", 3, 2, 0},
		{"K=3, three points: one", 3, 3, 1},
		{"K=1, one point: one", 1, 1, 1},
		{"K=5, four points: none", 5, 4, 0},
		{"K=5, five points: one", 5, 5, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := history(100, 1, 3)
			d := NewDetector(DetectorOptions{Consecutive: tc.consecutive})
			feed(d, metrics.TPOT, h)
			ev := feed(d, metrics.TPOT, after(h, 60, 100, 1, 4, func(i int, v float64) float64 {
				if i >= 20 && i < 20+tc.spike {
					return v + 50
				}
				return v
			}))
			if got := count(ev, Firing); got != tc.want {
				t.Errorf("fired %d, want %d: %v", got, tc.want, ev)
			}
		})
	}
}

func TestDetectorNoStorms(t *testing.T) {
	base := t0
	constant := func(n int, v float64) []metrics.Sample {
		s := make([]metrics.Sample, n)
		for i := range s {
			s[i] = metrics.Sample{T: base.Add(time.Duration(i) * time.Minute), V: v}
		}
		return s
	}
	tests := []struct {
		name    string
		metric  string
		samples func() []metrics.Sample
		// maxFired bounds the alerts; maxEvents bounds every event.
		maxFired, maxEvents int
		check               func(t *testing.T, d *Detector, ev []Alert)
	}{
		{"constant series", metrics.TPOT, func() []metrics.Sample { return constant(3*1440, 25) }, 0, 0, nil},
		{"constant with a wiggle below the floors", metrics.TPOT, func() []metrics.Sample {
			s := constant(3*1440, 25)
			for i := range s {
				if i%7 == 0 {
					s[i].V = 25.3
				}
			}
			return s
		}, 0, 0, nil},
		{"constant zero with a one-count blip", metrics.QueueDepth, func() []metrics.Sample {
			s := constant(2*1440, 0)
			for i := 1000; i < 1010; i++ {
				s[i].V = 1
			}
			return s
		}, 0, 0, nil},
		{"NaN and infinities", metrics.TPOT, func() []metrics.Sample {
			s := history(25, 0.5, 5)
			for i := range s {
				if i%3 == 0 {
					s[i].V = math.NaN()
				}
				if i%101 == 0 {
					s[i].V = math.Inf(1)
				}
			}
			return s
		}, 0, 0, func(t *testing.T, d *Detector, _ []Alert) {
			if st := d.Stats(metrics.TPOT); st.NaN < 1440 {
				t.Errorf("stats %+v: want the NaN counted", st)
			}
		}},
		{"duplicates and unordered", metrics.TPOT, func() []metrics.Sample {
			s := history(25, 0.5, 6)
			var out []metrics.Sample
			for i, p := range s {
				out = append(out, p)
				if i%5 == 0 {
					out = append(out, metrics.Sample{T: p.T, V: 900}) // duplicate timestamp, wild value
				}
				if i%7 == 0 && i > 10 {
					out = append(out, metrics.Sample{T: s[i-10].T, V: 900}) // late point
				}
			}
			return out
		}, 0, 0, func(t *testing.T, d *Detector, _ []Alert) {
			if st := d.Stats(metrics.TPOT); st.OutOfOrder < 1000 {
				t.Errorf("stats %+v: want the duplicates counted", st)
			}
		}},
		{"gaps", metrics.TPOT, func() []metrics.Sample {
			s := history(25, 0.5, 7)
			var out []metrics.Sample
			for i, p := range s {
				if (i/200)%3 != 2 { // 400 minutes on, 200 off
					out = append(out, p)
				}
			}
			return out
		}, 0, 0, func(t *testing.T, d *Detector, _ []Alert) {
			if st := d.Stats(metrics.TPOT); st.Gaps < 6 {
				t.Errorf("stats %+v: want the gaps counted", st)
			}
		}},
		{"unit change seconds to milliseconds", metrics.TPOT, func() []metrics.Sample {
			s := history(0.025, 0.0005, 8)
			for i := 1440; i < len(s); i++ {
				s[i].V *= 1000
			}
			return s
		}, 1, 2, func(t *testing.T, d *Detector, ev []Alert) {
			if len(ev) != 2 || ev[1].State != Resolved || !strings.Contains(ev[1].Message, "scale change") {
				t.Fatalf("want one alert ended by a scale-change message, got %v", ev)
			}
			if d.Firing(metrics.TPOT) {
				t.Error("still firing after the scale change")
			}
		}},
		{"persistent level shift up", metrics.TPOT, func() []metrics.Sample {
			s := history(25, 0.5, 9)
			for i := 2 * 1440; i < len(s); i++ {
				s[i].V += 5
			}
			return s
		}, 1, 2, func(t *testing.T, d *Detector, ev []Alert) {
			if len(ev) != 2 || !strings.Contains(ev[1].Message, "level shift") {
				t.Fatalf("want one alert ended by a level-shift message, got %v", ev)
			}
		}},
		{"level shift in the good direction", metrics.TPOT, func() []metrics.Sample {
			s := history(25, 0.5, 10)
			for i := 2 * 1440; i < len(s); i++ {
				s[i].V -= 5
			}
			return s
		}, 0, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDetector(DetectorOptions{})
			ev := feed(d, tc.metric, tc.samples())
			if got := count(ev, Firing); got > tc.maxFired {
				t.Errorf("fired %d alerts, want at most %d: %v", got, tc.maxFired, ev)
			}
			if len(ev) > tc.maxEvents {
				t.Errorf("%d events, want at most %d: %v", len(ev), tc.maxEvents, ev)
			}
			if tc.check != nil {
				tc.check(t, d, ev)
			}
		})
	}
}

func TestDetectorInfersInterval(t *testing.T) {
	tests := []struct {
		step time.Duration
	}{{time.Minute}, {5 * time.Minute}, {30 * time.Second}, {time.Hour}}
	for _, tc := range tests {
		t.Run(tc.step.String(), func(t *testing.T) {
			d := NewDetector(DetectorOptions{})
			feed(d, "x", gen(500, tc.step, 1, 1, func(time.Time) float64 { return 10 }))
			if got := d.Interval("x"); got != tc.step {
				t.Errorf("interval = %s, want %s", got, tc.step)
			}
		})
	}
}

func TestGroupAlerts(t *testing.T) {
	a := metrics.Scope{Model: "llama", Instance: "llama-0"}
	b := metrics.Scope{Model: "llama", Instance: "llama-1"}
	at := t0.Add(10 * time.Minute)
	in := []Alert{
		{Scope: a, Metric: metrics.TPOT, State: Firing, At: at.Add(5 * time.Second)},
		{Scope: a, Metric: metrics.DRAMActive, State: Firing, At: at.Add(40 * time.Second)},
		{Scope: b, Metric: metrics.TPOT, State: Firing, At: at},
		{Scope: a, Metric: metrics.ThroughputRPS, State: Firing, At: at.Add(time.Minute)},
		{Scope: a, Metric: metrics.QueueDepth, State: Resolved, At: at},
	}
	got := GroupAlerts(in)
	want := []struct {
		scope   metrics.Scope
		minute  time.Time
		metrics string
	}{
		{a, at, "dram_active,tpot_ms"},
		{b, at, "tpot_ms"},
		{a, at.Add(time.Minute), "throughput_rps"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d groups, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Scope != w.scope || !got[i].Minute.Equal(w.minute) || strings.Join(got[i].Metrics, ",") != w.metrics {
			t.Errorf("group %d = %v %s %v, want %v %s %s", i, got[i].Scope, got[i].Minute, got[i].Metrics, w.scope, w.minute, w.metrics)
		}
	}
}

func TestCacheRefitsWhenOld(t *testing.T) {
	c := NewCache(CacheOptions{MaxAge: time.Hour, Size: 2})
	calls := 0
	hist := func() ([]metrics.Sample, error) {
		calls++
		return history(10, 0.1, 1), nil
	}
	now := t0
	steps := []struct {
		key       string
		at        time.Duration
		wantCalls int
	}{
		{"a", 0, 1},
		{"a", 30 * time.Minute, 1},
		{"a", 61 * time.Minute, 2},
		{"b", 62 * time.Minute, 3},
		{"c", 63 * time.Minute, 4}, // evicts a, the least recently used
		{"b", 64 * time.Minute, 4},
		{"a", 65 * time.Minute, 5},
	}
	for _, s := range steps {
		if _, err := c.Get(s.key, now.Add(s.at), hist); err != nil {
			t.Fatal(err)
		}
		if calls != s.wantCalls {
			t.Fatalf("after Get(%s, +%s): %d fits, want %d", s.key, s.at, calls, s.wantCalls)
		}
	}
	if c.Len() != 2 {
		t.Errorf("len = %d, want 2", c.Len())
	}
	if _, err := c.Get("empty", now, func() ([]metrics.Sample, error) { return nil, nil }); err == nil {
		t.Error("want an error for a series with no data")
	}
}

func TestDetectorBoundsHistory(t *testing.T) {
	tests := []struct {
		name      string
		opts      DetectorOptions
		n         int
		step      time.Duration
		wantAtMst int
	}{
		{"by points", DetectorOptions{MaxPoints: 500}, 3000, time.Second, 500},
		{"by age", DetectorOptions{History: time.Hour}, 3000, time.Minute, 61},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDetector(tc.opts)
			feed(d, "x", gen(tc.n, tc.step, 1, 1, func(time.Time) float64 { return 10 }))
			st := d.series["x"]
			if got := len(st.hist) - st.head; got > tc.wantAtMst || got < tc.wantAtMst-2 {
				t.Errorf("history holds %d points, want %d", got, tc.wantAtMst)
			}
		})
	}
}

func TestDetectorEchoGuard(t *testing.T) {
	// Three days of AR(1) noise (phi 0.7, marginal sd 1) around a daily
	// cycle, then either one shock of 9 sd that decays with the noise or
	// a sustained step of 6 sd for 30 minutes.
	const phi = 0.7
	build := func(shock, step float64) []metrics.Sample {
		rng := rand.New(rand.NewPCG(42, 1))
		n := 3*1440 + 120
		out := make([]metrics.Sample, n)
		e := 0.0
		for i := range out {
			at := t0.Add(time.Duration(i) * time.Minute)
			e = phi*e + math.Sqrt(1-phi*phi)*rng.NormFloat64()
			if i == 3*1440+30 {
				e += shock
			}
			v := 100 + 10*math.Sin(2*math.Pi*float64(i%1440)/1440) + e
			if i >= 3*1440+30 && i < 3*1440+60 {
				v += step
			}
			out[i] = metrics.Sample{T: at, V: v}
		}
		return out
	}
	tests := []struct {
		name        string
		shock, step float64
		echo        float64
		want        int
	}{
		{"decaying shock, guard on: no alert", 9, 0, 0, 0},
		{"decaying shock, guard off: alert", 9, 0, -1, 1},
		{"sustained step, guard on: alert", 0, 6, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := build(tc.shock, tc.step)
			d := NewDetector(DetectorOptions{EchoZ: tc.echo})
			feed(d, metrics.TPOT, s[:3*1440])
			if rho := d.series[metrics.TPOT].rho; math.Abs(rho-phi) > 0.15 {
				t.Errorf("estimated rho = %.2f, want about %.2f", rho, phi)
			}
			ev := feed(d, metrics.TPOT, s[3*1440:])
			if got := count(ev, Firing); got != tc.want {
				t.Errorf("fired %d, want %d: %v", got, tc.want, ev)
			}
		})
	}
}

func TestDetectorLearnsWeekendsAfterYoungShifts(t *testing.T) {
	// A series that starts on a weekday and is 40% lower on weekends: a
	// young model, without weekly terms yet, takes its first weekend for
	// level shifts. Once it has seen whole weeks it must forecast
	// weekends, not keep treating each one as a new pair of shifts.
	weekend := func(t time.Time) bool { return t.Weekday() == time.Saturday || t.Weekday() == time.Sunday }
	s := gen(35*1440, time.Minute, 1, 5, func(t time.Time) float64 {
		v := 100 + dailyShape(t)
		if weekend(t) {
			v *= 0.6
		}
		return v
	})
	d := NewDetector(DetectorOptions{})
	var late []Alert
	from := s[0].T.Add(21 * Day)
	for _, a := range feed(d, "x", s) {
		if a.State == Firing && !a.At.Before(from) {
			late = append(late, a)
		}
	}
	if len(late) > 0 {
		t.Errorf("%d alerts in weeks 4-5 of a clean weekly series, first %v", len(late), late[0])
	}
}

func TestDetectorSwingAcrossBand(t *testing.T) {
	// A metric bad in both directions that swings from far above to far
	// below its band and back, point after point, is out of its band the
	// whole time: the run counts across sides and fires. A metric bad
	// only upwards sees just the upward points, never three in a row.
	h := history(50, 1, 11)
	swing := after(h, 60, 50, 1, 12, func(i int, v float64) float64 {
		if i >= 20 && i < 30 {
			if i%2 == 0 {
				return v + 30
			}
			return v - 30
		}
		return v
	})
	s := append(append([]metrics.Sample(nil), h...), swing...)
	for _, tc := range []struct {
		metric string
		want   int
	}{{"gpu_sm_util", 1}, {"tpot_ms", 0}} {
		d := NewDetector(DetectorOptions{})
		var fired []Alert
		for _, a := range feed(d, tc.metric, s) {
			if a.State == Firing && !a.Start.Before(swing[0].T) {
				fired = append(fired, a)
			}
		}
		if len(fired) != tc.want {
			t.Errorf("%s: %d alerts on the swing, want %d: %v", tc.metric, len(fired), tc.want, fired)
		}
		if tc.want == 1 && len(fired) == 1 && fired[0].Start != swing[20].T {
			t.Errorf("%s: alert starts %s, want the swing's first point %s", tc.metric, fired[0].Start, swing[20].T)
		}
	}
}

func TestDetectorRoutineBursts(t *testing.T) {
	// Eight days of a flat 5-minute series with three 20-minute bursts a
	// day at random hours (a batch job), then on the last day one burst
	// three times as deep. The first day's bursts alert; once the
	// series has shown it bursts several times a day, bursts like those
	// do not, and the deeper one still does. With the rule off, the late
	// bursts keep alerting.
	const perDay = 288
	rng := rand.New(rand.NewPCG(7, 7))
	n := 8 * perDay
	lift := make([]float64, n)
	burst := func(at int, size float64) {
		for i := at; i < at+4 && i < n; i++ {
			lift[i] = size
		}
	}
	for day := 0; day < 8; day++ {
		for _, q := range []int{0, 1, 2} {
			burst(day*perDay+q*96+rng.IntN(80), 40)
		}
	}
	deepAt := 7*perDay + 100
	for i := deepAt - 10; i < deepAt+16; i++ {
		lift[i] = 0
	}
	burst(deepAt, 120)
	s := gen(n, 5*time.Minute, 1, 3, func(time.Time) float64 { return 10 })
	for i := range s {
		s[i].V += lift[i]
	}
	late := s[4*perDay].T
	run := func(opts DetectorOptions) (early, lateBursts int, deep bool, st Stats) {
		d := NewDetector(opts)
		for _, a := range feed(d, "tpot_ms", s) {
			switch {
			case a.State != Firing:
			case a.Start.Equal(s[deepAt].T):
				deep = true
			case a.Start.Before(s[perDay].T):
				early++
			case !a.Start.Before(late):
				lateBursts++
			}
		}
		return early, lateBursts, deep, d.Stats("tpot_ms")
	}
	early, lateN, deep, st := run(DetectorOptions{})
	if early < 2 || lateN != 0 || !deep || st.Routine < 10 {
		t.Errorf("routine rule on: %d first-day alerts (want >= 2), %d alerts on days 5-8 (want 0), deep burst alerted %v (want true), %d routine excursions (want >= 10)",
			early, lateN, deep, st.Routine)
	}
	_, lateOff, deepOff, _ := run(DetectorOptions{RoutinePerDay: -1})
	if lateOff < 8 || !deepOff {
		t.Errorf("routine rule off: %d alerts on days 5-8 (want >= 8), deep burst alerted %v", lateOff, deepOff)
	}
}

func TestDetectorNightlyJob(t *testing.T) {
	// Ten days of a flat 5-minute series with one spike a night at about
	// 03:00 (within half an hour), a nightly job too narrow for the
	// daily seasonality; with For = 3 minutes one deep 5-minute sample
	// alerts alone. The first nights alert; once the spike has recurred
	// at that time on two days and at least half of the days seen, it is
	// routine. A like spike at 15:00 still alerts, and so does a nightly
	// spike three times as deep. With the rule off, every night alerts.
	const perDay = 288
	rng := rand.New(rand.NewPCG(9, 9))
	n := 10 * perDay
	lift := make([]float64, n)
	for day := 1; day < 10; day++ {
		size := 30.0
		if day == 9 {
			size = 90
		}
		lift[day*perDay+30+rng.IntN(12)] = size // 02:30..03:25
	}
	afternoon := 8*perDay + 180 // 15:00 on day 8
	lift[afternoon] = 30
	s := gen(n, 5*time.Minute, 1, 5, func(time.Time) float64 { return 50 })
	for i := range s {
		s[i].V += lift[i]
	}
	run := func(opts DetectorOptions) (nights []int, afternoonFired bool) {
		opts.For = 3 * time.Minute
		for _, a := range feed(NewDetector(opts), "tpot_ms", s) {
			if a.State != Firing {
				continue
			}
			day := int(a.Start.Sub(s[0].T) / (24 * time.Hour))
			if a.Start.Equal(s[afternoon].T) {
				afternoonFired = true
			} else {
				nights = append(nights, day)
			}
		}
		return nights, afternoonFired
	}
	nights, afternoonFired := run(DetectorOptions{})
	if len(nights) < 2 || nights[0] != 1 || nights[len(nights)-1] != 9 || !afternoonFired {
		t.Errorf("routine rule on: nightly alerts on days %v, want the first nights and the deep one on day 9; 15:00 spike alerted %v, want true", nights, afternoonFired)
	}
	for _, d := range nights {
		if d >= 4 && d < 9 {
			t.Errorf("routine rule on: the job alerted on day %d (all nights: %v), want it routine from day 4", d, nights)
		}
	}
	if off, _ := run(DetectorOptions{RoutinePerDay: -1}); len(off) != 9 {
		t.Errorf("routine rules off: nightly alerts on days %v, want all nine nights", off)
	}
}

func TestDetectorHeavyTailedBursts(t *testing.T) {
	// Ten days of a flat 5-minute series with a burst every three hours
	// at a random minute, its depth anywhere from 20 to 120 noise
	// standard deviations: a batch writer whose bursts vary far more
	// from one to the next than the band is wide. Once a week of such
	// bursts is behind it, a burst within their spread is routine
	// (judged by the band's width alone, most deep ones would keep
	// alerting, each deeper than nearly every earlier one). A burst
	// three times the deepest still alerts, and with the routine rules
	// off the bursts alert all along.
	const perDay = 288
	rng := rand.New(rand.NewPCG(4, 4))
	n := 10 * perDay
	lift := make([]float64, n)
	for start := 0; start+36 <= n; start += 36 { // every 3 hours
		lift[start+rng.IntN(36)] = 20 + 100*rng.Float64()
	}
	deep := 9*perDay + 100
	lift[deep] = 360
	s := gen(n, 5*time.Minute, 1, 5, func(time.Time) float64 { return 50 })
	for i := range s {
		s[i].V += lift[i]
	}
	lateAlerts := func(opts DetectorOptions) (n int, deepFired bool) {
		opts.For = 3 * time.Minute
		for _, a := range feed(NewDetector(opts), "tpot_ms", s) {
			switch {
			case a.State != Firing:
			case a.Start.Equal(s[deep].T):
				deepFired = true
			case a.Start.After(s[8*perDay].T):
				n++
			}
		}
		return n, deepFired
	}
	on, deepFired := lateAlerts(DetectorOptions{})
	off, _ := lateAlerts(DetectorOptions{RoutinePerDay: -1})
	if !deepFired {
		t.Error("a burst three times the deepest did not alert")
	}
	if on > 1 || off < 10 {
		t.Errorf("bursts alerting on the last two days: %d with the routine rules, %d without; want at most 1 and at least 10", on, off)
	}
}

func TestDetectorForCoversDuration(t *testing.T) {
	// With For = 3 minutes, a step fires after three points at 1-minute
	// data and after two at 5-minute and hourly data; with single-sample
	// alerts off (see TestDetectorSingleSampleSpansFor), a lone far point
	// never fires.
	for _, tc := range []struct {
		step time.Duration
		want int // points of the step when it fires
	}{{time.Minute, 3}, {5 * time.Minute, 2}, {time.Hour, 2}} {
		n := int(3 * 24 * time.Hour / tc.step)
		if n < 600 {
			n = 600 // hourly data: 25 days, enough to fit
		}
		at := n - 40
		s := gen(n, tc.step, 1, 5, func(time.Time) float64 { return 50 })
		s[at-21].V, s[at-20].V, s[at-19].V = 50, 90, 50 // a lone spike
		for i := at; i < at+10; i++ {
			s[i].V += 40
		}
		var fired []Alert
		for _, a := range feed(NewDetector(DetectorOptions{For: 3 * time.Minute, SingleZ: -1}), "tpot_ms", s) {
			if a.State == Firing && !a.Start.Before(s[at-25].T) {
				fired = append(fired, a)
			}
		}
		if len(fired) != 1 || !fired[0].Start.Equal(s[at].T) || !fired[0].At.Equal(s[at+tc.want-1].T) {
			t.Errorf("step %s: alerts %v, want one starting %s firing at point %d of the step (%s)",
				tc.step, fired, s[at].T, tc.want, s[at+tc.want-1].T)
		}
	}
}

func TestDetectorSingleSampleSpansFor(t *testing.T) {
	// With For = 3 minutes, one 5-minute sample spans the whole of For: a
	// lone point fires when it is SingleZ standard errors out, and not
	// when it is only beyond the band. At 1-minute data, or with
	// single-sample alerts off, the same far point does not fire.
	const n, spikeAt = 3000, 3000 - 40
	run := func(step time.Duration, spike float64, single float64) []Alert {
		s := gen(n, step, 1, 7, func(time.Time) float64 { return 50 })
		s[spikeAt].V = 50 + spike
		var fired []Alert
		for _, a := range feed(NewDetector(DetectorOptions{For: 3 * time.Minute, SingleZ: single}), "tpot_ms", s) {
			if a.State == Firing && !a.Start.Before(s[spikeAt-5].T) {
				fired = append(fired, a)
			}
		}
		return fired
	}
	if got := run(5*time.Minute, 12, 0); len(got) != 1 || !got[0].At.Equal(got[0].Start) || got[0].Z < 10 {
		t.Errorf("5-minute data, a 12-sigma point: alerts %v, want one firing on the point itself", got)
	}
	for _, tc := range []struct {
		name   string
		step   time.Duration
		spike  float64
		single float64
	}{
		{"5-minute data, a 4.5-sigma point", 5 * time.Minute, 4.5, 0},
		{"1-minute data, a 12-sigma point", time.Minute, 12, 0},
		{"5-minute data, single-sample alerts off", 5 * time.Minute, 12, -1},
	} {
		if got := run(tc.step, tc.spike, tc.single); len(got) != 0 {
			t.Errorf("%s: alerts %v, want none", tc.name, got)
		}
	}
	if z := equalTailZ(3, 3); math.Abs(z-5.85) > 0.01 {
		t.Errorf("equalTailZ(3, 3) = %.3f, want 5.85", z)
	}
	if z := equalTailZ(3, 1); math.Abs(z-3) > 1e-9 {
		t.Errorf("equalTailZ(3, 1) = %v, want 3", z)
	}
}

func TestDetectorExcursionMemoryBounded(t *testing.T) {
	d := NewDetector(DetectorOptions{})
	st := d.newSeries("tpot_ms")
	for i := 0; i < 3*maxExcursions; i++ {
		st.badStart, st.runPeak = int64(i*60), float64(i)
		d.noteExcursion(st, int64(i*60))
	}
	if len(st.excursions) != maxExcursions {
		t.Fatalf("remembers %d excursions, want at most %d", len(st.excursions), maxExcursions)
	}
	if last := st.excursions[len(st.excursions)-1]; last.peak != float64(3*maxExcursions-1) {
		t.Errorf("latest excursion lost: last kept has peak %g", last.peak)
	}
	// A week later the old ones are forgotten.
	st.badStart = int64(3*maxExcursions*60 + 8*86400)
	d.noteExcursion(st, st.badStart)
	if len(st.excursions) != 1 {
		t.Errorf("after a week, %d excursions remembered, want 1", len(st.excursions))
	}
}

func TestDetectorShiftForAndReturn(t *testing.T) {
	// An hourly series drops from 50 to 20 for a day and comes back. With
	// For set, the drop is one alert and a level shift after ShiftFor (4
	// hours at hourly data, not ShiftPoints = 240 hours), and the return
	// to the old level ends that episode: it raises no second alert.
	n := 600 // 25 days
	at := n - 60
	s := gen(n, time.Hour, 1, 7, func(time.Time) float64 { return 50 })
	for i := at; i < at+24; i++ {
		s[i].V -= 30
	}
	var ev []Alert
	for _, a := range feed(NewDetector(DetectorOptions{For: 3 * time.Minute}), "value", s) {
		if !a.At.Before(s[at-5].T) {
			ev = append(ev, a)
		}
	}
	if count(ev, Firing) != 1 {
		t.Fatalf("events %v, want one firing", ev)
	}
	shifted := -1
	for i, a := range ev {
		if a.State == Resolved && strings.Contains(a.Message, "level shift") {
			shifted = i
		}
	}
	if shifted < 0 || ev[shifted].At.After(s[at+6].T) {
		t.Errorf("events %v, want the alert resolved as a level shift within 6 hours of %s", ev, s[at].T)
	}
}

func TestDetectorClearForIsTime(t *testing.T) {
	// With For set, an alert ends once the series has been back inside
	// the band for ClearFor (5 minutes): at hourly data that is the first
	// point back, so an anomaly two hours after the first one is a new
	// alert rather than part of an alert held open for five hours.
	n := 600 // 25 days
	at := n - 40
	s := gen(n, time.Hour, 1, 7, func(time.Time) float64 { return 50 })
	for _, i := range []int{at, at + 1, at + 4, at + 5} {
		s[i].V += 40
	}
	var ev []Alert
	for _, a := range feed(NewDetector(DetectorOptions{For: 3 * time.Minute, SingleZ: -1}), "tpot_ms", s) {
		if !a.At.Before(s[at].T) {
			ev = append(ev, a)
		}
	}
	if count(ev, Firing) != 2 || ev[0].State != Firing || ev[1].State != Resolved || !ev[1].At.Equal(s[at+2].T) {
		t.Errorf("events %v, want two alerts, the first resolved at the first point back (%s)", ev, s[at+2].T)
	}
}

func TestDetectorShiftAlerts(t *testing.T) {
	// Six days of a flat 5-minute series, then the level moves by 20 (20
	// sigma) for good. MaxProb below any probability the series' record
	// can give keeps every run from alerting, as the budget, routine and
	// shape tests do for a step that looks like a routine burst; after
	// ShiftFor (4 h) the detector adopts the new level. With ShiftAlerts
	// that moment raises one alert, dated from the shift's first point,
	// which then ends; a shift in the good direction raises none.
	n := 6 * 288
	stepAt := 5*288 + 100
	var d *Detector
	run := func(size float64, shiftAlerts bool) []Alert {
		s := gen(n, 5*time.Minute, 1, 3, func(time.Time) float64 { return 100 })
		for i := stepAt; i < n; i++ {
			s[i].V += size
		}
		d = NewDetector(DetectorOptions{For: 3 * time.Minute, MaxProb: 1e-9, ShiftAlerts: shiftAlerts})
		var late []Alert
		for _, a := range feed(d, "tpot_ms", s) {
			if !a.At.Before(s[stepAt].T) {
				late = append(late, a)
			}
		}
		return late
	}
	off := run(20, false)
	if count(off, Firing) != 0 || count(off, Shifted) != 1 {
		t.Errorf("shift up, ShiftAlerts off: %v; want one shifted event and no alert", off)
	}
	on := run(20, true)
	if count(on, Firing) != 1 || count(on, Resolved) != 1 || count(on, Shifted) != 0 {
		t.Fatalf("shift up, ShiftAlerts on: %v; want one alert that resolves", on)
	}
	// The open shift alert's points are the new normal: later refits of
	// a seasonal model must not leave them out as an anomaly.
	for _, p := range d.series["tpot_ms"].hist {
		if p.anom {
			t.Fatalf("point at %s kept as an anomaly while the shift alert was open", time.Unix(p.t, 0).UTC())
		}
	}
	a := on[0]
	stepStart := t0.Add(time.Duration(stepAt) * 5 * time.Minute)
	if a.State != Firing || !a.Start.Equal(stepStart) || !strings.Contains(a.Message, "level shift") || a.At.Sub(a.Start) < 3*time.Hour {
		t.Errorf("shift alert %+v: want it firing from %s, at least 3 h later, with a level-shift message", a, stepStart)
	}
	if down := run(-20, true); count(down, Firing) != 0 || count(down, Shifted) != 1 {
		t.Errorf("shift down (the good direction of tpot_ms), ShiftAlerts on: %v; want one shifted event and no alert", down)
	}
}
