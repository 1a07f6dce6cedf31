package store

import (
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/casebook/casebook/metrics"
)

func TestEvidenceCodecs(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 123456789, time.UTC)
	scope := metrics.Scope{Model: `llama "8b" <x>`, Instance: "llama-8b-0"}
	tests := []struct {
		name     string
		snap     metrics.Snapshot
		want     metrics.Snapshot // after the round trip; non-finite values are gaps
		windows  []metrics.Series
		wantWins []metrics.Series
	}{
		{
			name: "full",
			snap: metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: 950.25, metrics.KVCacheHitRate: 0.41},
				History: []metrics.Point{{At: at.Add(-time.Hour), Values: metrics.Values{metrics.TTFT: 210}}, {At: at.Add(-59 * time.Minute), Values: metrics.Values{metrics.KVCacheHitRate: 0.9, metrics.TTFT: 1e-9}}}},
			want: metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: 950.25, metrics.KVCacheHitRate: 0.41},
				History: []metrics.Point{{At: at.Add(-time.Hour), Values: metrics.Values{metrics.TTFT: 210}}, {At: at.Add(-59 * time.Minute), Values: metrics.Values{metrics.KVCacheHitRate: 0.9, metrics.TTFT: 1e-9}}}},
			windows: []metrics.Series{{Metric: metrics.TTFT, Scope: scope, Samples: []metrics.Sample{{T: at, V: 1}, {T: at.Add(time.Minute), V: math.NaN()}, {T: at.Add(2 * time.Minute), V: -3.5e12}}},
				{Metric: metrics.TPOT, Scope: metrics.Scope{Model: "m"}}},
			wantWins: []metrics.Series{{Metric: metrics.TTFT, Scope: scope, Samples: []metrics.Sample{{T: at.Truncate(time.Millisecond), V: 1}, {T: at.Add(2 * time.Minute).Truncate(time.Millisecond), V: -3.5e12}}},
				{Metric: metrics.TPOT, Scope: metrics.Scope{Model: "m"}, Samples: []metrics.Sample{}}},
		},
		{
			name: "an SGLang scope keeps its engine and what it lacks",
			snap: metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: 20}, Engine: metrics.EngineSGLang,
				Absent: map[string]string{metrics.PrefillTime: `SGLang exports no "equivalent"`, metrics.ErrorRate: "aborts only"}},
			want: metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: 20}, Engine: metrics.EngineSGLang,
				Absent: map[string]string{metrics.PrefillTime: `SGLang exports no "equivalent"`, metrics.ErrorRate: "aborts only"}},
			wantWins: []metrics.Series{},
		},
		{
			name:     "non-finite values become gaps",
			snap:     metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: math.Inf(1), metrics.TPOT: 12}},
			want:     metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TPOT: 12}},
			windows:  nil,
			wantWins: []metrics.Series{},
		},
		{
			name:     "empty",
			snap:     metrics.Snapshot{},
			want:     metrics.Snapshot{At: time.Unix(0, time.Time{}.UnixNano()).UTC(), Current: metrics.Values{}},
			wantWins: []metrics.Series{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := packSnapshot(tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			got, err := unpackSnapshot(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("snapshot round trip:\n got %+v\nwant %+v", got, tc.want)
			}
			wb, err := packWindows(tc.windows)
			if err != nil {
				t.Fatal(err)
			}
			gotW, err := unpackWindows(wb)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotW, tc.wantWins) {
				t.Errorf("windows round trip:\n got %+v\nwant %+v", gotW, tc.wantWins)
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("not gzip")} {
		if _, err := unpackSnapshot(bad); err == nil {
			t.Errorf("unpackSnapshot(%q) succeeded", bad)
		}
	}
	corrupt, _ := compress([]byte(`{"v":2,"ids":["a","b"],"cur":[1],"t":[],"h":[]}`))
	if _, err := unpackSnapshot(corrupt); err == nil {
		t.Error("a snapshot with misaligned arrays decoded")
	}
}

func FuzzSnapshotCodec(f *testing.F) {
	f.Add("ttft_ms", 1.5, int64(0), "m", "")
	f.Add("x\"<>\u2028", math.Inf(-1), int64(-1), "", "i")
	f.Fuzz(func(t *testing.T, id string, v float64, at int64, model, inst string) {
		if !utf8.ValidString(id) || !utf8.ValidString(model) || !utf8.ValidString(inst) {
			t.Skip("strings are stored as UTF-8; the store rejects invalid scope names before this point")
		}
		s := metrics.Snapshot{At: time.Unix(0, at).UTC(), Scope: metrics.Scope{Model: model, Instance: inst},
			Current: metrics.Values{id: v}, History: []metrics.Point{{At: time.Unix(0, at/2).UTC(), Values: metrics.Values{id: v * 2}}}}
		b, err := packSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := unpackSnapshot(b)
		if err != nil {
			t.Fatalf("round trip of %+v: %v", s, err)
		}
		if x, ok := got.Current[id]; math.IsNaN(v) || math.IsInf(v, 0) {
			if ok {
				t.Fatalf("non-finite %v stored as %v", v, x)
			}
		} else if !ok || x != v {
			t.Fatalf("value %v came back as %v (%v)", v, x, ok)
		}
		if got.Scope != s.Scope || !got.At.Equal(s.At) {
			t.Fatalf("scope/time %+v %v, want %+v %v", got.Scope, got.At, s.Scope, s.At)
		}
	})
}
