package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
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

// compress gzips data. Snapshots and chart windows are the bulk of the
// archive and compress about tenfold.
func compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// appendFloat appends v as a JSON number, or null when it is not finite.
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
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
	n := 0
	for _, s := range ws {
		n += len(s.Samples)
	}
	b := make([]byte, 0, 64+n*24)
	b = append(b, '[')
	for i, s := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"m":`...)
		b = appendString(b, s.Metric)
		b = append(b, `,"model":`...)
		b = appendString(b, s.Scope.Model)
		if s.Scope.Instance != "" {
			b = append(b, `,"inst":`...)
			b = appendString(b, s.Scope.Instance)
		}
		b = append(b, `,"t":[`...)
		first := true
		for _, p := range s.Samples {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = strconv.AppendInt(b, p.T.UnixMilli(), 10)
		}
		b = append(b, `],"v":[`...)
		first = true
		for _, p := range s.Samples {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendFloat(b, p.V)
		}
		b = append(b, "]}"...)
	}
	b = append(b, ']')
	return compress(b)
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

// storedSnapshot is the archive's encoding of a metrics.Snapshot: the ids
// once, then the current values and each history point as arrays aligned
// with them (null where a value is missing or not finite). It is several
// times quicker to encode than maps of values per point.
type storedSnapshot struct {
	Version  int          `json:"v"`
	At       int64        `json:"at"` // Unix nanoseconds
	Model    string       `json:"model"`
	Instance string       `json:"inst,omitempty"`
	IDs      []string     `json:"ids"`
	Current  []*float64   `json:"cur"`
	T        []int64      `json:"t"` // history times, Unix nanoseconds
	H        [][]*float64 `json:"h"` // history values
	// Engine and Absent are the snapshot's engine and the metrics it
	// could not provide, with why; absent in blobs written before them.
	Engine string            `json:"engine,omitempty"`
	Absent map[string]string `json:"absent,omitempty"`
}

func packSnapshot(s metrics.Snapshot) ([]byte, error) {
	seen := map[string]bool{}
	var ids []string
	collect := func(v metrics.Values) {
		for id := range v {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	collect(s.Current)
	for _, p := range s.History {
		collect(p.Values)
	}
	sort.Strings(ids)
	values := func(b []byte, v metrics.Values) []byte {
		b = append(b, '[')
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			x, ok := v[id]
			if !ok {
				b = append(b, "null"...)
			} else {
				b = appendFloat(b, x)
			}
		}
		return append(b, ']')
	}
	b := make([]byte, 0, 256+len(ids)*16*(len(s.History)+1))
	b = append(b, `{"v":2,"at":`...)
	b = strconv.AppendInt(b, s.At.UnixNano(), 10)
	b = append(b, `,"model":`...)
	b = appendString(b, s.Scope.Model)
	if s.Scope.Instance != "" {
		b = append(b, `,"inst":`...)
		b = appendString(b, s.Scope.Instance)
	}
	if s.Engine != "" {
		b = append(b, `,"engine":`...)
		b = appendString(b, string(s.Engine))
	}
	if len(s.Absent) > 0 {
		keys := make([]string, 0, len(s.Absent))
		for k := range s.Absent {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `,"absent":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, s.Absent[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id)
	}
	b = append(b, `],"cur":`...)
	b = values(b, s.Current)
	b = append(b, `,"t":[`...)
	for i, p := range s.History {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, p.At.UnixNano(), 10)
	}
	b = append(b, `],"h":[`...)
	for i, p := range s.History {
		if i > 0 {
			b = append(b, ',')
		}
		b = values(b, p.Values)
	}
	b = append(b, "]}"...)
	return compress(b)
}

func unpackSnapshot(blob []byte) (metrics.Snapshot, error) {
	var ss storedSnapshot
	if err := unpackJSON(blob, &ss); err != nil {
		return metrics.Snapshot{}, err
	}
	if ss.Version != 2 || len(ss.Current) != len(ss.IDs) || len(ss.T) != len(ss.H) {
		return metrics.Snapshot{}, fmt.Errorf("decode: snapshot blob is not version 2 or its arrays disagree")
	}
	values := func(xs []*float64) (metrics.Values, error) {
		if len(xs) != len(ss.IDs) {
			return nil, fmt.Errorf("decode: a history point has %d values for %d ids", len(xs), len(ss.IDs))
		}
		v := make(metrics.Values, len(xs))
		for i, x := range xs {
			if x != nil {
				v[ss.IDs[i]] = *x
			}
		}
		return v, nil
	}
	out := metrics.Snapshot{At: time.Unix(0, ss.At).UTC(), Scope: metrics.Scope{Model: ss.Model, Instance: ss.Instance},
		Engine: metrics.Engine(ss.Engine), Absent: ss.Absent}
	var err error
	if out.Current, err = values(ss.Current); err != nil {
		return metrics.Snapshot{}, err
	}
	for i, t := range ss.T {
		v, err := values(ss.H[i])
		if err != nil {
			return metrics.Snapshot{}, err
		}
		out.History = append(out.History, metrics.Point{At: time.Unix(0, t).UTC(), Values: v})
	}
	return out, nil
}
