package forecast

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// MaxCSVBytes is the default input limit of ReadCSV (64 MiB, about two
// million rows).
const MaxCSVBytes = 64 << 20

// ErrTooLarge is returned when a CSV exceeds its size limit.
var ErrTooLarge = errors.New("forecast: input exceeds the size limit")

// timeLayouts are the accepted timestamp forms.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04",
}

// ParseTime parses an RFC 3339 timestamp, "YYYY-MM-DD HH:MM:SS" (taken
// as UTC), or Unix seconds or milliseconds (digits, as many exports write
// them).
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		switch {
		case n < maxUnixSeconds:
			return time.Unix(n, 0).UTC(), nil
		case n < maxUnixSeconds*1000:
			return time.UnixMilli(n).UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q is neither RFC 3339, YYYY-MM-DD HH:MM:SS nor Unix seconds or milliseconds", s)
}

// maxUnixSeconds bounds Unix timestamps at the year 9999: a larger number
// is milliseconds (as JavaScript and many exporters write them), up to the
// same year.
const maxUnixSeconds = 253402300800

// ReadCSV reads "timestamp,value" rows (a header line first; further
// columns are ignored) of at most limit bytes (MaxCSVBytes when limit <= 0)
// and returns the samples sorted by time (stable, so duplicates keep their
// input order). Empty values and "NaN" become NaN samples. A bad row is an
// error that names its line.
func ReadCSV(r io.Reader, limit int64) ([]metrics.Sample, error) {
	if limit <= 0 {
		limit = MaxCSVBytes
	}
	var out []metrics.Sample
	seen, err := readRows(r, limit, "csv", "timestamp,value", func(line int, ts, vs string) error {
		t, err := ParseTime(ts)
		if err != nil {
			return fmt.Errorf("forecast: csv line %d: %w", line, err)
		}
		v := math.NaN()
		if vs != "" && !strings.EqualFold(vs, "nan") && !strings.EqualFold(vs, "null") {
			v, err = strconv.ParseFloat(vs, 64)
			if err != nil {
				return fmt.Errorf("forecast: csv line %d: value %q is not a number", line, clip(vs))
			}
		}
		out = append(out, metrics.Sample{T: t, V: v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seen {
		return nil, errors.New("forecast: csv is empty")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out, nil
}

// readLimited reads all of r, or fails with ErrTooLarge when r holds more
// than limit bytes; kind names the input in errors.
func readLimited(r io.Reader, limit int64, kind string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("forecast: read %s: %w", kind, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w of %d bytes (%s)", ErrTooLarge, limit, kind)
	}
	return data, nil
}

// readRows reads at most limit bytes of CSV rows (RFC 4180: a quoted
// field may hold commas) and calls row with the first two fields of each
// (further fields are ignored), skipping blank lines, "#" comments and a
// header: a first row whose first field is not a time. kind and want name
// the input and its columns in errors. It reports whether any row, the
// header included, was there.
func readRows(r io.Reader, limit int64, kind, want string, row func(line int, a, b string) error) (bool, error) {
	data, err := readLimited(r, limit, kind)
	if err != nil {
		return false, err
	}
	cr := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	cr.Comment = '#'
	cr.FieldsPerRecord = -1 // rows may carry further columns
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	seen := false
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return seen, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			return seen, fmt.Errorf("forecast: %s line %d: %w", kind, line, err)
		}
		if len(rec) < 2 {
			if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
				continue // a line of spaces
			}
			return seen, fmt.Errorf("forecast: %s line %d: want %s, got %q", kind, line, want, clip(strings.Join(rec, ",")))
		}
		a, b := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if !seen {
			seen = true
			if _, err := ParseTime(a); err != nil {
				continue // the header line
			}
		}
		if err := row(line, a, b); err != nil {
			return seen, err
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
