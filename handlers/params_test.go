package handlers_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/casebook/casebook/handlers"
)

var now = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

func TestParseWindow(t *testing.T) {
	tests := []struct {
		name      string
		query     string
		wantFrom  time.Time
		wantTo    time.Time
		wantStep  time.Duration
		wantParam string // "" when valid
	}{
		{"default", "", now.Add(-time.Hour), now, 15 * time.Second, ""},
		{"preset 7d", "range=7d", now.Add(-7 * 24 * time.Hour), now, time.Hour, ""},
		{"preset 15m", "range=15m", now.Add(-15 * time.Minute), now, 15 * time.Second, ""},
		{"rfc3339", "from=2026-11-29T00:00:00Z&to=2026-11-29T06:00:00Z", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), time.Minute, ""},
		{"offset zone", "from=2026-11-29T01:00:00%2B01:00&to=2026-11-29T02:00:00Z", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC), 30 * time.Second, ""},
		{"unix seconds", "from=1795910400&to=1795914000", time.Unix(1795910400, 0).UTC(), time.Unix(1795914000, 0).UTC(), 15 * time.Second, ""},
		{"datetime-local", "from=2026-11-29T10:00&to=2026-11-29T11:30", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 11, 30, 0, 0, time.UTC), 15 * time.Second, ""},
		{"only from", "from=2026-11-30T03:00:00Z", time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), now, 30 * time.Second, ""},
		{"only to", "to=2026-11-30T03:00:00Z", time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 15 * time.Second, ""},
		{"unknown preset", "range=2h", time.Time{}, time.Time{}, 0, "range"},
		{"both", "range=1h&to=1795914000", time.Time{}, time.Time{}, 0, "range"},
		{"garbage from", "from=last+tuesday", time.Time{}, time.Time{}, 0, "from"},
		{"garbage to", "to=NaN", time.Time{}, time.Time{}, 0, "to"},
		{"negative unix", "from=-5", time.Time{}, time.Time{}, 0, "from"},
		{"reversed", "from=1795914000&to=1795910400", time.Time{}, time.Time{}, 0, "from"},
		{"too short", "from=1795910400&to=1795910430", time.Time{}, time.Time{}, 0, "from"},
		{"too long", "from=1700000000&to=1795910400", time.Time{}, time.Time{}, 0, "from"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			w, err := handlers.ParseWindow(q, now)
			if tc.wantParam != "" {
				var pe *handlers.ParamError
				if !errors.As(err, &pe) || pe.Param != tc.wantParam || pe.Code() != 400 || pe.Reason == "" {
					t.Fatalf("error %v, want a 400 ParamError on %q", err, tc.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !w.From.Equal(tc.wantFrom) || !w.To.Equal(tc.wantTo) || w.Step != tc.wantStep {
				t.Errorf("window %v..%v step %v, want %v..%v step %v", w.From, w.To, w.Step, tc.wantFrom, tc.wantTo, tc.wantStep)
			}
		})
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"", "range=1h", "from=1795910400&to=1795914000", "from=2026-11-29T10:00", "range=7d&from=1", "from=1e300", "to=-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		w, err := handlers.ParseWindow(q, now)
		if err != nil {
			var pe *handlers.ParamError
			if !errors.As(err, &pe) || pe.Param == "" {
				t.Fatalf("error %v is not a ParamError", err)
			}
			return
		}
		span := w.To.Sub(w.From)
		if span < handlers.MinWindow || span > handlers.MaxWindow || w.Step <= 0 || span/w.Step > 400 {
			t.Fatalf("accepted window %v..%v step %v", w.From, w.To, w.Step)
		}
	})
}
