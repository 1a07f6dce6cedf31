package forecast

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		limit   int64
		want    []string // RFC 3339 times in output order
		vals    []float64
		wantErr string
	}{
		{"RFC 3339", "timestamp,value\n2026-01-05T00:01:00Z,2.5\n2026-01-05T00:00:00Z,1\n", 0,
			[]string{"2026-01-05T00:00:00Z", "2026-01-05T00:01:00Z"}, []float64{1, 2.5}, ""},
		{"NAB style with offset zone and extra column", "timestamp,value,label\n2014-04-02 14:29:00,42.5,0\n2014-04-02 14:34:00,\"43\",1\n", 0,
			[]string{"2014-04-02T14:29:00Z", "2014-04-02T14:34:00Z"}, []float64{42.5, 43}, ""},
		{"zone offset", "t,v\n2026-01-05T01:00:00+01:00,3\n", 0, []string{"2026-01-05T00:00:00Z"}, []float64{3}, ""},
		{"no header, CRLF, blank lines and comments", "2026-01-05 00:00:00,1\r\n\r\n# note\r\n2026-01-05 00:01:00,2\r\n", 0,
			[]string{"2026-01-05T00:00:00Z", "2026-01-05T00:01:00Z"}, []float64{1, 2}, ""},
		{"empty and NaN values", "timestamp,value\n2026-01-05 00:00:00,\n2026-01-05 00:01:00,NaN\n", 0,
			[]string{"2026-01-05T00:00:00Z", "2026-01-05T00:01:00Z"}, []float64{math.NaN(), math.NaN()}, ""},
		{"quoted note column holding commas and a line break", "timestamp,value,note\n2026-01-05 00:00:00,1,\"deploy, then\nrollback\"\n2026-01-05 00:01:00,2,\n", 0,
			[]string{"2026-01-05T00:00:00Z", "2026-01-05T00:01:00Z"}, []float64{1, 2}, ""},
		{"unterminated quote names the line", "timestamp,value\n2026-01-05 00:00:00,1\n2026-01-05 00:01:00,\"2\n", 0, nil, nil, "line 3"},
		{"bad timestamp names the line", "timestamp,value\n2026-01-05 00:00:00,1\nyesterday,2\n", 0, nil, nil, "line 3"},
		{"bad value names the line", "timestamp,value\n2026-01-05 00:00:00,1\n2026-01-05 00:01:00,fast\n", 0, nil, nil, "line 3: value \"fast\""},
		{"one column", "timestamp,value\n2026-01-05 00:00:00\n", 0, nil, nil, "line 2: want timestamp,value"},
		{"empty", "", 0, nil, nil, "empty"},
		{"over the limit", "timestamp,value\n2026-01-05 00:00:00,1\n", 20, nil, nil, "size limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCSV(strings.NewReader(tc.in), tc.limit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d samples, want %d", len(got), len(tc.want))
			}
			for i, s := range got {
				if s.T.Format(time.RFC3339) != tc.want[i] {
					t.Errorf("sample %d time = %s, want %s", i, s.T.Format(time.RFC3339), tc.want[i])
				}
				if !(s.V == tc.vals[i] || math.IsNaN(s.V) && math.IsNaN(tc.vals[i])) {
					t.Errorf("sample %d value = %v, want %v", i, s.V, tc.vals[i])
				}
			}
		})
	}
	if _, err := ReadCSV(strings.NewReader("t,v\n2026-01-05 00:00:00,1\n"), 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("timestamp,value\n2026-01-05 00:00:00,1\n2026-01-05 00:01:00,2\n")
	f.Add("timestamp,value\n2026-01-05T00:00:00Z,NaN\n")
	f.Add("a\n")
	f.Add("t,v\n2026-01-05 00:00:00,1e309\n,\n")
	f.Add("timestamp,value,is_anomaly\n1388534400,1,0\n1388534460,2,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadCSV(strings.NewReader(in), 1<<16)
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i].T.Before(got[i-1].T) {
				t.Fatalf("samples out of order at %d", i)
			}
		}
		// Whatever parses must replay through the detector.
		d := NewDetector(DetectorOptions{})
		for _, s := range got {
			d.Observe("x", s.T, s.V)
		}
	})
}

func TestParseTimeForms(t *testing.T) {
	want := time.Date(2014, 1, 1, 0, 5, 0, 0, time.UTC)
	for _, s := range []string{"2014-01-01T00:05:00Z", "2014-01-01T01:05:00+01:00", "2014-01-01 00:05:00", "2014-01-01T00:05:00", "2014-01-01 00:05", " 1388534700 ", "1388534700000"} {
		got, err := ParseTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"253402300800000", "-5", "yesterday", "2014-13-01 00:00:00", ""} {
		if _, err := ParseTime(s); err == nil {
			t.Errorf("ParseTime(%q) accepted", s)
		}
	}
}
