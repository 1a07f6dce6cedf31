package traces_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/casebook/casebook/traces"
	"github.com/casebook/casebook/traces/internal/tracegen"
)

var update = flag.Bool("update", false, "rewrite the generated fixtures in testdata/")

// fixtureOptions are the generator settings of the committed fixtures.
var fixtureOptions = tracegen.Options{Seed: 1, Layers: 8, PrefillSteps: 1, DecodeSteps: 3, TP: 2}

const (
	fixtureJSON   = "testdata/llama8b_tp2.pt.trace.json"
	fixtureGzip   = "testdata/llama8b_tp2.pt.trace.json.gz"
	fixtureNsight = "testdata/llama8b_tp2.nsys.sqlite"
)

// TestFixtures checks that the committed fixtures are what the generator
// writes today; run `go test -tags sqlite_fts5 ./traces -run TestFixtures
// -update` after changing the generator.
func TestFixtures(t *testing.T) {
	var want bytes.Buffer
	if _, err := tracegen.WriteChrome(&want, fixtureOptions); err != nil {
		t.Fatal(err)
	}
	if *update {
		writeFixtures(t, want.Bytes())
	}
	got, err := os.ReadFile(fixtureJSON)
	if err != nil {
		t.Fatalf("%v (run with -update to generate)", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s differs from the generator output; run with -update", fixtureJSON)
	}
	zf, err := os.Open(fixtureGzip)
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zr, err := gzip.NewReader(zf)
	if err != nil {
		t.Fatal(err)
	}
	var unz bytes.Buffer
	if _, err := unz.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unz.Bytes(), want.Bytes()) {
		t.Fatalf("%s differs from %s; run with -update", fixtureGzip, fixtureJSON)
	}

	// The Nsight fixture is compared by content: SQLite files are not
	// byte-stable across library versions.
	tmp := filepath.Join(t.TempDir(), "x.sqlite")
	if err := tracegen.WriteNsight(context.Background(), tmp, fixtureOptions); err != nil {
		t.Fatal(err)
	}
	fresh, err := traces.ParseFile(context.Background(), tmp, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := traces.ParseFile(context.Background(), fixtureNsight, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh.Activities) != len(stored.Activities) {
		t.Fatalf("%s has %d activities, the generator writes %d; run with -update", fixtureNsight, len(stored.Activities), len(fresh.Activities))
	}
	for i := range fresh.Activities {
		a, b := fresh.Activities[i], stored.Activities[i]
		if a.Start != b.Start || a.End != b.End || fresh.Names[a.Name] != stored.Names[b.Name] {
			t.Fatalf("%s activity %d differs from the generator; run with -update", fixtureNsight, i)
		}
	}
}

func writeFixtures(t *testing.T, chrome []byte) {
	t.Helper()
	if err := os.WriteFile(fixtureJSON, chrome, 0o644); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.ModTime = zw.ModTime.UTC() // zero: stable bytes
	if _, err := zw.Write(chrome); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixtureGzip, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(fixtureNsight)
	if err := tracegen.WriteNsight(context.Background(), fixtureNsight, fixtureOptions); err != nil {
		t.Fatal(err)
	}
}
