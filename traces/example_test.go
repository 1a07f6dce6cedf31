package traces_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/casebook/casebook/traces"
)

// Example shows the upload path: parse whatever the engineer attached
// (JSON, gzip or an Nsight export), summarise it, render the timeline and
// derive evidence for the diagnosis. Errors wrapping ErrTooLarge map to
// HTTP 413, the other sentinels to 400 with the error text.
func Example() {
	f, err := os.Open("testdata/llama8b_tp2.pt.trace.json.gz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	tr, err := traces.Parse(context.Background(), f, traces.Options{MaxBytes: 256 << 20})
	switch {
	case errors.Is(err, traces.ErrTooLarge):
		fmt.Println("413:", err)
		return
	case err != nil:
		fmt.Println("400:", err)
		return
	}
	s := traces.Summarize(tr)
	fmt.Printf("%s trace, %d GPU activities over %v, %d steps\n", s.Format, s.Activities, s.Span.Round(1000), s.Steps)
	for _, c := range s.Categories[:3] {
		fmt.Printf("%-13s %5.1f%%\n", c.Category, 100*c.Share)
	}
	fmt.Printf("idle %.1f%% in %d gaps\n", 100*s.Idle.Share, s.Idle.Gaps)
	fmt.Println("timeline bytes > 0:", len(s.TimelineSVG()) > 0)
	fmt.Println("evidence without a baseline:", len(traces.Evidences(s, nil)))
	// Output:
	// chrome trace, 444 GPU activities over 6.374ms, 4 steps
	// gemm           61.5%
	// attention      14.9%
	// normalization   4.2%
	// idle 14.8% in 443 gaps
	// timeline bytes > 0: true
	// evidence without a baseline: 0
}
