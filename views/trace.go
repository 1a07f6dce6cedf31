package views

import (
	"math"
	"strconv"
	"time"
)

// TracesView is the kernel-trace section of the incident page: the upload
// form, the attached traces, the summary of the latest incident trace, its
// comparison with the latest baseline trace, and the kernel evidence.
type TracesView struct {
	// Enabled is false when the archive cannot store traces; the section
	// is then left out.
	Enabled  bool
	ReadOnly bool
	// Action is the upload form's URL.
	Action string
	// MaxUpload names the upload size limit ("512 MiB").
	MaxUpload string
	Uploads   []TraceRow
	// Current summarises the latest incident trace; nil when none.
	Current *TraceSummaryView
	// Baseline names the latest baseline trace; Compare is set when both
	// it and Current exist.
	Baseline *TraceRow
	Compare  *TraceCompareView
	Evidence []TraceEvidenceRow
	// Problems are stored traces that could not be read.
	Problems []string
}

// TraceRow is one attached trace in the upload list.
type TraceRow struct {
	ID         int64
	Role       string // "incident" or "baseline"
	Name       string
	Kind       string // "chrome", "chrome+gzip", "nsight"
	Size       int64
	UploadedAt time.Time
	// Shown marks the traces the summary and comparison are made of.
	Shown bool
	// DeleteAction is the URL that removes the trace.
	DeleteAction string
}

// SizeText renders the upload size in binary units.
func (r TraceRow) SizeText() string { return FormatBytes(r.Size) }

// TraceSummaryView is one trace's summary, reshaped for the page.
type TraceSummaryView struct {
	Name       string
	Format     string
	Devices    string // "2 × NVIDIA H100 80GB HBM3", or ""
	Span       time.Duration
	GPUTime    time.Duration
	Activities int
	Steps      int
	StepTime   time.Duration
	Categories []TraceCategoryRow // categories with time, in display order
	Top        []TraceKernelRow
	IdleShare  float64
	Gaps       int
	MeanGap    time.Duration
	LongestGap time.Duration
	// LaunchGapTime is idle time in launch-sized gaps (under 20µs).
	LaunchGapTime time.Duration
	// Timeline is the per-stream timeline SVG from the traces package,
	// which escapes every piece of trace text in it.
	Timeline []byte
}

// TraceCategoryRow is one bar of the GPU-time-by-category chart.
type TraceCategoryRow struct {
	Category string // stable id, e.g. "attention"
	Title    string
	Color    string // fill colour, "#rrggbb"
	Time     time.Duration
	Count    int
	Share    float64 // of GPU time
}

// TraceBarWidth is the width in pixels of a full (100%) category bar.
const TraceBarWidth = 240

// BarWidth is the bar's length in pixels (at least 1 for any time).
func (r TraceCategoryRow) BarWidth() string {
	w := int(math.Round(r.Share * TraceBarWidth))
	if w < 1 && r.Time > 0 {
		w = 1
	}
	return strconv.Itoa(min(max(w, 0), TraceBarWidth))
}

// TraceKernelRow is one kernel of the top-kernels table.
type TraceKernelRow struct {
	Name     string
	Category string
	Count    int
	Total    time.Duration
	Mean     time.Duration
	Max      time.Duration
	Share    float64
}

// TraceCompareView compares the incident trace with the baseline trace.
type TraceCompareView struct {
	BaseName string
	// Headline is the largest change at a glance ("Attention + KV time
	// doubled per step"); empty when nothing moved by 10% or more.
	Headline string
	// Unit says how times were made comparable ("per profiler step").
	Unit            string
	Rows            []TraceDeltaRow
	Total           TraceDeltaRow
	BaseIdleShare   float64
	TargetIdleShare float64
}

// TraceDeltaRow compares one category.
type TraceDeltaRow struct {
	Category string
	Title    string
	Base     time.Duration
	Target   time.Duration
	Delta    time.Duration
	// Ratio is Target / Base when HasBase.
	Ratio       float64
	HasBase     bool
	BaseShare   float64
	TargetShare float64
}

// RatioText renders the ratio ("2.0×", "new" when the baseline had none).
func (r TraceDeltaRow) RatioText() string {
	switch {
	case !r.HasBase && r.Target > 0:
		return "new"
	case !r.HasBase:
		return "–"
	}
	return strconv.FormatFloat(r.Ratio, 'f', 2, 64) + "×"
}

// DeltaText renders the signed change.
func (r TraceDeltaRow) DeltaText() string {
	if r.Delta >= 0 {
		return "+" + FormatNanos(r.Delta)
	}
	return "−" + FormatNanos(-r.Delta)
}

// Status colours a row: a category holding at least 5% of the incident
// trace's GPU time that grew by half or more (or appeared) is a warning,
// one that at least doubled is critical.
func (r TraceDeltaRow) Status() Status {
	grew := r.Ratio
	if !r.HasBase && r.Target > 0 {
		grew = math.Inf(1)
	}
	switch {
	case r.TargetShare < 0.05:
		return StatusOK
	case grew >= 2:
		return StatusCritical
	case grew >= 1.5:
		return StatusWarning
	}
	return StatusOK
}

// TraceEvidenceRow is one finding derived from the kernel traces.
type TraceEvidenceRow struct {
	Cause      string // root-cause id the finding supports
	CauseTitle string
	Key        string // "trace.idle_share" etc.
	Text       string
}

// FormatNanos renders a kernel-scale duration with three significant
// digits: "850 ns", "12.4 µs", "3.07 ms", "1.25 s".
func FormatNanos(d time.Duration) string {
	f := float64(d)
	abs := math.Abs(f)
	switch {
	case abs < 1e3:
		return strconv.FormatInt(int64(d), 10) + " ns"
	case abs < 1e6:
		return sig3(f/1e3) + " µs"
	case abs < 1e9:
		return sig3(f/1e6) + " ms"
	}
	return sig3(f/1e9) + " s"
}

func sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// FormatBytes renders a byte count in binary units ("512 MiB", "20.0 KiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	suffix := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[i]
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + suffix
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + suffix
}
