package sim

import (
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

// TestErrorsCountedAsVLLMCountsThem reads the served pages the way the
// catalog does. vLLM's finished_reason="abort" is a client cancel, present
// at a small rate in a healthy engine and not an error; "error" is the
// engine failing a request, answered 500. A severe engine fault also takes
// the engine core down, and its API server then answers 5xx to requests
// that reach no finished_reason at all.
func TestErrorsCountedAsVLLMCountsThem(t *testing.T) {
	run := func(severity float64) (finished map[string]float64, http map[string]float64) {
		c := New(Options{Seed: 5, Start: monday})
		if severity > 0 {
			if _, err := c.Inject(Fault{Cause: metrics.CauseEngineErrors, Scope: metrics.Scope{Model: Models[0].Name, Instance: "llama-8b-0"},
				Severity: severity, Start: monday}); err != nil {
				t.Fatal(err)
			}
		}
		c.Advance(monday.Add(30 * time.Minute))
		fams := parsePage(t, c, "/engines/llama-8b-0/metrics")
		finished, http = map[string]float64{}, map[string]float64{}
		for _, m := range fams["vllm:request_success_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "finished_reason" {
					finished[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
		for _, m := range fams["http_requests_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" {
					http[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
		return finished, http
	}
	total := func(m map[string]float64) float64 {
		s := 0.0
		for _, v := range m {
			s += v
		}
		return s
	}

	fin, http := run(0)
	all := total(fin)
	if all < 1000 {
		t.Fatalf("only %g requests finished in half an hour", all)
	}
	if share := fin["abort"] / all; share <= 0 || share > 0.01 {
		t.Errorf("healthy engine: aborts are %.4f of finished requests, want a small non-zero share", share)
	}
	if share := fin["error"] / all; share > 0.002 {
		t.Errorf("healthy engine: errors are %.4f of finished requests", share)
	}
	if http["5xx"] != fin["error"] {
		t.Errorf("healthy engine: %g answers 5xx, %g requests finished with an error: aborts must not answer 5xx", http["5xx"], fin["error"])
	}

	for _, sev := range []float64{0.5, 1} {
		fin, http := run(sev)
		all := total(fin)
		errShare := fin["error"] / all
		if errShare < 0.1 {
			t.Errorf("severity %g: errors are %.3f of finished requests", sev, errShare)
		}
		if share := fin["abort"] / all; share > 0.01 {
			t.Errorf("severity %g: aborts are %.4f of finished requests; an engine fault is not a client cancel", sev, share)
		}
		// Requests a dead engine core never finished show in 5xx only.
		neverFinished := http["5xx"] - fin["error"]
		if sev < 0.7 && neverFinished != 0 {
			t.Errorf("severity %g: %g 5xx answers beyond the finished errors with the engine core up", sev, neverFinished)
		}
		if sev >= 1 && neverFinished < 0.2*(http["2xx"]+http["5xx"]) {
			t.Errorf("severity %g: %g of %g answers were 5xx without a finished request; a crash-looping engine core fails more", sev, neverFinished, http["2xx"]+http["5xx"])
		}
	}
}
