package diagnose

import (
	"encoding/json"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

// FuzzDecodeAndDiagnose drives the decoder path the CLI and the console use:
// arbitrary bytes are decoded with metrics.DecodeSnapshot and, when they
// decode, diagnosed by the rules alone and with a knowledge base (which
// reads the recent points to order two faults). Nothing may panic and the
// output must marshal.
func FuzzDecodeAndDiagnose(f *testing.F) {
	kv, errs := faults[m.CauseKVCacheEviction], faults[m.CauseEngineErrors]
	for _, s := range []m.Snapshot{
		withOnset(synth(7, overlay(blend(0.3, errs), blend(1, kv))), 8, blend(0.3, errs), blend(1, kv)),
		withOnset(synth(7, nil), 8, nil, blend(1, kv)),
	} {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	for _, fault := range []m.Values{nil, faults[m.CauseKVCacheEviction], faults[m.CauseTransportLatency]} {
		s := synth(1, fault)
		s.History = s.History[:5]
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"at":"2026-01-01T00:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1e308,"kv_cache_usage":1}}`))
	f.Add([]byte(`{"at":"2026-01-01T00:00:00Z","scope":{"model":"m"},"current":{},"history":[{"values":{}}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[`))
	e := New(Options{})
	withKB := New(Options{Cases: stormAndErrorsKB(f)})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := m.DecodeSnapshot(data)
		if err != nil {
			return
		}
		checkFinite(t, e.Diagnose(s))
		checkFinite(t, withKB.Diagnose(s))
	})
}

// FuzzEngine feeds the engine values the decoder would reject (NaN, Inf,
// negative, out of range) and odd histories directly.
func FuzzEngine(f *testing.F) {
	f.Add(0.5, 200.0, 18.0, 0.99, 3.0, 60, uint8(0))
	f.Add(-1.0, -5.0, 0.0, 2.0, -3.0, 0, uint8(255))
	f.Add(1e308, 1e308, 1e-308, 1.0, 1e308, 2, uint8(7))
	e := New(Options{})
	ids := []string{m.SMUtil, m.TTFT, m.TPOT, m.KVCacheUsage, m.PreemptionRate}
	f.Fuzz(func(t *testing.T, sm, ttft, tpot, kv, pre float64, n int, mask uint8) {
		if n < 0 {
			n = -n
		}
		n %= 80
		s := synth(1, nil)
		s.History = s.History[:min(n, len(s.History))]
		for i, x := range []float64{sm, ttft, tpot, kv, pre} {
			if mask&(1<<i) != 0 {
				delete(s.Current, ids[i])
			} else {
				s.Current[ids[i]] = x
			}
			if mask&(1<<(i+3)) != 0 && len(s.History) > 0 {
				s.History[0].Values[ids[i]] = x
			}
		}
		checkFinite(t, e.Diagnose(s))
	})
}
