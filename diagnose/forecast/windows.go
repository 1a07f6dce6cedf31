package forecast

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// MaxWindowsBytes is the input limit of ReadWindows (1 MiB, some 20,000
// windows).
const MaxWindowsBytes = 1 << 20

// ReadWindows reads labelled anomaly windows as CSV rows "start,end" (a
// header line first; timestamps in any form ParseTime accepts; further
// columns are ignored) and returns them sorted by start. A row whose end
// comes before its start, or that cannot be read, is an error that names
// its line.
func ReadWindows(r io.Reader) ([]Window, error) {
	var out []Window
	_, err := readRows(r, MaxWindowsBytes, "windows", "start,end", func(line int, a, b string) error {
		w, err := parseWindow(a, b)
		if err != nil {
			return fmt.Errorf("forecast: windows line %d: %w", line, err)
		}
		out = append(out, w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("forecast: windows file has no windows")
	}
	sortWindows(out)
	return out, nil
}

// parseWindow reads one window's start and end, which may not come before
// its start.
func parseWindow(a, b string) (Window, error) {
	start, err := ParseTime(a)
	if err != nil {
		return Window{}, fmt.Errorf("start: %w", err)
	}
	end, err := ParseTime(b)
	if err != nil {
		return Window{}, fmt.Errorf("end: %w", err)
	}
	if end.Before(start) {
		return Window{}, fmt.Errorf("end %s is before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	return Window{Start: start, End: end}, nil
}

func sortWindows(w []Window) {
	sort.SliceStable(w, func(i, j int) bool { return w[i].Start.Before(w[j].Start) })
}

// ReadWindowsJSON reads labelled windows in the layout of the Numenta
// Anomaly Benchmark's label files, a JSON object from data file paths to
// lists of [start, end] pairs, and returns those of the entry for the data
// file at path: the key equals path, path ends with "/"+key (a key
// relative to a data folder), or the key ends with "/"+path (a bare file
// name); sorted by start. A file with no entry for path
// is an error that says so; an entry with no windows is not.
func ReadWindowsJSON(r io.Reader, path string) ([]Window, error) {
	data, err := readLimited(r, MaxWindowsBytes, "windows")
	if err != nil {
		return nil, err
	}
	var all map[string][][]string
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("forecast: windows JSON: want an object of path: [[start, end], ...]: %w", err)
	}
	var key string
	for k := range all {
		match := k == path || strings.HasSuffix(path, "/"+k) || strings.HasSuffix(k, "/"+path)
		if match && (key == "" || k < key) {
			key = k
		}
	}
	if key == "" {
		return nil, fmt.Errorf("forecast: windows JSON has no entry for %q (%d entries)", path, len(all))
	}
	out := make([]Window, 0, len(all[key]))
	for i, pair := range all[key] {
		if len(pair) != 2 {
			return nil, fmt.Errorf("forecast: windows JSON %s window %d: want [start, end], got %d values", key, i+1, len(pair))
		}
		w, err := parseWindow(pair[0], pair[1])
		if err != nil {
			return nil, fmt.Errorf("forecast: windows JSON %s window %d: %w", key, i+1, err)
		}
		out = append(out, w)
	}
	sortWindows(out)
	return out, nil
}

// WindowScore is how a run of alerts matched labelled windows.
type WindowScore struct {
	Windows  int             // labelled windows
	Detected int             // windows an alert fired in
	Alerts   int             // alerts scored
	Outside  int             // alerts that fired in no window
	Delays   []time.Duration // per detected window, from its start to its first alert
}

// MedianDelay is the median of Delays, 0 when no window was detected.
func (s WindowScore) MedianDelay() time.Duration {
	if len(s.Delays) == 0 {
		return 0
	}
	d := append([]time.Duration(nil), s.Delays...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[(len(d)-1)/2]
}

// ScoreWindows matches the times alerts fired against labelled windows,
// the way public anomaly benchmarks count: a window is detected when an
// alert fires inside it (its end included, as labels are written), and an alert that fires inside no window is a
// false one. Alerts before from (a warm-up the labels do not cover) are
// not scored.
func ScoreWindows(fired []time.Time, windows []Window, from time.Time) WindowScore {
	s := WindowScore{Windows: len(windows)}
	for _, t := range fired {
		if t.Before(from) {
			continue
		}
		s.Alerts++
		inside := false
		for _, w := range windows {
			if !t.Before(w.Start) && !t.After(w.End) {
				inside = true
				break
			}
		}
		if !inside {
			s.Outside++
		}
	}
	for _, w := range windows {
		for _, t := range fired {
			if !t.Before(w.Start) && !t.After(w.End) {
				s.Detected++
				s.Delays = append(s.Delays, t.Sub(w.Start))
				break
			}
		}
	}
	return s
}
