package forecast

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestNoveltyFindsNewShapes(t *testing.T) {
	// A triangle wave of period 48 with a little noise: every stretch
	// has near matches one period back, so about the share 1 - rank of
	// stretches lies beyond the rank quantile, as for any stationary
	// series. A flat stretch at the wave's middle, which the wave never
	// holds, lies far beyond it.
	rng := rand.New(rand.NewPCG(3, 3))
	wave := func(i int) float64 { return math.Abs(float64(i%48-24)) + 0.3*rng.NormFloat64() }
	n := newNovelty(6, 10080, 0.95)
	young, beyond, judged := 0, 0, 0
	for i := range 3000 {
		r := n.add(wave(i))
		switch {
		case math.IsNaN(r):
			young++
		case i >= 1000:
			judged++
			if r > 1 {
				beyond++
			}
		}
	}
	// Two stretches before the first distance, then the record's
	// minimum, each distance entering it a stretch late.
	if want := 2*6 - 1 + noveltyMinRecord + 6 - 1; young != want {
		t.Errorf("%d ratios before the record was judged, want %d", young, want)
	}
	if share := float64(beyond) / float64(judged); share > 0.1 {
		t.Errorf("%.3f of the wave's stretches beyond the 0.95 quantile, want about 0.05", share)
	}
	peak := 0.0
	for range 12 {
		peak = math.Max(peak, n.add(12+0.3*rng.NormFloat64()))
	}
	if peak < 3 {
		t.Errorf("a flat stretch the wave never holds: novelty %.2f, want at least 3", peak)
	}
}

func TestNoveltyKeepsItsRecordBounded(t *testing.T) {
	// The record stays within its bounds, and no slice grows past the
	// size it was given: a series costs the same memory all its life.
	n := newNovelty(2, 100, 0.9)
	caps := []int{cap(n.vals), cap(n.row), cap(n.dists), cap(n.sorted)}
	for i := range 1000 {
		n.add(float64(i % 7))
	}
	if len(n.vals) > 100+100/8 || len(n.sorted) > 100 {
		t.Errorf("kept %d values and %d distances, want at most 112 and 100", len(n.vals), len(n.sorted))
	}
	if now := []int{cap(n.vals), cap(n.row), cap(n.dists), cap(n.sorted)}; !slices.Equal(now, caps) {
		t.Errorf("capacities of values, row, distances, record grew from %v to %v", caps, now)
	}
}

func TestDetectorNoveltyGate(t *testing.T) {
	// Ten days of a flat 5-minute series with bursts of one shape at
	// random times, four a day, and the routine rule off, so the band
	// alerts on each. With the shape test, a burst like the earlier ones
	// is familiar and most do not alert; a drop to zero, which the series
	// never made, still does.
	const perDay = 288
	rng := rand.New(rand.NewPCG(5, 5))
	n := 10 * perDay
	s := gen(n, 5*time.Minute, 1, 9, func(time.Time) float64 { return 50 })
	for q := range 40 {
		at := q*perDay/4 + 10 + rng.IntN(perDay/4-20)
		s[at].V, s[at+1].V, s[at+2].V = 80, 90, 80
	}
	drop := 9*perDay + perDay/2
	for i := drop; i < drop+6; i++ {
		s[i].V = 0
	}
	run := func(opts DetectorOptions) (late int, dropFired bool) {
		opts.For, opts.RoutinePerDay = 3*time.Minute, -1
		for _, a := range feed(NewDetector(opts), "value", s) {
			switch {
			case a.State != Firing:
			case !a.Start.Before(s[drop].T) && a.Start.Before(s[drop+6].T):
				dropFired = true
			case a.Start.After(s[5*perDay].T):
				late++
			}
		}
		return late, dropFired
	}
	off, offDrop := run(DetectorOptions{})
	on, onDrop := run(DetectorOptions{NoveltyRank: 0.98})
	t.Logf("bursts alerting in the last five days: %d without the shape test, %d with it", off, on)
	if off < 15 || on > off/4 {
		t.Errorf("bursts alerting in the last five days: %d without the shape test, %d with it; want at least 15 and at most a quarter of that", off, on)
	}
	if !offDrop || !onDrop {
		t.Errorf("the drop to zero alerted: %v without the shape test, %v with it; want both", offDrop, onDrop)
	}
}

func TestDetectorNoveltyAlone(t *testing.T) {
	// A series that oscillates with a two-hour period (too fast for the
	// daily terms, so the band spans the swing) stops moving for three
	// hours at its middle: in band all along, so only the shape test
	// sees it, and raises one alert for the whole stretch.
	const perDay = 288
	n := 10 * perDay
	s := gen(n, 5*time.Minute, 0.5, 11, func(t time.Time) float64 {
		return 50 + 10*math.Sin(2*math.Pi*float64(t.Unix()%7200)/7200)
	})
	flat := 9 * perDay
	for i := flat; i < flat+36; i++ {
		s[i].V = 50 + 0.5*math.Sin(float64(i))
	}
	alerts := func(opts DetectorOptions) (before, during []Alert) {
		opts.For = 3 * time.Minute
		for _, a := range feed(NewDetector(opts), "value", s) {
			switch {
			case a.State != Firing || a.At.Before(s[2*perDay].T):
			case !a.At.Before(s[flat].T) && a.At.Before(s[flat+36].T):
				during = append(during, a)
			case a.At.Before(s[flat].T):
				before = append(before, a)
			}
		}
		return before, during
	}
	if _, during := alerts(DetectorOptions{}); len(during) != 0 {
		t.Fatalf("the band alone alerted on the flat stretch: %v; the test needs a stretch in band", during)
	}
	before, during := alerts(DetectorOptions{NoveltyRank: 0.98, NoveltyAlone: 2})
	if len(during) != 1 || !strings.Contains(during[0].Message, "shape") {
		t.Errorf("alerts during the flat stretch with NoveltyAlone: %v, want one from the shape test", during)
	}
	if len(before) > 1 {
		t.Errorf("%d alerts on days 2-9 of the oscillation, want at most one", len(before))
	}
}

func TestNoveltySlidingMatchesDirect(t *testing.T) {
	// The distances slide from one point to the next; they must equal
	// the ones computed afresh, across trims of the record and on a
	// series far from zero, where running sums lose digits first.
	rng := rand.New(rand.NewPCG(8, 8))
	n := newNovelty(5, 300, 0.9)
	n.older = 7
	v := 1e6
	for i := range 3000 {
		v += rng.NormFloat64()
		if i%97 == 0 {
			v += 50 // a jump now and then, so nearest matches change
		}
		n.add(v)
		if len(n.vals) < 2*n.m {
			continue
		}
		x, m := n.vals, n.m
		last := len(x) - 1
		want, wantOld := math.Inf(1), math.Inf(1)
		for s := m - 1; s <= last-m; s++ {
			d := sqDist(x, last, s, m)
			want = math.Min(want, d)
			if s <= last-m-n.older {
				wantOld = math.Min(wantOld, d)
			}
		}
		want, wantOld = math.Sqrt(want), math.Sqrt(wantOld)
		if got := n.dists[len(n.dists)-1]; math.Abs(got-want) > 1e-6*math.Max(1, want) {
			t.Fatalf("point %d: sliding distance %g, computed afresh %g", i, got, want)
		}
		// The distance to stretches ending older points further back.
		if math.IsNaN(n.oldRatio) {
			continue
		}
		q := n.sorted[min(len(n.sorted)-1, int(n.rank*float64(len(n.sorted))))]
		if got := n.oldRatio * q; math.Abs(got-wantOld) > 1e-6*math.Max(1, wantOld) {
			t.Fatalf("point %d: sliding distance to older stretches %g, computed afresh %g", i, got, wantOld)
		}
	}
}

func TestNoveltySurvivesHugeValues(t *testing.T) {
	// A value whose square overflows makes the distances of the stretches
	// around it infinite: those stretches are novel, the record keeps its
	// order and size, and once the value has left every stretch compared,
	// the ratios are finite again.
	rng := rand.New(rand.NewPCG(9, 9))
	n := newNovelty(4, 400, 0.9)
	var after []float64
	for i := range 2000 {
		v := 10 + rng.NormFloat64()
		if i == 1000 {
			v = 1e300
		}
		r := n.add(v)
		if i > 1000+400+400/8 {
			after = append(after, r)
		}
	}
	if !sort.Float64sAreSorted(n.sorted) || len(n.sorted) > 400 {
		t.Fatalf("record of %d distances, sorted %v; want at most 400 in order", len(n.sorted), sort.Float64sAreSorted(n.sorted))
	}
	for i, r := range after {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			t.Fatalf("ratio %d after the huge value left the record: %g, want finite", i, r)
		}
	}
}

func TestDetectorNoveltySustain(t *testing.T) {
	// The oscillation of TestDetectorNoveltyAlone makes one point odd on
	// day 8 (its crest at the trough, still in band) and stops moving
	// for three hours on day 9. The odd point makes one span of novel
	// stretches; the flat line keeps making them. With NoveltySustain 3
	// only the flat line alerts.
	const perDay = 288
	n := 10 * perDay
	s := gen(n, 5*time.Minute, 0.5, 11, func(t time.Time) float64 {
		return 50 + 10*math.Sin(2*math.Pi*float64(t.Unix()%7200)/7200)
	})
	odd := 8*perDay + 6 // a quarter period in: the crest
	s[odd].V = 40
	flat := 9 * perDay
	for i := flat; i < flat+36; i++ {
		s[i].V = 50 + 0.5*math.Sin(float64(i))
	}
	shapes := func(sustain float64) (atOdd, atFlat int) {
		opts := DetectorOptions{For: 3 * time.Minute, NoveltyRank: 0.98, NoveltyAlone: 2, NoveltySustain: sustain}
		for _, a := range feed(NewDetector(opts), "value", s) {
			if a.State != Firing || !strings.Contains(a.Message, "shape") {
				continue
			}
			switch {
			case !a.At.Before(s[odd].T) && a.At.Before(s[odd+12].T):
				atOdd++
			case !a.At.Before(s[flat].T) && a.At.Before(s[flat+36].T):
				atFlat++
			}
		}
		return atOdd, atFlat
	}
	if atOdd, _ := shapes(0); atOdd != 1 {
		t.Fatalf("%d shape alerts at the odd point without NoveltySustain, want 1: the test needs a point the shape test alone flags", atOdd)
	}
	atOdd, atFlat := shapes(3)
	if atOdd != 0 {
		t.Errorf("%d shape alerts at the odd point with NoveltySustain 3, want 0", atOdd)
	}
	if atFlat != 1 {
		t.Errorf("%d shape alerts during the flat stretch with NoveltySustain 3, want 1", atFlat)
	}
}
