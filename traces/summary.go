package traces

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Summary limits.
const (
	// TopKernels is how many kernels Summary.Top lists.
	TopKernels = 20
	// LaneBins is the number of time bins in each stream lane of the
	// timeline, one SVG pixel each.
	LaneBins = 480
	// MaxLanes is how many streams (the busiest) get a timeline lane.
	MaxLanes = 16
)

// Summary is what Casebook stores and shows for an attached trace. It is
// plain data (JSON-encodable) and enough on its own to render the timeline
// and to compare with another trace.
type Summary struct {
	Format  Format   `json:"format"`
	Devices []Device `json:"devices,omitempty"`
	// Span is the trace's GPU span: first activity start to last activity
	// end over all devices.
	Span time.Duration `json:"span_ns"`
	// GPUTime is the sum of all activity durations (overlapping streams
	// count twice).
	GPUTime    time.Duration `json:"gpu_time_ns"`
	Activities int           `json:"activities"`
	// Categories has one entry per category, in display order, also when
	// the time is zero.
	Categories []CategoryTime `json:"categories"`
	// Top holds the TopKernels names with the most total time, descending.
	Top  []KernelStat `json:"top"`
	Idle IdleStats    `json:"idle"`
	// Lanes are the MaxLanes busiest streams, ordered by device and stream.
	Lanes []Lane `json:"lanes"`
	// Steps and StepTime come from ProfilerStep#N annotations (Chrome only).
	Steps    int           `json:"steps,omitempty"`
	StepTime time.Duration `json:"step_time_ns,omitempty"`
	// KernelLaunches, GraphLaunches and LaunchTime are host-side
	// cudaLaunchKernel / cudaGraphLaunch counts and time (Chrome only).
	KernelLaunches int           `json:"kernel_launches,omitempty"`
	GraphLaunches  int           `json:"graph_launches,omitempty"`
	LaunchTime     time.Duration `json:"launch_time_ns,omitempty"`
}

// CategoryTime is the GPU time of one category.
type CategoryTime struct {
	Category Category      `json:"category"`
	Time     time.Duration `json:"time_ns"`
	Count    int           `json:"count"`
	Share    float64       `json:"share"` // of Summary.GPUTime
}

// KernelStat aggregates all activities with one name.
type KernelStat struct {
	Name     string        `json:"name"`
	Category Category      `json:"category"`
	Count    int           `json:"count"`
	Total    time.Duration `json:"total_ns"`
	Mean     time.Duration `json:"mean_ns"`
	Max      time.Duration `json:"max_ns"`
	Share    float64       `json:"share"` // of Summary.GPUTime
}

// IdleStats measures GPU idle time: for each device, the part of the
// trace's GPU span covered by no activity on any of its streams. Gaps are
// the idle intervals between two busy intervals of one device (leading
// and trailing idle time count in Idle but are not gaps).
type IdleStats struct {
	Idle       time.Duration `json:"idle_ns"` // summed over devices
	Busy       time.Duration `json:"busy_ns"` // summed over devices
	Share      float64       `json:"share"`   // Idle / (devices x Span)
	Gaps       int           `json:"gaps"`    // number of gaps
	MeanGap    time.Duration `json:"mean_gap_ns"`
	LongestGap time.Duration `json:"longest_gap_ns"`
	// SmallGapTime is the idle time in gaps shorter than SmallGap: the
	// launch latency between back-to-back kernels. The rest of the gap time
	// is the host stalling (scheduling, input preparation, synchronisation).
	SmallGapTime time.Duration `json:"small_gap_ns"`
	Devices      int           `json:"devices"`
}

// SmallGap separates launch-latency gaps from host stalls in IdleStats.
const SmallGap = 20 * time.Microsecond

// Lane is one stream's row of the timeline. Bins has LaneBins letters, one
// per equal slice of the GPU span: the category code (see CategoryCode) with
// the most time in that slice, or '.' when the stream is idle there.
type Lane struct {
	Device int           `json:"device"`
	Stream int           `json:"stream"`
	Busy   time.Duration `json:"busy_ns"`
	Count  int           `json:"count"`
	Top    string        `json:"top"` // the kernel with the most time on this stream
	Bins   string        `json:"bins"`
}

// CategoryCode returns the one-letter code of c used in Lane.Bins.
func CategoryCode(c Category) byte { return categoryCodes[c.index()] }

// CodeCategory returns the category of a Lane.Bins letter and false for
// the idle mark or an unknown letter.
func CodeCategory(code byte) (Category, bool) {
	for i := 0; i < len(categoryCodes); i++ {
		if categoryCodes[i] == code {
			return categories[i], true
		}
	}
	return "", false
}

func compareActivities(x, y Activity) int {
	if c := cmp.Compare(x.Device, y.Device); c != 0 {
		return c
	}
	if c := cmp.Compare(x.Start, y.Start); c != 0 {
		return c
	}
	return cmp.Compare(x.Stream, y.Stream)
}

func sortActivities(a []Activity) { slices.SortFunc(a, compareActivities) }

// Summarize computes the Summary of t. A Trace from the parsers is used as
// is; one assembled by hand is tolerated: unsorted activities are sorted
// in a copy, and missing name categories are classified.
func Summarize(t *Trace) Summary {
	if len(t.NameCategory) != len(t.Names) || !slices.IsSortedFunc(t.Activities, compareActivities) {
		fixed := *t
		fixed.Activities = slices.Clone(t.Activities)
		sortActivities(fixed.Activities)
		fixed.NameCategory = make([]Category, len(t.Names))
		for i, n := range t.Names {
			fixed.NameCategory[i] = Classify(n)
		}
		for _, a := range fixed.Activities {
			if a.Kind != KindKernel && int(a.Name) < len(t.Names) && a.Name >= 0 {
				fixed.NameCategory[a.Name] = CategoryMemory
			}
		}
		t = &fixed
	}
	s := Summary{
		Format: t.Format, Devices: t.Devices, Activities: len(t.Activities),
		Steps: t.Steps, StepTime: t.StepTime,
		KernelLaunches: t.KernelLaunches, GraphLaunches: t.GraphLaunches, LaunchTime: t.LaunchTime,
	}
	s.Categories = make([]CategoryTime, len(categories))
	for i, c := range categories {
		s.Categories[i].Category = c
	}
	if len(t.Activities) == 0 {
		return s
	}
	origin, last := t.Activities[0].Start, t.Activities[0].End
	type nameAgg struct {
		count      int
		total, max int64
	}
	byName := make([]nameAgg, len(t.Names))
	type streamKey struct{ device, stream int32 }
	type streamAgg struct {
		busy  int64
		count int
		names map[int32]int64
	}
	byStream := make(map[streamKey]*streamAgg)
	var total int64
	for _, a := range t.Activities {
		origin = min(origin, a.Start)
		last = max(last, a.End)
		d := a.End - a.Start
		total += d
		ci := t.NameCategory[a.Name].index()
		s.Categories[ci].Time += time.Duration(d)
		s.Categories[ci].Count++
		n := &byName[a.Name]
		n.count++
		n.total += d
		n.max = max(n.max, d)
		k := streamKey{a.Device, a.Stream}
		sa := byStream[k]
		if sa == nil {
			sa = &streamAgg{names: make(map[int32]int64)}
			byStream[k] = sa
		}
		sa.busy += d
		sa.count++
		if len(sa.names) < 4096 {
			sa.names[a.Name] += d
		}
	}
	s.Span = time.Duration(last - origin)
	s.GPUTime = time.Duration(total)
	for i := range s.Categories {
		s.Categories[i].Share = ratio(int64(s.Categories[i].Time), total)
	}

	// Top kernels.
	ids := make([]int32, 0, len(byName))
	for i := range byName {
		if byName[i].count > 0 {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := cmp.Compare(byName[b].total, byName[a].total); c != 0 {
			return c
		}
		return cmp.Compare(t.Names[a], t.Names[b])
	})
	for _, id := range ids[:min(len(ids), TopKernels)] {
		n := byName[id]
		s.Top = append(s.Top, KernelStat{
			Name: t.Names[id], Category: t.NameCategory[id], Count: n.count,
			Total: time.Duration(n.total), Mean: time.Duration(n.total / int64(n.count)),
			Max: time.Duration(n.max), Share: ratio(n.total, total),
		})
	}

	s.Idle = idleStats(t.Activities, origin, last)

	// Lanes for the busiest streams.
	keys := make([]streamKey, 0, len(byStream))
	for k := range byStream {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b streamKey) int {
		if c := cmp.Compare(byStream[b].busy, byStream[a].busy); c != 0 {
			return c
		}
		if c := cmp.Compare(a.device, b.device); c != 0 {
			return c
		}
		return cmp.Compare(a.stream, b.stream)
	})
	keys = keys[:min(len(keys), MaxLanes)]
	slices.SortFunc(keys, func(a, b streamKey) int {
		if c := cmp.Compare(a.device, b.device); c != 0 {
			return c
		}
		return cmp.Compare(a.stream, b.stream)
	})
	laneIdx := make(map[streamKey]int, len(keys))
	occ := make([][LaneBins][len(categories)]float64, len(keys))
	for i, k := range keys {
		laneIdx[k] = i
	}
	span := float64(last - origin)
	for _, a := range t.Activities {
		li, ok := laneIdx[streamKey{a.Device, a.Stream}]
		if !ok || span <= 0 {
			continue
		}
		ci := t.NameCategory[a.Name].index()
		x0 := float64(a.Start-origin) / span * LaneBins
		x1 := float64(a.End-origin) / span * LaneBins
		for b := int(x0); b < LaneBins && float64(b) < x1; b++ {
			lo, hi := max(x0, float64(b)), min(x1, float64(b+1))
			if hi > lo {
				occ[li][b][ci] += hi - lo
			} else if x1 == x0 { // zero-length activity: mark its bin faintly
				occ[li][b][ci] += 1e-9
			}
		}
	}
	for i, k := range keys {
		sa := byStream[k]
		bins := make([]byte, LaneBins)
		for b := range bins {
			best, bestV, sum := -1, 0.0, 0.0
			for c, v := range occ[i][b] {
				sum += v
				if v > bestV {
					best, bestV = c, v
				}
			}
			if best < 0 || sum < 0.01 {
				bins[b] = '.'
			} else {
				bins[b] = categoryCodes[best]
			}
		}
		var topName int32 = -1
		var topT int64 = -1
		for id, d := range sa.names {
			if d > topT || (d == topT && t.Names[id] < t.Names[topName]) {
				topName, topT = id, d
			}
		}
		lane := Lane{Device: int(k.device), Stream: int(k.stream), Busy: time.Duration(sa.busy), Count: sa.count, Bins: string(bins)}
		if topName >= 0 {
			lane.Top = t.Names[topName]
		}
		s.Lanes = append(s.Lanes, lane)
	}
	return s
}

// idleStats merges the busy intervals of each device (activities are
// sorted by device, then start) and measures the idle time within
// [origin, last].
func idleStats(acts []Activity, origin, last int64) IdleStats {
	var st IdleStats
	span := last - origin
	var idle, busy, gapSum, longest, small int64
	for i := 0; i < len(acts); {
		dev := acts[i].Device
		st.Devices++
		bs, be := acts[i].Start, acts[i].End
		var devBusy int64
		j := i + 1
		for ; j < len(acts) && acts[j].Device == dev; j++ {
			a := acts[j]
			if a.Start > be {
				devBusy += be - bs
				gap := a.Start - be
				st.Gaps++
				gapSum += gap
				if gap < int64(SmallGap) {
					small += gap
				}
				longest = max(longest, gap)
				bs, be = a.Start, a.End
				continue
			}
			be = max(be, a.End)
		}
		devBusy += be - bs
		busy += devBusy
		idle += span - devBusy
		i = j
	}
	st.Idle = time.Duration(idle)
	st.Busy = time.Duration(busy)
	st.Share = ratio(idle, span*int64(st.Devices))
	st.LongestGap = time.Duration(longest)
	st.SmallGapTime = time.Duration(small)
	if st.Gaps > 0 {
		st.MeanGap = time.Duration(gapSum / int64(st.Gaps))
	}
	return st
}

func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Encode is the summary as the archive stores it: JSON.
func (s Summary) Encode() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("traces: encode summary: %w", err)
	}
	return b, nil
}

// DecodeSummary reads a summary Encode stored. A document that is not a
// summary (not a JSON object, or with fields of the wrong type) is an
// error.
func DecodeSummary(b []byte) (Summary, error) {
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return Summary{}, fmt.Errorf("traces: decode summary: %w", err)
	}
	return s, nil
}
