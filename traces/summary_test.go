package traces_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/traces"
)

func parseString(t *testing.T, doc string) *traces.Trace {
	t.Helper()
	tr, err := traces.Parse(context.Background(), strings.NewReader(doc), traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// smallTrace has hand-checkable numbers: device 0 runs a GEMM [0,10]µs on
// stream 7 overlapping attention [5,15]µs on stream 8, idles, then a
// memcpy [20,25]µs; device 1 runs one all-reduce [0,5]µs.
const smallTrace = `{"traceEvents":[
 {"ph":"X","cat":"kernel","name":"nvjet_tst_128x64_64x8_2x1_v_bz_coopA_TNT","pid":0,"tid":7,"ts":0,"dur":10},
 {"ph":"X","cat":"kernel","name":"void flash::flash_fwd_splitkv_kernel<>","pid":0,"tid":8,"ts":5,"dur":10},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":7,"ts":20,"dur":5},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL","pid":1,"tid":7,"ts":0,"dur":5},
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":1,"ts":0,"dur":30}
]}`

func TestSummarizeSmall(t *testing.T) {
	s := traces.Summarize(parseString(t, smallTrace))
	us := time.Microsecond
	if s.Span != 25*us || s.GPUTime != 30*us || s.Activities != 4 || s.Steps != 1 || s.StepTime != 30*us {
		t.Errorf("span %v gpu %v activities %d steps %d step time %v", s.Span, s.GPUTime, s.Activities, s.Steps, s.StepTime)
	}
	wantCat := map[traces.Category]time.Duration{
		traces.CategoryGEMM: 10 * us, traces.CategoryAttention: 10 * us,
		traces.CategoryMemory: 5 * us, traces.CategoryCommunication: 5 * us,
	}
	if len(s.Categories) != len(traces.Categories()) {
		t.Fatalf("%d categories", len(s.Categories))
	}
	for i, c := range s.Categories {
		if c.Category != traces.Categories()[i] {
			t.Errorf("category %d is %s, want display order", i, c.Category)
		}
		if c.Time != wantCat[c.Category] {
			t.Errorf("%s: time %v, want %v", c.Category, c.Time, wantCat[c.Category])
		}
		if want := float64(wantCat[c.Category]) / float64(30*us); math.Abs(c.Share-want) > 1e-12 {
			t.Errorf("%s: share %v, want %v", c.Category, c.Share, want)
		}
	}
	wantIdle := traces.IdleStats{
		Idle: 25 * us, Busy: 25 * us, Share: 0.5, Gaps: 1,
		MeanGap: 5 * us, LongestGap: 5 * us, SmallGapTime: 5 * us, Devices: 2,
	}
	if s.Idle != wantIdle {
		t.Errorf("idle %+v, want %+v", s.Idle, wantIdle)
	}
	if len(s.Top) != 4 || s.Top[0].Total != 10*us || s.Top[0].Count != 1 || s.Top[0].Mean != 10*us || s.Top[3].Total != 5*us {
		t.Errorf("top %+v", s.Top)
	}
	if len(s.Lanes) != 3 {
		t.Fatalf("%d lanes, want 3", len(s.Lanes))
	}
	l := s.Lanes[0] // device 0 stream 7: GEMM for 10/25, idle, memcpy for the last 5/25
	if l.Device != 0 || l.Stream != 7 || len(l.Bins) != traces.LaneBins || l.Count != 2 {
		t.Fatalf("lane 0 %+v", l)
	}
	g := strings.Count(l.Bins, "g")
	m := strings.Count(l.Bins, "m")
	idle := strings.Count(l.Bins, ".")
	if g != traces.LaneBins*10/25 || m != traces.LaneBins*5/25 || idle != traces.LaneBins*10/25 {
		t.Errorf("lane 0 bins: %d gemm, %d memcpy, %d idle", g, m, idle)
	}
	if !strings.HasPrefix(l.Bins, "g") || !strings.HasSuffix(l.Bins, "m") {
		t.Errorf("lane 0 bins out of order: %.20s…%s", l.Bins, l.Bins[len(l.Bins)-20:])
	}
}

func TestSummarizeFixture(t *testing.T) {
	for _, path := range []string{fixtureJSON, fixtureNsight} {
		t.Run(path, func(t *testing.T) {
			s := traces.Summarize(parseFile(t, path))
			var sum float64
			var total time.Duration
			for _, c := range s.Categories {
				sum += c.Share
				total += c.Time
			}
			if math.Abs(sum-1) > 1e-9 || total != s.GPUTime {
				t.Errorf("shares sum to %v, times to %v of %v", sum, total, s.GPUTime)
			}
			// The generated model is GEMM-bound with visible attention and
			// all-reduce, some idle time between decode steps.
			share := func(c traces.Category) float64 { return s.Categories[indexOf(c)].Share }
			if share(traces.CategoryGEMM) < 0.4 || share(traces.CategoryAttention) < 0.05 || share(traces.CategoryCommunication) < 0.05 {
				t.Errorf("unexpected mix %+v", s.Categories)
			}
			for _, c := range []traces.Category{traces.CategoryNorm, traces.CategoryActivation, traces.CategoryRotary, traces.CategorySampling, traces.CategoryMemory, traces.CategoryOther} {
				if share(c) == 0 {
					t.Errorf("no time in %s", c)
				}
			}
			if s.Idle.Share <= 0.02 || s.Idle.Share >= 0.5 || s.Idle.Gaps == 0 || s.Idle.LongestGap < 100*time.Microsecond {
				t.Errorf("idle %+v", s.Idle)
			}
			if s.Idle.SmallGapTime <= 0 || s.Idle.SmallGapTime >= s.Idle.Idle {
				t.Errorf("small-gap time %v of idle %v", s.Idle.SmallGapTime, s.Idle.Idle)
			}
			if len(s.Top) != traces.TopKernels {
				t.Errorf("%d top kernels", len(s.Top))
			}
			for i := 1; i < len(s.Top); i++ {
				if s.Top[i].Total > s.Top[i-1].Total {
					t.Errorf("top kernels not descending at %d", i)
				}
			}
			if len(s.Lanes) != 2 || s.Lanes[0].Stream != 7 || s.Lanes[1].Stream != 20 {
				t.Errorf("lanes %d", len(s.Lanes))
			}
		})
	}
}

func indexOf(c traces.Category) int {
	for i, k := range traces.Categories() {
		if k == c {
			return i
		}
	}
	return -1
}

func TestSummarizeManyStreams(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[`)
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":`)
		b.WriteString(itoa(100 + i))
		b.WriteString(`,"ts":0,"dur":` + itoa(i+1) + `}`)
	}
	b.WriteString(`]}`)
	s := traces.Summarize(parseString(t, b.String()))
	if len(s.Lanes) != traces.MaxLanes {
		t.Fatalf("%d lanes, want %d", len(s.Lanes), traces.MaxLanes)
	}
	for _, l := range s.Lanes {
		if l.Busy < time.Duration(100-traces.MaxLanes)*time.Microsecond {
			t.Errorf("lane %d (busy %v) is not among the busiest", l.Stream, l.Busy)
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func TestTimelineSVG(t *testing.T) {
	hostile := `{"traceEvents":[
 {"ph":"X","cat":"kernel","name":"</title><script>alert(1)</script>&\"'","pid":0,"tid":7,"ts":0,"dur":10},
 {"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16","pid":0,"tid":7,"ts":12,"dur":3}
]}`
	tests := []struct {
		name  string
		trace *traces.Trace
		lanes int
	}{
		{"fixture", parseFile(t, fixtureJSON), 2},
		{"hostile names", parseString(t, hostile), 1},
		{"small", parseString(t, smallTrace), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := traces.Summarize(tc.trace)
			svg := s.TimelineSVG()
			if bytes.Contains(svg, []byte("<style")) || bytes.Contains(svg, []byte("style=")) {
				t.Error("SVG uses inline CSS, which a strict Content-Security-Policy blocks")
			}
			if bytes.Contains(svg, []byte("<script")) {
				t.Fatalf("unescaped name in SVG: %s", svg)
			}
			if tc.name == "hostile names" && !bytes.Contains(svg, []byte("&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#34;&#39;")) {
				t.Errorf("hostile name not shown escaped: %s", svg)
			}
			dec := xml.NewDecoder(bytes.NewReader(svg))
			var rects, groups, texts int
			var width string
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("SVG is not well-formed XML: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok {
					switch se.Name.Local {
					case "svg":
						for _, a := range se.Attr {
							if a.Name.Local == "width" {
								width = a.Value
							}
						}
					case "rect":
						rects++
					case "g":
						groups++
					case "text":
						texts++
					}
				}
			}
			if width != "610" {
				t.Errorf("width %q, want the fixed 610", width)
			}
			if groups != tc.lanes {
				t.Errorf("%d lane groups, want %d", groups, tc.lanes)
			}
			// A background per lane, a legend swatch per category, and at
			// least one coloured run per lane.
			if rects < 2*tc.lanes+len(traces.Categories()) {
				t.Errorf("only %d rects", rects)
			}
			for _, c := range traces.Categories() {
				if !bytes.Contains(svg, []byte(traces.CategoryColor(c))) {
					t.Errorf("legend lacks %s", c)
				}
			}
			if len(svg) > 64<<10 {
				t.Errorf("SVG is %d bytes", len(svg))
			}
		})
	}
	var empty traces.Summary
	if got := empty.TimelineSVG(); got != nil {
		t.Errorf("empty summary rendered %q", got)
	}
}

// TestSummaryJSON checks a stored summary (JSON) renders the same timeline
// and compares the same as the original, which is how the incident page
// uses it.
func TestSummaryJSON(t *testing.T) {
	s := traces.Summarize(parseFile(t, fixtureJSON))
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back traces.Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.TimelineSVG(), s.TimelineSVG()) {
		t.Error("timeline differs after a JSON round trip")
	}
	c := traces.Compare(s, back)
	for _, d := range c.Categories {
		if d.Delta != 0 {
			t.Errorf("%s: delta %v against itself after a round trip", d.Category, d.Delta)
		}
	}
	if !bytes.Contains(b, []byte(`"category":"attention"`)) || !bytes.Contains(b, []byte(`"idle":{"idle_ns":`)) {
		t.Errorf("unexpected JSON shape: %.300s", b)
	}
}

func TestSummarizeHandBuilt(t *testing.T) {
	parsed := parseString(t, smallTrace)
	hand := &traces.Trace{Format: traces.FormatChrome, Names: parsed.Names, Steps: parsed.Steps, StepTime: parsed.StepTime}
	for i := len(parsed.Activities) - 1; i >= 0; i-- { // reversed: unsorted
		hand.Activities = append(hand.Activities, parsed.Activities[i])
	}
	got, want := traces.Summarize(hand), traces.Summarize(parsed)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if !bytes.Equal(gb, wb) {
		t.Errorf("hand-built trace summarises differently:\n%s\n%s", gb, wb)
	}
	if hand.Activities[0].Device != 1 {
		t.Error("Summarize reordered the caller's activities")
	}
}
