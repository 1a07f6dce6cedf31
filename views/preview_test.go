package views

import (
	"bytes"
	"image/png"
	"math"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

var previewStart = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

func previewSamples(vs ...float64) []metrics.Sample {
	out := make([]metrics.Sample, len(vs))
	for i, v := range vs {
		out[i] = metrics.Sample{T: previewStart.Add(time.Duration(i) * 5 * time.Minute), V: v}
	}
	return out
}

// TestRenderPreview draws the key chart: the line in the status colour
// right of the trigger sits above the baseline for a metric that rose.
func TestRenderPreview(t *testing.T) {
	p := Preview{
		Title: "KV-cache eviction storm", Subtitle: "llama-70b/llama-70b-1 · critical · 82% confidence",
		Status: StatusCritical, Metric: metrics.TTFT,
		Samples:  previewSamples(200, 210, 205, 198, 900, 950, 940),
		Baseline: 203, HasBaseline: true,
		Start: previewStart, End: previewStart.Add(30 * time.Minute), Marker: previewStart.Add(20 * time.Minute),
	}
	var buf bytes.Buffer
	if err := RenderPreview(&buf, p); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != PreviewWidth || b.Dy() != PreviewHeight {
		t.Fatalf("size %v", b)
	}
	crit := statusColour(StatusCritical)
	// Highest line pixel in the column of the last sample's neighbourhood.
	colTop := func(x int) int {
		for y := pvTop; y < pvBottom; y++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == crit.R && uint8(g>>8) == crit.G && uint8(b>>8) == crit.B {
				return y
			}
		}
		return -1
	}
	early, late := colTop(pvLeft+5), colTop(pvRight-5)
	if early < 0 || late < 0 || late >= early {
		t.Errorf("line top at the start %d px, at the end %d px: want the end higher (smaller y)", early, late)
	}
	if r, g, b, _ := img.At(10, 5).RGBA(); uint8(r>>8) != crit.R || uint8(g>>8) != crit.G || uint8(b>>8) != crit.B {
		t.Errorf("the status band is not the critical colour")
	}
}

// FuzzRenderPreview: odd data (NaN, infinities, one point, a flat line,
// times outside the window, any text) never panics and always gives a
// picture of the card size.
func FuzzRenderPreview(f *testing.F) {
	f.Add("KV-cache eviction storm", 1.0, 2.0, 3.0, int64(600), true)
	f.Add("", math.NaN(), math.Inf(1), -0.0, int64(-60), false)
	f.Add("ünïcødé → 中文", 5.0, 5.0, 5.0, int64(0), true)
	f.Fuzz(func(t *testing.T, title string, a, b, c float64, span int64, baseline bool) {
		p := Preview{Title: title, Subtitle: title, Metric: metrics.E2E, Samples: previewSamples(a, b, c),
			Baseline: b, HasBaseline: baseline, Start: previewStart, End: previewStart.Add(time.Duration(span) * time.Second),
			Marker: previewStart.Add(time.Minute)}
		var buf bytes.Buffer
		if err := RenderPreview(&buf, p); err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(&buf)
		if err != nil || cfg.Width != PreviewWidth || cfg.Height != PreviewHeight {
			t.Fatalf("%v %+v", err, cfg)
		}
	})
}
