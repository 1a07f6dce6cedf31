package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/casebook/casebook/metrics"
)

// maxBlobBytes bounds a decompressed evidence blob, so a corrupt row cannot
// exhaust memory.
const maxBlobBytes = 64 << 20

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

// packJSON encodes v as gzip-compressed JSON. Snapshots and chart windows are
// the bulk of the archive and compress about tenfold.
func packJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unpackJSON decodes a blob written by packJSON into v.
func unpackJSON(b []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	defer zr.Close()
	data, err := io.ReadAll(io.LimitReader(zr, maxBlobBytes+1))
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	if len(data) > maxBlobBytes {
		return fmt.Errorf("decompress: blob larger than %d bytes", maxBlobBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// storedSeries is the archive's encoding of a metrics.Series: sample times
// as Unix milliseconds and values in parallel arrays, which is about five
// times quicker to encode and decode than RFC 3339 times per sample.
// Non-finite samples (gaps) are dropped: JSON cannot hold them.
type storedSeries struct {
	Metric   string    `json:"m"`
	Model    string    `json:"model"`
	Instance string    `json:"inst,omitempty"`
	T        []int64   `json:"t"`
	V        []float64 `json:"v"`
}

func packWindows(ws []metrics.Series) ([]byte, error) {
	out := make([]storedSeries, len(ws))
	for i, s := range ws {
		ss := storedSeries{Metric: s.Metric, Model: s.Scope.Model, Instance: s.Scope.Instance,
			T: make([]int64, 0, len(s.Samples)), V: make([]float64, 0, len(s.Samples))}
		for _, p := range s.Samples {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			ss.T = append(ss.T, p.T.UnixMilli())
			ss.V = append(ss.V, p.V)
		}
		out[i] = ss
	}
	return packJSON(out)
}

func unpackWindows(b []byte) ([]metrics.Series, error) {
	var in []storedSeries
	if err := unpackJSON(b, &in); err != nil {
		return nil, err
	}
	out := make([]metrics.Series, len(in))
	for i, ss := range in {
		if len(ss.T) != len(ss.V) {
			return nil, fmt.Errorf("decode: series %s has %d times and %d values", ss.Metric, len(ss.T), len(ss.V))
		}
		s := metrics.Series{Metric: ss.Metric, Scope: metrics.Scope{Model: ss.Model, Instance: ss.Instance},
			Samples: make([]metrics.Sample, len(ss.T))}
		for j := range ss.T {
			s.Samples[j] = metrics.Sample{T: time.UnixMilli(ss.T[j]).UTC(), V: ss.V[j]}
		}
		out[i] = s
	}
	return out, nil
}

// finiteSnapshot returns s with non-finite values removed (JSON cannot
// hold them); s itself is not modified.
func finiteSnapshot(s metrics.Snapshot) metrics.Snapshot {
	clean := func(v metrics.Values) metrics.Values {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				out := make(metrics.Values, len(v))
				for id, y := range v {
					if !math.IsNaN(y) && !math.IsInf(y, 0) {
						out[id] = y
					}
				}
				return out
			}
		}
		return v
	}
	s.Current = clean(s.Current)
	if len(s.History) > 0 {
		h := make([]metrics.Point, len(s.History))
		for i, p := range s.History {
			h[i] = metrics.Point{At: p.At, Values: clean(p.Values)}
		}
		s.History = h
	}
	return s
}
