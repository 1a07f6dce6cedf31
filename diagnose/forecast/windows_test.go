package forecast

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadWindows(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
	}{
		{"header, two forms, sorted", "start,end\n2014-03-18 17:06:00,2014-03-19 04:16:00\n2014-03-14T03:31:00Z,2014-03-14T14:41:00Z\n", 2, ""},
		{"NAB's microseconds and extra columns", "start,end,kind\n2014-03-14 03:31:00.000000,2014-03-14 14:41:00.000000,outage\n", 1, ""},
		{"no header, Unix seconds", "1394767860,1394808060\n", 1, ""},
		{"end before start", "start,end\n2014-03-14 14:41:00,2014-03-14 03:31:00\n", 0, "line 2: end 2014-03-14T03:31:00Z is before start"},
		{"bad end", "start,end\n2014-03-14 03:31:00,soon\n", 0, "line 2: end: timestamp"},
		{"one column", "start,end\n2014-03-14 03:31:00\n", 0, "line 2: want start,end"},
		{"only a header", "start,end\n", 0, "no windows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadWindows(strings.NewReader(tc.in))
			if !wantWindows(t, got, err, tc.want, tc.wantErr) {
				return
			}
			for i := 1; i < len(got); i++ {
				if got[i].Start.Before(got[i-1].Start) {
					t.Errorf("windows not sorted by start: %v", got)
				}
			}
		})
	}
	big := "start,end\n" + strings.Repeat("2014-03-14 03:31:00,2014-03-14 14:41:00\n", MaxWindowsBytes/40+1)
	if _, err := ReadWindows(strings.NewReader(big)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: err = %v, want ErrTooLarge", err)
	}
}

func FuzzReadWindows(f *testing.F) {
	f.Add("start,end\n2014-03-14 03:31:00,2014-03-14 14:41:00\n")
	f.Add("1394767860,1394808060\n1394767860,1394767860\n")
	f.Add("start,end\n2014-03-14 14:41:00,2014-03-14 03:31:00\n")
	f.Add(",\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadWindows(strings.NewReader(in))
		if err != nil {
			return
		}
		for i, w := range got {
			if w.End.Before(w.Start) {
				t.Fatalf("window %d ends before it starts: %v", i, w)
			}
			if i > 0 && w.Start.Before(got[i-1].Start) {
				t.Fatalf("windows out of order at %d", i)
			}
		}
		// Whatever parses must score.
		ScoreWindows([]time.Time{got[0].Start, got[0].End.Add(time.Second)}, got, time.Time{})
	})
}

func TestScoreWindows(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 1, 5, h, 0, 0, 0, time.UTC) }
	windows := []Window{{Start: at(2), End: at(4)}, {Start: at(10), End: at(11)}, {Start: at(20), End: at(22)}}
	// Fired: before scoring starts (ignored), in the first window twice,
	// at the second's end (inside: ends are included), and twice
	// outside every window.
	fired := []time.Time{at(0), at(3), at(4), at(6), at(11), at(23)}
	s := ScoreWindows(fired, windows, at(1))
	if s.Windows != 3 || s.Detected != 2 || s.Alerts != 5 || s.Outside != 2 {
		t.Errorf("score = %+v, want 3 windows, 2 detected, 5 alerts scored, 2 outside", s)
	}
	if got, want := s.MedianDelay(), time.Hour; got != want {
		t.Errorf("median delay = %s, want %s (delays %v)", got, want, s.Delays)
	}
	if (WindowScore{}).MedianDelay() != 0 {
		t.Error("no detection: median delay should be 0")
	}
}

func TestReadWindowsJSON(t *testing.T) {
	const labels = `{
 "realKnownCause/a.csv": [["2014-03-18 17:06:00.000000", "2014-03-19 04:16:00.000000"], ["2014-03-14 03:31:00.000000", "2014-03-14 14:41:00.000000"]],
 "realTraffic/b.csv": [],
 "other/bad.csv": [["2014-03-14 03:31:00"]],
 "other/rev.csv": [["2014-03-14 03:31:00", "2014-03-13 03:31:00"]]
}`
	tests := []struct {
		path    string
		want    int
		wantErr string
	}{
		{"/data/nab/realKnownCause/a.csv", 2, ""},
		{"realKnownCause/a.csv", 2, ""},
		{"a.csv", 2, ""},
		{"b.csv", 0, ""},
		{"c.csv", 0, `no entry for "c.csv"`},
		{"bad.csv", 0, "window 1: want [start, end], got 1 values"},
		{"rev.csv", 0, "window 1: end 2014-03-13T03:31:00Z is before start 2014-03-14T03:31:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			got, err := ReadWindowsJSON(strings.NewReader(labels), tc.path)
			if !wantWindows(t, got, err, tc.want, tc.wantErr) {
				return
			}
			if tc.want == 2 && !got[0].Start.Equal(time.Date(2014, 3, 14, 3, 31, 0, 0, time.UTC)) {
				t.Errorf("first window starts %s, want the earlier one first", got[0].Start)
			}
		})
	}
	if _, err := ReadWindowsJSON(strings.NewReader(`[1, 2]`), "a.csv"); err == nil || !strings.Contains(err.Error(), "want an object") {
		t.Errorf("not an object: err = %v", err)
	}
}

func FuzzReadWindowsJSON(f *testing.F) {
	f.Add(`{"d/a.csv": [["2014-03-14 03:31:00", "2014-03-14 14:41:00"]]}`, "a.csv")
	f.Add(`{"a.csv": [[]]}`, "a.csv")
	f.Add(`{}`, "")
	f.Fuzz(func(t *testing.T, in, path string) {
		got, err := ReadWindowsJSON(strings.NewReader(in), path)
		if err != nil {
			return
		}
		for i, w := range got {
			if w.End.Before(w.Start) || i > 0 && w.Start.Before(got[i-1].Start) {
				t.Fatalf("bad window %d: %v", i, got)
			}
		}
	})
}

// wantWindows checks a read's result: an error containing wantErr when it
// is set (and reports false: nothing more to check), else want windows.
func wantWindows(t *testing.T, got []Window, err error, want int, wantErr string) bool {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one containing %q", err, wantErr)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != want {
		t.Fatalf("got %d windows, want %d", len(got), want)
	}
	return true
}
