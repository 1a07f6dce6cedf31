package change

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // deployment windows name IANA zones; do not depend on the host's zoneinfo
)

// Schedule is a weekly set of deployment windows in one time zone, e.g.
// "Tue 10:00-12:00, Thu 14:00-16:00 Europe/Berlin".
type Schedule struct {
	Loc     *time.Location
	Windows []WeeklyWindow
	text    string
}

// WeeklyWindow is one window of a weekly schedule, minutes from midnight.
type WeeklyWindow struct {
	Day        time.Weekday
	Start, End int // minutes after midnight, Start < End
}

// Window is one concrete deployment window.
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Zone  string    `json:"zone"`
	// Open is true when the window had already begun at the time asked.
	Open bool `json:"open"`
}

// String is the schedule as it was written.
func (s Schedule) String() string { return s.text }

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseSchedule reads a weekly schedule: comma-separated windows of a
// three-letter day (or a day range like Mon-Fri) and a HH:MM-HH:MM time
// range, followed by an optional IANA time zone (UTC when absent).
func ParseSchedule(s string) (Schedule, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return Schedule{}, errors.New("change: deploy windows: the schedule is empty")
	}
	loc := time.UTC
	if i := strings.LastIndex(text, " "); i > 0 {
		last := text[i+1:]
		if strings.Contains(last, "/") || last == "UTC" {
			l, err := time.LoadLocation(last)
			if err != nil {
				return Schedule{}, fmt.Errorf("change: deploy windows: unknown time zone %q", last)
			}
			loc, text = l, strings.TrimSpace(text[:i])
		}
	}
	var out []WeeklyWindow
	for _, part := range strings.Split(text, ",") {
		f := strings.Fields(part)
		if len(f) != 2 {
			return Schedule{}, fmt.Errorf("change: deploy windows: %q is not \"Day HH:MM-HH:MM\"", strings.TrimSpace(part))
		}
		days, err := parseDays(f[0])
		if err != nil {
			return Schedule{}, err
		}
		from, to, ok := strings.Cut(f[1], "-")
		if !ok {
			return Schedule{}, fmt.Errorf("change: deploy windows: %q is not a HH:MM-HH:MM range", f[1])
		}
		a, err := parseClock(from)
		if err != nil {
			return Schedule{}, err
		}
		b, err := parseClock(to)
		if err != nil {
			return Schedule{}, err
		}
		if b <= a {
			return Schedule{}, fmt.Errorf("change: deploy windows: %s ends before it starts", f[1])
		}
		for _, d := range days {
			out = append(out, WeeklyWindow{Day: d, Start: a, End: b})
		}
	}
	return Schedule{Loc: loc, Windows: out, text: strings.TrimSpace(s)}, nil
}

func parseDays(s string) ([]time.Weekday, error) {
	from, to, isRange := strings.Cut(strings.ToLower(s), "-")
	a, ok := weekdays[from]
	if !ok {
		return nil, fmt.Errorf("change: deploy windows: %q is not a day (Mon, Tue, ... Sun)", s)
	}
	if !isRange {
		return []time.Weekday{a}, nil
	}
	b, ok := weekdays[to]
	if !ok {
		return nil, fmt.Errorf("change: deploy windows: %q is not a day (Mon, Tue, ... Sun)", to)
	}
	var out []time.Weekday
	for d := a; ; d = (d + 1) % 7 {
		out = append(out, d)
		if d == b {
			return out, nil
		}
	}
}

func parseClock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || (hh == 24 && mm != 0) {
		return 0, fmt.Errorf("change: deploy windows: %q is not a HH:MM time", s)
	}
	return hh*60 + mm, nil
}

// Next returns the first window that has not ended at now: the window
// now is in, or the next one to begin.
func (s Schedule) Next(now time.Time) (Window, bool) {
	if len(s.Windows) == 0 {
		return Window{}, false
	}
	local := now.In(s.Loc)
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, s.Loc)
	var best Window
	found := false
	for day := 0; day <= 7; day++ {
		d := midnight.AddDate(0, 0, day)
		for _, w := range s.Windows {
			if d.Weekday() != w.Day {
				continue
			}
			start := time.Date(d.Year(), d.Month(), d.Day(), w.Start/60, w.Start%60, 0, 0, s.Loc)
			end := time.Date(d.Year(), d.Month(), d.Day(), w.End/60, w.End%60, 0, 0, s.Loc)
			if !end.After(now) {
				continue
			}
			if !found || start.Before(best.Start) {
				best, found = Window{Start: start, End: end, Zone: s.Loc.String(), Open: !start.After(now)}, true
			}
		}
		if found {
			return best, true
		}
	}
	return Window{}, false
}
