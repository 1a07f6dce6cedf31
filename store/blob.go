package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// maxBlobBytes bounds a decompressed evidence blob, so a corrupt row cannot
// exhaust memory.
const maxBlobBytes = 64 << 20

// packJSON encodes v as gzip-compressed JSON. Snapshots and chart windows are
// the bulk of the archive and compress about tenfold.
func packJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
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
