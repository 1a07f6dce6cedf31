package forecast

import (
	"errors"
	"fmt"
	"io"
	"sort"
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
		start, err := ParseTime(a)
		if err != nil {
			return fmt.Errorf("forecast: windows line %d: start: %w", line, err)
		}
		end, err := ParseTime(b)
		if err != nil {
			return fmt.Errorf("forecast: windows line %d: end: %w", line, err)
		}
		if end.Before(start) {
			return fmt.Errorf("forecast: windows line %d: end %s is before start %s", line,
				end.Format(time.RFC3339), start.Format(time.RFC3339))
		}
		out = append(out, Window{Start: start, End: end})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("forecast: windows file has no windows")
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
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
