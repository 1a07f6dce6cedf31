package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// engineEval is the accuracy on one engine's cases of a mixed corpus, and
// what that engine could not give the rules.
type engineEval struct {
	Engine metrics.Engine `json:"engine"`
	Cases  int            `json:"cases"`
	Top1   float64        `json:"top1"`
	Top3   float64        `json:"top3"`
	// VsVLLM is Top1 minus the vLLM cases' Top1, in points; absent for
	// vLLM itself or without vLLM cases.
	VsVLLM *float64 `json:"vs_vllm_points,omitempty"`
	// Lacked are the metrics the rules wanted that the engine has no
	// equivalent of, with the cases that lacked them and why.
	Lacked []lackedMetric `json:"lacked,omitempty"`
	// Recall is the per-cause recall on this engine's cases.
	Recall map[string]float64 `json:"recall"`
	// Checkable counts the cases whose label the engine's metrics can
	// show (its rule reads at least one metric the engine has), and
	// Top1Checkable is the top-1 accuracy on them; Uncheckable names the
	// other labels.
	Checkable     int      `json:"checkable"`
	Top1Checkable float64  `json:"top1_checkable"`
	Uncheckable   []string `json:"uncheckable,omitempty"`
}

type lackedMetric struct {
	Metric string `json:"metric"`
	Cases  int    `json:"cases"`
	Why    string `json:"why"`
}

// engineEvals accumulates one evaluation per engine; a case without an
// engine is vLLM's, as the corpus had only vLLM before engines were
// recorded.
type engineEvals struct {
	ev map[metrics.Engine]*diagnose.Evaluation
	// checkable holds the evaluation of the cases whose label the
	// engine's metrics can show; uncheckable the labels they cannot.
	checkable   map[metrics.Engine]*diagnose.Evaluation
	uncheckable map[metrics.Engine]map[string]bool
	lacked      map[metrics.Engine]map[string]int
	why         map[string]string
}

func newEngineEvals() *engineEvals {
	return &engineEvals{ev: map[metrics.Engine]*diagnose.Evaluation{}, lacked: map[metrics.Engine]map[string]int{}, why: map[string]string{},
		checkable: map[metrics.Engine]*diagnose.Evaluation{}, uncheckable: map[metrics.Engine]map[string]bool{}}
}

func (e *engineEvals) add(c metrics.Case, d diagnose.Diagnosis) {
	eng := c.Engine
	if eng == "" {
		eng = metrics.EngineVLLM
	}
	if e.ev[eng] == nil {
		e.ev[eng] = &diagnose.Evaluation{}
		e.lacked[eng] = map[string]int{}
		e.checkable[eng] = &diagnose.Evaluation{}
		e.uncheckable[eng] = map[string]bool{}
	}
	e.ev[eng].AddCase(c, d)
	if checkable(c) {
		e.checkable[eng].AddCase(c, d)
	} else {
		e.uncheckable[eng][c.Label] = true
	}
	for _, id := range d.Missing {
		if why := c.Absent[id]; why != "" {
			e.lacked[eng][id]++
			e.why[string(eng)+"/"+id] = why
		}
	}
}

// report lists the engines in catalog order; one engine alone gives
// nothing (the overall report says it all).
func (e *engineEvals) report() []engineEval {
	if len(e.ev) < 2 {
		return nil
	}
	var out []engineEval
	var vllm *float64
	for _, spec := range metrics.Engines {
		ev := e.ev[spec.ID]
		if ev == nil {
			continue
		}
		r := ev.Report()
		ee := engineEval{Engine: spec.ID, Cases: r.Cases, Top1: r.Top1, Top3: r.Top3, Recall: map[string]float64{}}
		if cr := e.checkable[spec.ID].Report(); cr.Cases > 0 {
			ee.Checkable, ee.Top1Checkable = cr.Cases, cr.Top1
		}
		for l := range e.uncheckable[spec.ID] {
			ee.Uncheckable = append(ee.Uncheckable, l)
		}
		sort.Strings(ee.Uncheckable)
		for _, c := range r.Causes {
			if c.Support > 0 {
				ee.Recall[c.Cause] = c.Recall
			}
		}
		if spec.ID == metrics.EngineVLLM {
			t := r.Top1
			vllm = &t
		} else if vllm != nil {
			d := 100 * (r.Top1 - *vllm)
			ee.VsVLLM = &d
		}
		for id, n := range e.lacked[spec.ID] {
			ee.Lacked = append(ee.Lacked, lackedMetric{Metric: id, Cases: n, Why: e.why[string(spec.ID)+"/"+id]})
		}
		sort.Slice(ee.Lacked, func(i, j int) bool { return ee.Lacked[i].Metric < ee.Lacked[j].Metric })
		out = append(out, ee)
	}
	return out
}

// writeEngineText prints the per-engine table of a mixed corpus and, per
// engine, the metrics its rules lacked and the recall of the causes that
// need them.
func writeEngineText(w io.Writer, es []engineEval) error {
	if len(es) == 0 {
		return nil
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "\nper engine")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\tcases\ttop-1\ttop-3\tvs vLLM (points)\tcases its metrics can show\ttop-1 on them\t")
	for _, e := range es {
		vs := "-"
		if e.VsVLLM != nil {
			vs = fmt.Sprintf("%+.1f", *e.VsVLLM)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.1f%%\t%s\t%d\t%.1f%%\t\n", metrics.EngineName(e.Engine), e.Cases, 100*e.Top1, 100*e.Top3, vs, e.Checkable, 100*e.Top1Checkable)
	}
	tw.Flush()
	for _, e := range es {
		if len(e.Lacked) == 0 {
			continue
		}
		fmt.Fprintf(bw, "%s lacks what the rules wanted:\n", metrics.EngineName(e.Engine))
		if len(e.Uncheckable) > 0 {
			fmt.Fprintf(bw, "  causes its metrics cannot show at all: %s\n", strings.Join(e.Uncheckable, ", "))
		}
		for _, l := range e.Lacked {
			fmt.Fprintf(bw, "  %s (%d cases): %s\n", l.Metric, l.Cases, l.Why)
		}
		var causes []string
		for c, r := range e.Recall {
			causes = append(causes, fmt.Sprintf("%s %.2f", c, r))
		}
		sort.Strings(causes)
		fmt.Fprintf(bw, "  recall by cause: %s\n", strings.Join(causes, ", "))
	}
	return bw.Flush()
}

// checkable reports whether a case's label can show in its engine's
// metrics: the label's rule reads at least one metric the case's source
// does not call absent. Labels without a rule (none) always can.
func checkable(c metrics.Case) bool {
	wants := diagnose.Wants(c.Label)
	if len(wants) == 0 {
		return true
	}
	for _, id := range wants {
		if c.Absent[id] == "" {
			return true
		}
	}
	return false
}
