package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/casebook/casebook/metrics"
)

func TestSimulateCorpusFieldSets(t *testing.T) {
	env := func(string) string { return "" }
	dir := t.TempDir()
	for _, tc := range []struct {
		fields    string
		profiling bool
	}{{"default", false}, {"profiling", true}} {
		out := filepath.Join(dir, tc.fields+".jsonl")
		var stdout, stderr bytes.Buffer
		if err := simulateCmd(context.Background(), []string{"--scenarios", "4", "--seed", "2", "--dcgm-fields", tc.fields, "--out", out}, env, &stdout, &stderr); err != nil {
			t.Fatalf("--dcgm-fields %s: %v", tc.fields, err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		n, withDRAM := 0, 0
		for sc.Scan() {
			c, err := metrics.DecodeCase(sc.Bytes())
			if err != nil {
				t.Fatalf("--dcgm-fields %s line %d: %v", tc.fields, n+1, err)
			}
			n++
			if _, ok := c.Current[metrics.DRAMActive]; ok {
				withDRAM++
			}
		}
		f.Close()
		if n != 4 {
			t.Errorf("--dcgm-fields %s wrote %d cases, want 4", tc.fields, n)
		}
		if !tc.profiling && withDRAM > 0 {
			t.Errorf("--dcgm-fields default: %d cases carry DRAM activity", withDRAM)
		}
		if tc.profiling && withDRAM == 0 {
			t.Error("--dcgm-fields profiling: no case carries DRAM activity")
		}
	}
	for _, args := range [][]string{
		{"--scenarios", "2", "--dcgm-fields", "dcp", "--out", filepath.Join(dir, "x.jsonl")},
		{"--scenarios", "2", "--world", "second", "--dcgm-fields", "default", "--out", filepath.Join(dir, "y.jsonl")},
	} {
		var stdout, stderr bytes.Buffer
		if err := simulateCmd(context.Background(), args, env, &stdout, &stderr); err == nil {
			t.Errorf("simulate %q accepted", args)
		}
	}
}

func TestSimulateFleetExcludesShapeFlags(t *testing.T) {
	env := func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	err := simulateCmd(context.Background(), []string{"--fleet", "--models", "3", "--listen", "127.0.0.1:0"}, env, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--models") {
		t.Errorf("simulate --fleet --models 3: err = %v, want a usage error naming --models", err)
	}
}
