package change

import (
	"errors"
	"testing"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

func TestPropose(t *testing.T) {
	current := map[string]string{"max_num_seqs": "256", "gpu_memory_utilization": "0.9", "replicas": "2",
		"tensor_parallel_size": "8", "enable_prefix_caching": "True", "num_speculative_tokens": "3"}
	tests := []struct {
		name     string
		knob     string
		rule     string
		override string
		current  map[string]string
		want     string
		wantErr  error
	}{
		{"literal", "gpu_memory_utilization", "0.95", "", current, "0.95", nil},
		{"times", "max_num_seqs", "current x 0.75", "", current, "192", nil},
		{"plus one", "replicas", "+1", "", current, "3", nil},
		{"minus", "gpu_memory_utilization", "current - 0.05", "", current, "0.85", nil},
		{"double clamps to the range", "tensor_parallel_size", "double", "", current, "8", nil},
		{"bool", "enable_prefix_caching", "false", "", current, "false", nil},
		{"observed metric", "max_num_seqs", "running_seqs x 0.5", "", current, "21", nil},
		{"relative without current", "max_num_seqs", "current x 2", "", nil, "", ErrNeedCurrent},
		{"no value in the rule", "max_model_len", "the p99 of real prompt+output length", "", current, "", ErrNeedValue},
		{"override wins", "max_model_len", "the p99 of real prompt+output length", "8192", current, "8192", nil},
		{"spec tokens plus", "num_speculative_tokens", "current + 2", "", current, "5", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := diagnose.Action{ID: "a", Knob: tc.knob, Proposed: tc.rule}
			p, err := Propose(a, tc.current, metrics.Values{metrics.RunningSeqs: 42}, tc.override)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Proposed != tc.want {
				t.Errorf("proposed %s, want %s (reason %q)", p.Proposed, tc.want, p.Reason)
			}
			if p.Reason == "" {
				t.Error("no reason")
			}
		})
	}
	if _, err := Propose(diagnose.Action{ID: "x"}, current, nil, ""); !errors.Is(err, ErrNoKnob) {
		t.Errorf("an operational action: err = %v, want ErrNoKnob", err)
	}
	if _, err := Propose(diagnose.Action{ID: "x", Knob: "max_num_seqs", Proposed: "8"}, map[string]string{"max_num_seqs": "lots"}, nil, ""); err == nil {
		t.Error("a current value that is not a number was accepted")
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"args", "vllm serve m --max-num-seqs 128 --gpu-memory-utilization=0.92 --enable-prefix-caching --port 8000",
			map[string]string{"max_num_seqs": "128", "gpu_memory_utilization": "0.92", "enable_prefix_caching": "true"}, false},
		{"negated flag", "--no-enable-prefix-caching", map[string]string{"enable_prefix_caching": "false"}, false},
		{"json", `{"max_num_seqs": 64, "tensor-parallel-size": 2, "other": 1}`, map[string]string{"max_num_seqs": "64", "tensor_parallel_size": "2"}, false},
		{"missing value", "--max-num-seqs", nil, true},
		{"out of range", "--max-num-seqs 0", nil, true},
		{"bad json", "{", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error for %q", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
	if got := Current(map[string]string{"gpu_memory_utilization": "0.9", "block_size": "16"}); len(got) != 1 || got["gpu_memory_utilization"] != "0.9" {
		t.Errorf("Current = %v", got)
	}
}
