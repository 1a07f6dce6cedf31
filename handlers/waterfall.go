package handlers

import (
	"fmt"
	"math"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// BuildWaterfall decomposes the window's mean latencies into the three
// levels of DESIGN.md: gateway vs engine E2E; TTFT vs TPOT x output tokens;
// queue, prefill and decode. means maps catalog ids to window means (NaN or
// absent when unknown). All levels share one scale so lengths compare.
func BuildWaterfall(means map[string]float64) views.WaterfallView {
	get := func(id string) (float64, bool) {
		v, ok := means[id]
		return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0
	}
	type seg struct {
		label, class string
		from, to     float64
		value        string
	}
	var levels [][]seg
	var notes []string
	ms := func(v float64) string { return views.FormatValue(metrics.E2E, v) }

	// Level 1: is it the engine or the path to it?
	var l1 []seg
	note1 := ""
	e2e, hasE2E := get(metrics.E2E)
	gw, hasGW := get(metrics.GatewayE2E)
	switch {
	case hasGW && hasE2E:
		l1 = append(l1, seg{"Gateway E2E", "wf-total", 0, gw, ms(gw)}, seg{"Engine E2E", "wf-engine", 0, e2e, ms(e2e)})
		if gw > e2e {
			l1 = append(l1, seg{"Outside the engine", "wf-transport", e2e, gw, ms(gw - e2e)})
			note1 = fmt.Sprintf("%.0f%% of the gateway's time is spent outside the engine (network, gateway, streaming).", 100*(gw-e2e)/gw)
		}
	case hasE2E:
		l1 = append(l1, seg{"Engine E2E", "wf-engine", 0, e2e, ms(e2e)})
		note1 = "No gateway source: transport time cannot be separated from engine time."
	default:
		note1 = "No end-to-end latency in this window."
	}
	levels, notes = append(levels, l1), append(notes, note1)

	// Level 2: first token vs the tokens after it.
	var l2 []seg
	note2 := ""
	ttft, hasTTFT := get(metrics.TTFT)
	tpot, hasTPOT := get(metrics.TPOT)
	rps, hasRPS := get(metrics.ThroughputRPS)
	gen, hasGen := get(metrics.GenerationTPS)
	if hasTTFT && hasTPOT {
		l2 = append(l2, seg{"TTFT", "wf-ttft", 0, ttft, ms(ttft)})
		if hasRPS && hasGen && rps > 0 {
			out := gen / rps
			dec := tpot * math.Max(out-1, 0)
			l2 = append(l2, seg{fmt.Sprintf("TPOT × %.0f tokens", math.Max(out-1, 0)), "wf-tpot", ttft, ttft + dec,
				ms(tpot) + " × " + fmt.Sprintf("%.0f", math.Max(out-1, 0)) + " = " + ms(dec)})
			switch {
			case ttft > dec:
				note2 = "Time to first token dominates: look at prompt length, queueing and KV-cache pressure."
			default:
				note2 = "Token generation dominates: look at memory bandwidth, batch size and sequence length."
			}
			if sum := ttft + dec; hasE2E && e2e > 0 && math.Abs(sum-e2e)/e2e > 0.25 {
				note2 += fmt.Sprintf(" Note: TTFT + TPOT × tokens = %s, but engine E2E is %s; the token counters and the latency histograms disagree.", ms(sum), ms(e2e))
			}
		} else {
			l2 = append(l2, seg{"TPOT (per token)", "wf-tpot", ttft, ttft + tpot, ms(tpot)})
			note2 = "Output length unknown (no throughput in this window): TPOT is shown for one token."
		}
	} else {
		note2 = "TTFT or TPOT missing in this window."
	}
	levels, notes = append(levels, l2), append(notes, note2)

	// Level 3: engine phases.
	var l3 []seg
	note3 := ""
	at := 0.0
	for _, p := range []struct{ id, label, class string }{
		{metrics.QueueTime, "Queue", "wf-queue"},
		{metrics.PrefillTime, "Prefill", "wf-prefill"},
		{metrics.DecodeTime, "Decode", "wf-decode"},
	} {
		if v, ok := get(p.id); ok {
			l3 = append(l3, seg{p.label, p.class, at, at + v, ms(v)})
			at += v
		}
	}
	if len(l3) == 0 {
		note3 = "The engine exports no phase histograms for this scope."
	} else if at > 0 {
		big := l3[0]
		for _, s := range l3 {
			if s.to-s.from > big.to-big.from {
				big = s
			}
		}
		note3 = fmt.Sprintf("%s is %.0f%% of the engine's request time.", big.label, 100*(big.to-big.from)/at)
	}
	levels, notes = append(levels, l3), append(notes, note3)

	scale := 0.0
	for _, l := range levels {
		for _, s := range l {
			scale = math.Max(scale, s.to)
		}
	}
	titles := []string{"1 · Gateway vs engine", "2 · First token vs the rest", "3 · Engine phases"}
	w := views.WaterfallView{}
	if scale > 0 {
		w.Scale = "full width = " + ms(scale)
	}
	for i, l := range levels {
		lv := views.WaterfallLevel{Title: titles[i], Note: notes[i]}
		for _, s := range l {
			b := views.WaterfallBar{Label: s.label, Value: s.value, Class: s.class}
			if scale > 0 {
				b.X = 1000 * s.from / scale
				b.W = math.Max(1000*(s.to-s.from)/scale, 1)
			}
			lv.Bars = append(lv.Bars, b)
		}
		w.Levels = append(w.Levels, lv)
	}
	return w
}
