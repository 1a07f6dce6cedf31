package views

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/casebook/casebook/metrics"
)

// Size of the link-preview picture: the 1.91:1 shape that Open Graph
// consumers (Slack, Teams, Feishu, X) show as a large card.
const (
	PreviewWidth  = 1200
	PreviewHeight = 630
)

// Preview is the link-preview picture of an incident: its diagnosed cause
// and scope as text, and the key chart (the metric of the first evidence
// line) over the archived window with the trigger marked.
type Preview struct {
	Title    string // the diagnosed cause
	Subtitle string // scope, severity, time
	Status   Status
	Metric   string // catalog id of the key chart; "" draws no chart
	Samples  []metrics.Sample
	// Baseline is the metric's baseline mean, drawn as a dashed line when
	// HasBaseline.
	Baseline    float64
	HasBaseline bool
	Start, End  time.Time
	Marker      time.Time // the trigger; zero for none
}

// Colours of the preview, the console's palette.
var (
	pvBackground = color.RGBA{0xff, 0xff, 0xff, 0xff}
	pvText       = color.RGBA{0x1b, 0x1f, 0x24, 0xff}
	pvMuted      = color.RGBA{0x5b, 0x65, 0x72, 0xff}
	pvGrid       = color.RGBA{0xe6, 0xe9, 0xed, 0xff}
	pvBaseline   = color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	pvMarker     = color.RGBA{0xb3, 0x26, 0x1e, 0xff}
)

// statusColour is the colour of a status, as the stylesheet's.
func statusColour(s Status) color.RGBA {
	switch s {
	case StatusCritical:
		return color.RGBA{0xb3, 0x26, 0x1e, 0xff}
	case StatusWarning:
		return color.RGBA{0xa3, 0x5a, 0x00, 0xff}
	case StatusOK:
		return color.RGBA{0x1c, 0x7c, 0x3c, 0xff}
	case StatusInfo:
		return color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	}
	return color.RGBA{0x7a, 0x83, 0x8f, 0xff}
}

// Chart area of the preview.
const (
	pvLeft, pvRight  = 60, PreviewWidth - 60
	pvTop, pvBottom  = 230, PreviewHeight - 50
	pvLineRadius     = 2.5
	pvTitleScale     = 4
	pvSubtitleScale  = 2
	pvMaxTitleRunes  = (PreviewWidth - 2*pvLeft) / (7 * pvTitleScale)
	pvMaxLabelRunes  = (PreviewWidth - 2*pvLeft) / (7 * pvSubtitleScale)
	pvDash, pvDashOn = 12, 7
)

// RenderPreview draws p as a PNG of PreviewWidth × PreviewHeight pixels.
// It never fails on odd data (no samples, NaNs, a flat line); only
// writing can fail.
func RenderPreview(w io.Writer, p Preview) error {
	img := image.NewRGBA(image.Rect(0, 0, PreviewWidth, PreviewHeight))
	fill(img, img.Bounds(), pvBackground)
	st := statusColour(p.Status)
	fill(img, image.Rect(0, 0, PreviewWidth, 16), st)

	drawText(img, pvLeft, 40, clip(p.Title, pvMaxTitleRunes), pvTitleScale, pvText)
	drawText(img, pvLeft, 40+13*pvTitleScale+14, clip(p.Subtitle, pvMaxLabelRunes), pvSubtitleScale, pvMuted)
	if p.Metric != "" {
		label := MetricLabel(p.Metric)
		if v, ok := lastFinite(p.Samples); ok {
			label += " " + FormatValue(p.Metric, v)
		}
		if p.HasBaseline {
			label += " (baseline " + FormatValue(p.Metric, p.Baseline) + ")"
		}
		drawText(img, pvLeft, 40+13*pvTitleScale+14+13*pvSubtitleScale+12, clip(label, pvMaxLabelRunes), pvSubtitleScale, st)
		drawChart(img, p, st)
	}
	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("views: preview png: %w", err)
	}
	return nil
}

func drawChart(img *image.RGBA, p Preview, st color.RGBA) {
	for i := 0; i <= 4; i++ { // horizontal grid
		y := pvTop + i*(pvBottom-pvTop)/4
		fill(img, image.Rect(pvLeft, y, pvRight, y+1), pvGrid)
	}
	span := p.End.Sub(p.Start).Seconds()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range p.Samples {
		if finite(s.V) {
			lo, hi = math.Min(lo, s.V), math.Max(hi, s.V)
		}
	}
	if p.HasBaseline && finite(p.Baseline) {
		lo, hi = math.Min(lo, p.Baseline), math.Max(hi, p.Baseline)
	}
	if !(span > 0) || math.IsInf(lo, 0) {
		return // nothing to scale by: the grid stays empty
	}
	if hi-lo < 1e-9*math.Max(1, math.Abs(hi)) {
		lo, hi = lo-1, hi+1 // a flat line sits in the middle
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	x := func(t time.Time) float64 {
		return pvLeft + t.Sub(p.Start).Seconds()/span*float64(pvRight-pvLeft)
	}
	y := func(v float64) float64 { return pvBottom - (v-lo)/(hi-lo)*float64(pvBottom-pvTop) }

	if p.HasBaseline && finite(p.Baseline) {
		by := int(math.Round(y(p.Baseline)))
		for px := pvLeft; px < pvRight; px += pvDash {
			fill(img, image.Rect(px, by-1, min(px+pvDashOn, pvRight), by+2), pvBaseline)
		}
	}
	if !p.Marker.IsZero() && !p.Marker.Before(p.Start) && !p.Marker.After(p.End) {
		mx := int(math.Round(x(p.Marker)))
		for py := pvTop; py < pvBottom; py += pvDash {
			fill(img, image.Rect(mx-1, py, mx+2, min(py+pvDashOn, pvBottom)), pvMarker)
		}
	}
	prevOK := false
	var px, py float64
	for _, s := range p.Samples {
		if !finite(s.V) || s.T.Before(p.Start) || s.T.After(p.End) {
			prevOK = false // a gap in the data is a gap in the line
			continue
		}
		cx, cy := x(s.T), y(s.V)
		if prevOK {
			thickLine(img, px, py, cx, cy, pvLineRadius, st)
		} else {
			disc(img, cx, cy, pvLineRadius, st)
		}
		px, py, prevOK = cx, cy, true
	}
}

// thickLine stamps discs along the segment, half a pixel apart.
func thickLine(img *image.RGBA, x0, y0, x1, y1, r float64, c color.RGBA) {
	n := int(math.Ceil(math.Hypot(x1-x0, y1-y0) * 2))
	for i := 0; i <= n; i++ {
		f := 1.0
		if n > 0 {
			f = float64(i) / float64(n)
		}
		disc(img, x0+(x1-x0)*f, y0+(y1-y0)*f, r, c)
	}
}

func disc(img *image.RGBA, cx, cy, r float64, c color.RGBA) {
	b := img.Bounds()
	for y := int(math.Floor(cy - r)); y <= int(math.Ceil(cy+r)); y++ {
		for x := int(math.Floor(cx - r)); x <= int(math.Ceil(cx+r)); x++ {
			dx, dy := float64(x)+.5-cx, float64(y)+.5-cy
			if dx*dx+dy*dy <= r*r && image.Pt(x, y).In(b) {
				img.SetRGBA(x, y, c)
			}
		}
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// drawText draws s with the 7×13 fixed font, scaled by an integer factor,
// with its top-left corner at (x, y).
func drawText(img *image.RGBA, x, y int, s string, scale int, c color.RGBA) {
	if s == "" {
		return
	}
	face := basicfont.Face7x13
	width := font.MeasureString(face, s).Ceil()
	mask := image.NewAlpha(image.Rect(0, 0, width, 13))
	d := font.Drawer{Dst: mask, Src: image.Opaque, Face: face, Dot: fixed.P(0, face.Ascent)}
	d.DrawString(s)
	for my := 0; my < 13; my++ {
		for mx := 0; mx < width; mx++ {
			if mask.AlphaAt(mx, my).A < 128 {
				continue
			}
			fill(img, image.Rect(x+mx*scale, y+my*scale, x+(mx+1)*scale, y+(my+1)*scale), c)
		}
	}
}

// clip shortens s to at most n runes, ending in "..." when cut; the font
// draws only ASCII, so other runes become "?".
func clip(s string, n int) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			switch r {
			case '·', '–', '—':
				r = '-'
			case '→':
				r = '>'
			default:
				r = '?'
			}
		}
		out = append(out, r)
	}
	if len(out) > n {
		out = append(out[:max(n-3, 0)], '.', '.', '.')
	}
	return string(out)
}

func lastFinite(ss []metrics.Sample) (float64, bool) {
	for i := len(ss) - 1; i >= 0; i-- {
		if finite(ss[i].V) {
			return ss[i].V, true
		}
	}
	return 0, false
}
