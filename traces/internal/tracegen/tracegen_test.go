package tracegen

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
)

func TestWriteChrome(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		minSize int64
		maxSize int64
	}{
		{"default", Options{Seed: 1}, 100 << 10, 1 << 20},
		{"decode only, one layer", Options{Seed: 1, Layers: 1, PrefillSteps: -1, DecodeSteps: 1, TP: 1}, 5 << 10, 64 << 10},
		{"target size", Options{Seed: 1, TargetBytes: 2 << 20}, 2 << 20, 3 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, b bytes.Buffer
			n, err := WriteChrome(&a, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(a.Len()) || n < tc.minSize || n > tc.maxSize {
				t.Errorf("wrote %d bytes (reported %d), want %d..%d", a.Len(), n, tc.minSize, tc.maxSize)
			}
			if _, err := WriteChrome(&b, tc.opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("output is not deterministic for a seed")
			}
			var doc struct {
				SchemaVersion       int               `json:"schemaVersion"`
				BaseTimeNanoseconds int64             `json:"baseTimeNanoseconds"`
				DeviceProperties    []json.RawMessage `json:"deviceProperties"`
				TraceEvents         []struct {
					Ph, Cat, Name string
				} `json:"traceEvents"`
			}
			if err := json.Unmarshal(a.Bytes(), &doc); err != nil {
				t.Fatalf("not valid JSON: %v", err)
			}
			cats := map[string]int{}
			for _, e := range doc.TraceEvents {
				cats[e.Cat]++
			}
			if doc.SchemaVersion != 1 || doc.BaseTimeNanoseconds != BaseTimeNanoseconds || len(doc.DeviceProperties) != 1 {
				t.Errorf("header %+v", doc)
			}
			for _, c := range []string{"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cpu_op", "user_annotation", "ac2g"} {
				if cats[c] == 0 {
					t.Errorf("no %s events", c)
				}
			}
		})
	}
}

func TestWriteNsight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sqlite")
	if err := WriteNsight(context.Background(), path, Options{Seed: 1, Layers: 2, DecodeSteps: 1}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for table, min := range map[string]int{
		"CUPTI_ACTIVITY_KIND_KERNEL": 20, "CUPTI_ACTIVITY_KIND_MEMCPY": 4, "CUPTI_ACTIVITY_KIND_MEMSET": 2,
		"CUPTI_ACTIVITY_KIND_RUNTIME": 10, "StringIds": 10, "TARGET_INFO_GPU": 1,
	} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if n < min {
			t.Errorf("%s has %d rows, want at least %d", table, n, min)
		}
	}
	var missing int
	if err := db.QueryRow(`SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.demangledName WHERE s.value IS NULL`).Scan(&missing); err != nil || missing != 0 {
		t.Errorf("%d kernels without a demangled name (%v)", missing, err)
	}
}
