package sim

import (
	"math"

	"github.com/casebook/casebook/metrics"
)

// caseEngine is the engine corpus case i runs, and casePlan the plan it
// runs: with k engines, every plan (cause, deployment, time, severity)
// runs once on each engine in turn, so the engines are compared on the
// same incidents and differ only in what their metrics show.
func caseEngine(engines []metrics.Engine, i int) metrics.Engine {
	if len(engines) == 0 {
		return metrics.EngineVLLM
	}
	return engines[i%len(engines)]
}

func casePlan(engines []metrics.Engine, i int) int {
	return i / max(1, len(engines))
}

// engineValues turns the catalog values computed from the vLLM view of
// the simulated instances into what the catalog computes from engine e's
// exposition (engines.go): a metric e has no equivalent of is dropped;
// the rest read the same physical quantities under e's names. SGLang's
// interval gauges (spec_accept_rate) are read as the minute's value, and
// llama-server's TPOT as decode seconds over generated tokens.
func engineValues(e metrics.Engine, v metrics.Values, prev, cur []capture) metrics.Values {
	if e == "" || e == metrics.EngineVLLM {
		return v
	}
	for id := range v {
		m, ok := metrics.Lookup(id)
		if ok && m.Source == metrics.SourceEngine && len(m.ForEngine(e).Alts) == 0 {
			delete(v, id)
		}
	}
	if e == metrics.EngineLlamaCpp {
		delete(v, metrics.TPOT)
		var sec, tok float64
		for i := range cur {
			sec += round3(cur[i].cnt.decodeSeconds) - round3(prev[i].cnt.decodeSeconds)
			tok += math.Floor(cur[i].cnt.generation) - math.Floor(prev[i].cnt.generation)
		}
		if tok > 0 {
			v[metrics.TPOT] = significant(1000*sec/tok, 5)
		}
	}
	return v
}

// absentOf is what engine e's scopes lack, as telemetry reports it in a
// snapshot's Absent.
func absentOf(e metrics.Engine) map[string]string {
	if e == "" || e == metrics.EngineVLLM {
		return nil
	}
	out := map[string]string{}
	for _, m := range metrics.Catalog {
		if em := m.ForEngine(e); len(em.Alts) == 0 {
			out[m.ID] = em.Absent
		}
	}
	return out
}
