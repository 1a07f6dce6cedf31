package metrics_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/casebook/casebook/metrics"
)

const goodSnapshot = `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m","instance":"m-0"},
 "current":{"ttft_ms":120,"kv_cache_usage":0.5,"made_up_metric":7},
 "history":[{"at":"2026-11-30T09:02:00Z","values":{"ttft_ms":100}},{"at":"2026-11-30T09:01:00Z","values":{"ttft_ms":90}}],
 "extra_field":true}`

func TestDecodeSnapshot(t *testing.T) {
	s, err := metrics.DecodeSnapshot([]byte(goodSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Current["made_up_metric"]; ok {
		t.Error("unknown metric id was kept")
	}
	if s.Scope.String() != "m/m-0" {
		t.Errorf("scope = %q", s.Scope.String())
	}
	if !s.History[0].At.Before(s.History[1].At) {
		t.Error("history is not sorted by time")
	}
	if got := s.Series("ttft_ms"); len(got) != 2 || got[0] != 90 {
		t.Errorf("Series = %v, want [90 100]", got)
	}
}

func TestDecodeSnapshotRejects(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"malformed", `{"at":`, "malformed JSON"},
		{"not an object", `[1,2]`, "should be"},
		{"missing at", `{"scope":{"model":"m"},"current":{}}`, `"at" is missing`},
		{"missing model", `{"at":"2026-11-30T10:00:00Z","scope":{},"current":{}}`, `"scope.model" is missing`},
		{"negative rate", `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{"throughput_rps":-1}}`, "current.throughput_rps is -1, below its minimum"},
		{"fraction above one", `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{"kv_cache_usage":1.5}}`, "above its maximum"},
		{"bad history value", `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{},"history":[{"at":"2026-11-30T09:00:00Z","values":{"error_rate":-0.1}}]}`, "history[0].error_rate"},
		{"string value", `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":"NaN"}}`, "should be float64"},
		{"trailing data", `{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{}} {}`, "trailing data"},
		{"too deep", strings.Repeat("[", 50) + strings.Repeat("]", 50), "nested deeper"},
		{"too large", `{"x":"` + strings.Repeat("a", metrics.MaxSnapshotBytes) + `"}`, "over the"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := metrics.DecodeSnapshot([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, metrics.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestDecodeCase(t *testing.T) {
	in := strings.Replace(goodSnapshot, `"extra_field":true`, `"label":"queue_backlog","secondary":["gpu_throttling"]`, 1)
	c, err := metrics.DecodeCase([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.Label != "queue_backlog" || len(c.Secondary) != 1 {
		t.Errorf("case = %+v", c)
	}
	if _, err := metrics.DecodeCase([]byte(goodSnapshot)); err == nil || !strings.Contains(err.Error(), "label is missing") {
		t.Errorf("unlabelled case: err = %v", err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(goodSnapshot))
	f.Add([]byte(`{"at":"2026-11-30T10:00:00Z","scope":{"model":"m"},"current":{"ttft_ms":1e308}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := metrics.DecodeSnapshot(data)
		if err != nil {
			return
		}
		// A decoded snapshot must satisfy the contract it was checked against.
		for id, v := range s.Current {
			m, ok := metrics.Lookup(id)
			if !ok {
				t.Fatalf("unknown id %q survived decoding", id)
			}
			if msg := m.Check(v); msg != "" {
				t.Fatalf("%s %s survived decoding", id, msg)
			}
		}
		if s.Scope.Model == "" || s.At.IsZero() {
			t.Fatal("snapshot without scope or time survived decoding")
		}
	})
}
