package traces

import (
	"bytes"
	"fmt"
	"html"
	"strconv"
	"time"
)

// Timeline geometry in SVG pixels. The image has a fixed width and a
// height that depends only on the number of lanes (at most MaxLanes).
const (
	timelineLabelW  = 120
	timelineLaneH   = 14
	timelineLaneGap = 4
	timelineWidth   = timelineLabelW + LaneBins + 10
)

// categoryColors are the fills of the timeline, by category display order.
var categoryColors = [...]string{
	"#4e79a7", // gemm
	"#e15759", // attention
	"#76b7b2", // normalization
	"#f28e2b", // activation
	"#edc948", // rotary
	"#b07aa1", // sampling
	"#59a14f", // communication
	"#9c755f", // memcpy
	"#bab0ac", // other
}

// CategoryColor returns the fill colour the timeline uses for c.
func CategoryColor(c Category) string { return categoryColors[c.index()] }

// TimelineSVG renders the summary's stream lanes as a self-contained SVG
// element: one row per lane, kernels coloured by category, a time axis and
// a legend. Every piece of text from the trace is escaped, so the result is
// safe to embed in an HTML page as is. It is empty when there are no lanes.
func (s *Summary) TimelineSVG() []byte {
	if len(s.Lanes) == 0 {
		return nil
	}
	lanesH := len(s.Lanes) * (timelineLaneH + timelineLaneGap)
	axisY := 8 + lanesH
	legendY := axisY + 22
	// Lay the legend out first: it wraps onto a second row when needed.
	type item struct{ x, y int }
	items := make([]item, len(categories))
	lx, ly := 4, legendY
	for i, c := range categories {
		w := 16 + 6*len(c.Title()) + 6
		if lx+w > timelineWidth {
			lx, ly = 4, ly+16
		}
		items[i] = item{lx, ly}
		lx += w
	}
	height := ly + 18
	var b bytes.Buffer
	// Presentation attributes only, no <style> or style="": the page's
	// Content-Security-Policy need not allow inline styles.
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="trace-timeline" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="GPU timeline by stream" font-family="sans-serif" font-size="10">`,
		timelineWidth, height, timelineWidth, height)
	for i, l := range s.Lanes {
		y := 8 + i*(timelineLaneH+timelineLaneGap)
		label := "GPU " + strconv.Itoa(l.Device) + " · stream " + strconv.Itoa(l.Stream)
		fmt.Fprintf(&b, `<g><title>%s: %d activities, busy %s; most time in %s</title>`,
			esc(label), l.Count, fmtDur(l.Busy), esc(truncate(l.Top, 300)))
		fmt.Fprintf(&b, `<text x="4" y="%d" fill="#333">%s</text>`, y+timelineLaneH-3, esc(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4"/>`, timelineLabelW, y, LaneBins, timelineLaneH)
		bins := l.Bins
		for x := 0; x < len(bins) && x < LaneBins; {
			c := bins[x]
			end := x + 1
			for end < len(bins) && end < LaneBins && bins[end] == c {
				end++
			}
			if cat, ok := CodeCategory(c); ok {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`,
					timelineLabelW+x, y, end-x, timelineLaneH, CategoryColor(cat))
			}
			x = end
		}
		b.WriteString(`</g>`)
	}
	// Axis: start, middle and end of the span.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, timelineLabelW, axisY, timelineLabelW+LaneBins, axisY)
	for _, f := range []float64{0, 0.5, 1} {
		x := timelineLabelW + int(f*LaneBins)
		anchor := "middle"
		switch f {
		case 0:
			anchor = "start"
		case 1:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="%s" fill="#333">%s</text>`, x, axisY+12, anchor,
			esc(fmtDur(time.Duration(f*float64(s.Span)))))
	}
	// Legend.
	for i, c := range categories {
		it := items[i]
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" fill="#333">%s</text>`,
			it.x, it.y, CategoryColor(c), it.x+13, it.y+9, esc(c.Title()))
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}

func esc(s string) string { return html.EscapeString(s) }

// fmtDur formats a duration compactly for axis labels (µs, ms or s).
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms"
	default:
		return strconv.FormatFloat(float64(d)/1e9, 'f', 3, 64) + "s"
	}
}
