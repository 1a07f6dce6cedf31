package diagnose

import (
	"encoding/json"
	"reflect"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

func TestParseSnapshotMatchesMetrics(t *testing.T) {
	full, _ := json.Marshal(synth(1, faults[m.CauseQueueBacklog]))
	tests := []struct {
		name     string
		in       string
		wantFast bool // the fast path must take it
	}{
		{"full snapshot", string(full), true},
		{"minimal", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1}}`, true},
		{"spaces and empty history", " {\n \"scope\" : {\"model\":\"m\",\"instance\":\"i\"}, \"at\":\"2026-03-02T14:00:00+02:00\",\"current\":{},\"history\":[] }\n", true},
		{"unknown metric dropped", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"nope":1,"ttft_ms":2e2}}`, true},
		{"unknown field", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{},"x":1}`, false},
		{"escaped string", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m\u0041"},"current":{}}`, false},
		{"out of range", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"kv_cache_usage":2}}`, false},
		{"leading zero", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":01}}`, false},
		{"NaN", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":NaN}}`, false},
		{"huge number", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1e999}}`, false},
		{"trailing data", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{}} {}`, false},
		{"bad time", `{"at":"yesterday","scope":{"model":"m"},"current":{}}`, false},
		{"case-folded key", `{"AT":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{}}`, false},
		{"null history", `{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{},"history":null}`, false},
		{"missing model", `{"at":"2026-03-02T14:00:00Z","scope":{},"current":{}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fast := scanSnapshot([]byte(tc.in))
			if fast {
				s, _ := scanSnapshot([]byte(tc.in))
				fast = s.Normalize() == nil
			}
			if fast != tc.wantFast {
				t.Errorf("fast path = %v, want %v", fast, tc.wantFast)
			}
			checkParity(t, []byte(tc.in))
		})
	}
}

// checkParity asserts ParseSnapshot and metrics.DecodeSnapshot agree.
func checkParity(t *testing.T, data []byte) {
	t.Helper()
	got, gerr := ParseSnapshot(data)
	want, werr := m.DecodeSnapshot(data)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("ParseSnapshot error %v, metrics.DecodeSnapshot error %v", gerr, werr)
	}
	if gerr != nil {
		if gerr.Error() != werr.Error() {
			t.Fatalf("error %q, want %q", gerr, werr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot differs:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzParseSnapshotParity: on any input the fast decoder must agree with
// metrics.DecodeSnapshot, value for value and error for error.
func FuzzParseSnapshotParity(f *testing.F) {
	full, _ := json.Marshal(synth(1, faults[m.CauseKVCacheEviction]))
	f.Add(full)
	f.Add([]byte(`{"at":"2026-03-02T14:00:00Z","scope":{"model":"m","instance":"i"},"current":{"ttft_ms":-0.0,"error_rate":1E-3},"history":[{"at":"2026-03-02T13:00:00.5Z","values":{"ttft_ms":3}}]}`))
	f.Add([]byte(`{"at":"2026-03-02T14:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1,"ttft_ms":2}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParity(t, data)
	})
}

func BenchmarkParseSnapshot(b *testing.B) {
	data, _ := json.Marshal(synth(1, faults[m.CauseQueueBacklog]))
	b.SetBytes(int64(len(data)))
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := ParseSnapshot(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("metrics", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := m.DecodeSnapshot(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
