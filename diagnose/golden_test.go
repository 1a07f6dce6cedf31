package diagnose

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

var update = flag.Bool("update", false, "rewrite diagnose/testdata/*.golden.json from the engine's output")

// TestGolden diagnoses every testdata/<case>.input.json and compares the
// report with testdata/<case>.golden.json. The case name up to its first
// dot is the expected root cause (<cause>.nohistory cases carry no
// history, so only absolute limits can name the cause).
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.input.json"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	e := New(Options{})
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".input.json")
		cause, _, _ := strings.Cut(name, ".")
		seen[cause] = true
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			s, err := m.DecodeSnapshot(raw)
			if err != nil {
				t.Fatalf("decode %s: %v", in, err)
			}
			d := e.Diagnose(s)
			d.EngineVersion = "golden" // independent of the build
			got, err := json.MarshalIndent(d, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			if d.RootCause != cause {
				t.Errorf("diagnosed %s, want %s", d.RootCause, cause)
			}
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read %s: %v (run go test ./diagnose -run TestGolden -update to create it)", golden, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("diagnosis differs from %s; if the change is intended, run go test ./diagnose -run TestGolden -update\ngot:\n%s", golden, got)
			}
		})
	}
	for _, c := range m.Causes {
		if !seen[c.ID] {
			t.Errorf("no golden case testdata/%s.input.json", c.ID)
		}
	}
}
