package handlers

import (
	"context"
	"fmt"
	"math"

	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/views"
)

// BuildWaterfall decomposes the window's mean latencies into the three
// levels of DESIGN.md: gateway vs engine E2E; TTFT vs TPOT x output tokens;
// queue, prefill and decode. means maps catalog ids to window means (NaN or
// absent when unknown). All levels share one scale so lengths compare;
// the words are in ctx's language.
func BuildWaterfall(ctx context.Context, means map[string]float64) views.WaterfallView {
	l := i18n.From(ctx)
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
		l1 = append(l1, seg{l.T("wf.gateway_e2e"), "wf-total", 0, gw, ms(gw)}, seg{l.T("wf.engine_e2e"), "wf-engine", 0, e2e, ms(e2e)})
		if gw > e2e {
			l1 = append(l1, seg{l.T("wf.outside"), "wf-transport", e2e, gw, ms(gw - e2e)})
			note1 = l.T("wf.outside_note", fmt.Sprintf("%.0f%%", 100*(gw-e2e)/gw))
		}
	case hasE2E:
		l1 = append(l1, seg{l.T("wf.engine_e2e"), "wf-engine", 0, e2e, ms(e2e)})
		note1 = l.T("wf.no_gateway")
	default:
		note1 = l.T("wf.no_e2e")
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
			l2 = append(l2, seg{l.T("wf.tpot_tokens", fmt.Sprintf("%.0f", math.Max(out-1, 0))), "wf-tpot", ttft, ttft + dec,
				ms(tpot) + " × " + fmt.Sprintf("%.0f", math.Max(out-1, 0)) + " = " + ms(dec)})
			switch {
			case ttft > dec:
				note2 = l.T("wf.ttft_dominates")
			default:
				note2 = l.T("wf.tpot_dominates")
			}
			if sum := ttft + dec; hasE2E && e2e > 0 && math.Abs(sum-e2e)/e2e > 0.25 {
				note2 += l.T("wf.disagree", ms(sum), ms(e2e))
			}
		} else {
			l2 = append(l2, seg{l.T("wf.tpot_one"), "wf-tpot", ttft, ttft + tpot, ms(tpot)})
			note2 = l.T("wf.no_length")
		}
	} else {
		note2 = l.T("wf.no_tokens")
	}
	levels, notes = append(levels, l2), append(notes, note2)

	// Level 3: engine phases.
	var l3 []seg
	note3 := ""
	at := 0.0
	for _, p := range []struct{ id, label, class string }{
		{metrics.QueueTime, l.T("wf.queue"), "wf-queue"},
		{metrics.PrefillTime, l.T("wf.prefill"), "wf-prefill"},
		{metrics.DecodeTime, l.T("wf.decode"), "wf-decode"},
	} {
		if v, ok := get(p.id); ok {
			l3 = append(l3, seg{p.label, p.class, at, at + v, ms(v)})
			at += v
		}
	}
	if len(l3) == 0 {
		note3 = l.T("wf.no_phases")
	} else if at > 0 {
		big := l3[0]
		for _, s := range l3 {
			if s.to-s.from > big.to-big.from {
				big = s
			}
		}
		note3 = l.T("wf.phase_share", big.label, fmt.Sprintf("%.0f%%", 100*(big.to-big.from)/at))
	}
	levels, notes = append(levels, l3), append(notes, note3)

	scale := 0.0
	for _, lvl := range levels {
		for _, s := range lvl {
			scale = math.Max(scale, s.to)
		}
	}
	titles := []string{l.T("wf.level1"), l.T("wf.level2"), l.T("wf.level3")}
	w := views.WaterfallView{}
	if scale > 0 {
		w.Scale = l.T("wf.scale", ms(scale))
	}
	for i, lvl := range levels {
		lv := views.WaterfallLevel{Title: titles[i], Note: notes[i]}
		for _, s := range lvl {
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
