package views

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

var t0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

func samples(n int, step time.Duration, f func(i int) float64) []metrics.Sample {
	out := make([]metrics.Sample, 0, n)
	for i := range n {
		out = append(out, metrics.Sample{T: t0.Add(time.Duration(i) * step), V: f(i)})
	}
	return out
}

func renderString(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return buf.String()
}

func TestNewChart(t *testing.T) {
	withGap := samples(60, time.Minute, func(i int) float64 { return 100 + float64(i) })
	withGap = append(withGap[:20], withGap[30:]...) // ten minutes missing
	tests := []struct {
		name       string
		spec       ChartSpec
		wantMoves  int // unbroken runs in the first line
		wantEmpty  bool
		wantTicks  []string
		wantMarker bool
		wantBand   bool
	}{
		{name: "continuous", spec: ChartSpec{Unit: "ms", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.TTFT, Samples: samples(60, time.Minute, func(i int) float64 { return 10 * float64(i) })}}},
			wantMoves: 1, wantTicks: []string{"0", "200", "400", "600"}},
		{name: "gap breaks the line", spec: ChartSpec{Unit: "ms", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.TTFT, Samples: withGap}}},
			wantMoves: 2},
		{name: "NaN breaks the line", spec: ChartSpec{Unit: "ratio", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.SMUtil, Samples: samples(60, time.Minute, func(i int) float64 {
			if i == 30 {
				return math.NaN()
			}
			return .5
		})}}}, wantMoves: 2, wantTicks: []string{"0", "20", "40", "60"}},
		{name: "fractional step", spec: ChartSpec{Unit: "count", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.QueueDepth, Samples: samples(60, time.Minute, func(i int) float64 { return float64(i % 10) })}}},
			wantMoves: 1, wantTicks: []string{"0.0", "2.5", "5.0", "7.5", "10.0"}},
		{name: "small ratio", spec: ChartSpec{Unit: "ratio", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.ErrorRate, Samples: samples(60, time.Minute, func(i int) float64 { return .0001 * float64(i%4) })}}},
			wantMoves: 1, wantTicks: []string{"0.00", "0.01", "0.02", "0.03"}},
		{name: "no data", spec: ChartSpec{Unit: "ms", Step: time.Minute, Series: []ChartSeries{{Metric: metrics.TTFT}}}, wantEmpty: true},
		{name: "marker and band", spec: ChartSpec{Unit: "req/s", Step: time.Minute, Marker: t0.Add(30 * time.Minute), MarkerLabel: "trigger",
			Series: []ChartSeries{{Metric: metrics.ThroughputRPS, Samples: samples(60, time.Minute, func(int) float64 { return 12 })}},
			Band:   &ChartBand{Name: "forecast", Lower: samples(60, time.Minute, func(int) float64 { return 10 }), Upper: samples(60, time.Minute, func(int) float64 { return 14 })}},
			wantMoves: 1, wantMarker: true, wantBand: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.ID, tc.spec.Title = "c", "C"
			tc.spec.Start, tc.spec.End = t0, t0.Add(time.Hour)
			c := NewChart(tc.spec)
			if c.Empty != tc.wantEmpty {
				t.Fatalf("Empty = %v", c.Empty)
			}
			if !tc.wantEmpty {
				if got := strings.Count(c.Lines[0].D, "M"); got != tc.wantMoves {
					t.Errorf("%d runs in %q, want %d", got, c.Lines[0].D[:min(80, len(c.Lines[0].D))], tc.wantMoves)
				}
			}
			if tc.wantTicks != nil {
				var got []string
				for _, tk := range c.YTicks {
					got = append(got, tk.Label)
				}
				if strings.Join(got, " ") != strings.Join(tc.wantTicks, " ") {
					t.Errorf("y ticks %v, want %v", got, tc.wantTicks)
				}
			}
			if c.HasMarker != tc.wantMarker || (c.BandD != "") != tc.wantBand {
				t.Errorf("marker %v band %q", c.HasMarker, c.BandD)
			}
			if len(c.XTicks) < 2 || len(c.XTicks) > 8 {
				t.Errorf("%d x ticks", len(c.XTicks))
			}
			for _, tk := range c.XTicks {
				if tk.Pos < c.X0 || tk.Pos > c.X1 {
					t.Errorf("x tick %q at %v outside the plot", tk.Label, tk.Pos)
				}
			}
			html := renderString(t, ChartFigure(c))
			if !strings.Contains(html, `data-testid="chart-c"`) || tc.wantEmpty != strings.Contains(html, "No data in this window") {
				t.Errorf("figure: %.300s", html)
			}
		})
	}
}

func TestDecimateKeepsSpikes(t *testing.T) {
	week := samples(7*24*60, time.Minute, func(i int) float64 {
		if i == 5000 {
			return 1000
		}
		return 1
	})
	end := week[len(week)-1].T
	got := decimate(week, t0, end)
	if len(got) > maxPoints {
		t.Fatalf("%d points, limit %d", len(got), maxPoints)
	}
	peak := 0.0
	for _, p := range got {
		peak = math.Max(peak, p.V)
	}
	if peak != 1000 {
		t.Errorf("spike lost: max %v", peak)
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		id   string
		v    float64
		want string
	}{
		{metrics.TTFT, 412.4, "412 ms"},
		{metrics.E2E, 2840, "2.84 s"},
		{metrics.TPOT, 13.46, "13.5 ms"},
		{metrics.SMUtil, .873, "87%"},
		{metrics.ErrorRate, .0021, "0.2%"},
		{metrics.GenerationTPS, 12400, "12.4k tok/s"},
		{metrics.QueueDepth, 3, "3.0"},
		{metrics.RunningSeqs, 236.4, "236"},
		{metrics.GPUTemp, 64, "64.0 °C"},
		{metrics.PreemptionRate, math.NaN(), "–"},
		{"not_a_metric", 5, "5.00"},
	}
	for _, tc := range tests {
		if got := FormatValue(tc.id, tc.v); got != tc.want {
			t.Errorf("FormatValue(%s, %v) = %q, want %q", tc.id, tc.v, got, tc.want)
		}
	}
}

func TestSparkline(t *testing.T) {
	if got := Sparkline([]float64{1}); got != "" {
		t.Errorf("one value: %q", got)
	}
	got := Sparkline([]float64{1, 2, math.NaN(), 3, 4})
	if strings.Count(got, "M") != 2 || !strings.HasPrefix(got, "M0.0 22.0") {
		t.Errorf("sparkline %q", got)
	}
}

func TestComponentsEscapeAndCarryStatusInText(t *testing.T) {
	hostile := `<script>alert(1)</script>`
	l := LayoutView{Title: hostile, Assets: Assets{CSS: "/static/css/casebook.css", JS: "/static/js/casebook.js"},
		Banners: []Banner{{Status: StatusCritical, Text: "Data source " + hostile + " is failing", Since: t0, Now: t0.Add(7 * time.Minute)}}}
	page := renderString(t, ErrorPage(ErrorView{Layout: l, Status: 400, Title: "Bad Request", Param: "model", Message: hostile}))
	if strings.Contains(page, "<script>alert") {
		t.Errorf("unescaped script in page")
	}
	for _, want := range []string{`data-testid="banner"`, "7 min ago", `<code>model</code>`, `data-testid="nav-accuracy"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, s := range []Status{StatusOK, StatusWarning, StatusCritical, StatusNoData} {
		badge := renderString(t, StatusBadge(s))
		if !strings.Contains(badge, s.Word()) || !strings.Contains(badge, s.Icon()) {
			t.Errorf("badge for %v lacks word or icon: %s", s, badge)
		}
	}
}

func TestDiagnosisPanel(t *testing.T) {
	d := diagnose.Diagnosis{
		RootCause: metrics.CauseGPUThrottling, Confidence: .74, Severity: diagnose.SeverityWarning,
		Evidence:    []diagnose.Evidence{{Metric: metrics.SMClock, Value: 1210, BaselineMean: 1755, Z: -8.2, Text: "SM clock <b>down</b>"}},
		CausalChain: []string{metrics.GPUTemp, metrics.SMClock, metrics.TPOT},
		Actions:     []diagnose.Action{{ID: "check_cooling", Title: "Check cooling", Effects: []diagnose.Effect{{Metric: metrics.SMClock, Direction: "up", Size: "+20..+40%"}}, Risk: "none", Rollback: "n/a"}},
		Missing:     []string{metrics.Power},
	}
	html := renderString(t, DiagnosisPanel(NewDiagnosisPanel(d)))
	for _, want := range []string{`data-root-cause="gpu_throttling"`, "GPU throttling", "74%", "1210 MHz", "-8.2σ", "SM clock ↑ +20..+40%",
		`data-testid="diagnosis-missing"`, "Temperature", "SM clock &lt;b&gt;down&lt;/b&gt;", `data-status="Warning"`} {
		if !strings.Contains(html, want) {
			t.Errorf("panel lacks %q", want)
		}
	}
}

func TestFormatZ(t *testing.T) {
	for z, want := range map[float64]string{
		4.21: "+4.2σ", -3.05: "-3.0σ", 0: "+0.0σ", 99.94: "+99.9σ", 100: ">+99σ", 1000: ">+99σ", -250: "<-99σ",
		math.NaN(): "–",
	} {
		if got := FormatZ(z); got != want {
			t.Errorf("FormatZ(%v) = %q, want %q", z, got, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {30 * time.Second, "30s"}, {90 * time.Second, "1m30s"}, {59700 * time.Millisecond, "1m"},
		{2 * time.Minute, "2m"}, {3 * time.Hour, "3h"}, {48 * time.Hour, "2d"}, {time.Hour + 30*time.Second, "1h0m30s"},
		{400 * time.Millisecond, "400ms"}, {10 * time.Second, "10s"}, {95 * time.Second, "1m35s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
