package change

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzParseSchedule: any text is either refused with an error or gives
// a schedule whose next window is well-formed.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"Tue 10:00-12:00, Thu 14:00-16:00 Europe/Berlin", "Mon-Fri 09:00-17:00", "Sun 23:00-24:00 UTC", "Fri-Mon 00:00-00:30", ",", "Tue 10:00-"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		sched, err := ParseSchedule(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "change: deploy windows: ") {
				t.Errorf("error %q lacks its prefix", err)
			}
			return
		}
		w, ok := sched.Next(now)
		if !ok {
			t.Fatalf("a parsed schedule %q has no next window", s)
		}
		if !w.End.After(w.Start) || !w.End.After(now) || w.Start.Sub(now) > 8*24*time.Hour {
			t.Errorf("schedule %q: next window %+v", s, w)
		}
	})
}

// FuzzParseConfig: a configuration file never panics, and what it
// returns is only valid knob values.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"--max-num-seqs 256 --enable-prefix-caching", `{"max_num_seqs": 8}`, "--no-enable-prefix-caching --gpu-memory-utilization=0.9", "{", "--max-num-seqs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseConfig([]byte(s))
		if err != nil {
			return
		}
		for name, v := range got {
			k, ok := LookupKnob(name)
			if !ok {
				t.Fatalf("unknown knob %q returned", name)
			}
			if strings.HasPrefix(strings.TrimSpace(s), "{") {
				continue // JSON values are checked when a proposal reads them
			}
			if _, err := k.Parse(v); err != nil {
				t.Errorf("%s = %q does not parse: %v", name, v, err)
			}
		}
	})
}

// FuzzDecodeStored: a stored request document or outcome either decodes,
// and then encodes and decodes to the same value, or is refused with an
// error that names what failed.
func FuzzDecodeStored(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"title":"Raise max-num-seqs","effects":[{"metric":"ttft_p99","direction":"down","size":0.2}]}`,
		`{"applied_at":"2026-11-30T08:00:00Z","window_ns":3600000000000,"verdict":"expected"}`, `{"window_ns":"x"}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := DecodeRequest(data); err != nil {
			if !strings.HasPrefix(err.Error(), "change: decode request: ") {
				t.Fatalf("error %q lacks its prefix", err)
			}
		} else if b, err := r.JSON(); err == nil {
			again, err := DecodeRequest(b)
			if err != nil {
				t.Fatalf("a re-encoded request does not decode: %v\n%s", err, b)
			}
			if b2, _ := again.JSON(); !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding changed the request:\n%s\n%s", b, b2)
			}
		}
		if o, err := DecodeOutcome(data); err != nil {
			if !strings.HasPrefix(err.Error(), "change: decode outcome: ") {
				t.Fatalf("error %q lacks its prefix", err)
			}
		} else if b, err := o.Encode(); err == nil {
			again, err := DecodeOutcome(b)
			if err != nil {
				t.Fatalf("a re-encoded outcome does not decode: %v\n%s", err, b)
			}
			if b2, _ := again.Encode(); !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding changed the outcome:\n%s\n%s", b, b2)
			}
		}
	})
}
