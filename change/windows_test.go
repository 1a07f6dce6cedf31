package change

import (
	"strings"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	s, err := ParseSchedule("Tue 10:00-12:00, Thu 14:00-16:00 Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	tests := []struct {
		name      string
		now       time.Time
		wantStart time.Time
		open      bool
	}{
		// Monday 2026-11-30 08:00 UTC is 09:00 in Berlin: Tuesday's window is next.
		{"before", time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 0, 0, berlin), false},
		{"inside", time.Date(2026, 12, 1, 10, 30, 0, 0, berlin), time.Date(2026, 12, 1, 10, 0, 0, 0, berlin), true},
		{"at the end of one, the next", time.Date(2026, 12, 1, 12, 0, 0, 0, berlin), time.Date(2026, 12, 3, 14, 0, 0, 0, berlin), false},
		{"after the last of the week", time.Date(2026, 12, 3, 17, 0, 0, 0, berlin), time.Date(2026, 12, 8, 10, 0, 0, 0, berlin), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := s.Next(tc.now)
			if !ok {
				t.Fatal("no window")
			}
			if !w.Start.Equal(tc.wantStart) || w.Open != tc.open {
				t.Errorf("next = %s (open %v), want %s (open %v)", w.Start, w.Open, tc.wantStart, tc.open)
			}
			if w.End.Sub(w.Start) != 2*time.Hour || w.Zone != "Europe/Berlin" {
				t.Errorf("window %+v", w)
			}
		})
	}
	r, err := ParseSchedule("Mon-Fri 09:00-09:30")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Windows) != 5 || r.Loc != time.UTC {
		t.Errorf("Mon-Fri: %d windows in %s", len(r.Windows), r.Loc)
	}
	for _, bad := range []struct{ in, want string }{
		{"", "empty"}, {"Tue", "not \"Day HH:MM-HH:MM\""}, {"Tuz 10:00-11:00", "not a day"},
		{"Tue 10:00", "not a HH:MM-HH:MM range"}, {"Tue 12:00-10:00", "ends before it starts"},
		{"Tue 25:00-26:00", "not a HH:MM time"}, {"Tue 10:00-11:00 Mars/Olympus", "unknown time zone"},
	} {
		if _, err := ParseSchedule(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseSchedule(%q) = %v, want an error saying %q", bad.in, err, bad.want)
		}
	}
}
