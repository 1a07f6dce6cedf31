package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func newTrace(incident int64, role store.TraceRole, name string) store.NewTrace {
	return store.NewTrace{
		IncidentID: incident, Role: role, Name: name, Kind: "chrome+gzip", Size: 20486,
		UploadedAt: t0.Add(time.Minute),
		Summary:    json.RawMessage(`{"format":"chrome","span_ns":6374000,"categories":[{"category":"attention","time_ns":1000,"count":3,"share":0.149}]}`),
	}
}

func TestTraceRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("TPOT doubled", 0, nil), newDiagnosis(metrics.CauseMemoryBandwidthBound, "v1"))
	other := mustOpen(t, s, newIncident("other", time.Hour, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))

	in := []store.NewTrace{
		newTrace(inc.ID, store.TraceIncident, "slow.pt.trace.json.gz"),
		newTrace(inc.ID, store.TraceBaseline, "healthy <b>.nsys.sqlite"),
		newTrace(other.ID, store.TraceIncident, "elsewhere.json"),
	}
	var added []store.Trace
	for _, nt := range in {
		tr, err := s.AddTrace(ctx, nt)
		if err != nil {
			t.Fatalf("add %s: %v", nt.Name, err)
		}
		added = append(added, tr)
	}
	got, err := s.Traces(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("incident %d has %d traces, want 2", inc.ID, len(got))
	}
	for i, g := range got {
		w := in[i]
		if g.ID != added[i].ID || g.IncidentID != inc.ID || g.Role != w.Role || g.Name != w.Name || g.Kind != w.Kind ||
			g.Size != w.Size || !g.UploadedAt.Equal(w.UploadedAt) || string(g.Summary) != string(w.Summary) {
			t.Errorf("trace %d = %+v, want %+v", i, g, w)
		}
	}
	if none, err := s.Traces(ctx, 9999); err != nil || len(none) != 0 {
		t.Errorf("traces of an unknown incident = %v, %v; want none", none, err)
	}

	if err := s.DeleteTrace(ctx, other.ID, added[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete through the wrong incident: %v, want ErrNotFound", err)
	}
	if err := s.DeleteTrace(ctx, inc.ID, added[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Traces(ctx, inc.ID); len(got) != 1 || got[0].Role != store.TraceBaseline {
		t.Errorf("after delete: %+v", got)
	}
}

func TestAddTraceRejects(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("t", 0, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	mod := func(f func(*store.NewTrace)) store.NewTrace {
		nt := newTrace(inc.ID, store.TraceIncident, "a.json")
		f(&nt)
		return nt
	}
	cases := []struct {
		name string
		in   store.NewTrace
		want error
		msg  string
	}{
		{"valid", mod(func(*store.NewTrace) {}), nil, ""},
		{"unknown incident", mod(func(n *store.NewTrace) { n.IncidentID = 4242 }), store.ErrNotFound, ""},
		{"bad role", mod(func(n *store.NewTrace) { n.Role = "healthy" }), store.ErrInvalid, "role"},
		{"empty name", mod(func(n *store.NewTrace) { n.Name = " " }), store.ErrInvalid, "name"},
		{"long name", mod(func(n *store.NewTrace) { n.Name = strings.Repeat("n", store.MaxNameBytes+1) }), store.ErrInvalid, "name"},
		{"non-UTF-8 name", mod(func(n *store.NewTrace) { n.Name = "a\xffb" }), store.ErrInvalid, "name"},
		{"no kind", mod(func(n *store.NewTrace) { n.Kind = "" }), store.ErrInvalid, "kind"},
		{"negative size", mod(func(n *store.NewTrace) { n.Size = -1 }), store.ErrInvalid, "size"},
		{"no summary", mod(func(n *store.NewTrace) { n.Summary = nil }), store.ErrInvalid, "summary"},
		{"summary not JSON", mod(func(n *store.NewTrace) { n.Summary = json.RawMessage(`{"format":`) }), store.ErrInvalid, "not JSON"},
		{"summary too large", mod(func(n *store.NewTrace) {
			n.Summary = json.RawMessage(`"` + strings.Repeat("x", store.MaxTraceSummaryBytes) + `"`)
		}), store.ErrInvalid, "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.AddTrace(ctx, tc.in)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to mention %q", err, tc.msg)
			}
		})
	}
}

func TestTracesPerIncidentLimit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc := mustOpen(t, s, newIncident("t", 0, nil), newDiagnosis(metrics.CauseQueueBacklog, "v1"))
	for i := 0; i < store.MaxTracesPerIncident; i++ {
		if _, err := s.AddTrace(ctx, newTrace(inc.ID, store.TraceIncident, fmt.Sprintf("t%d.json", i))); err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
	}
	_, err := s.AddTrace(ctx, newTrace(inc.ID, store.TraceBaseline, "one-too-many.json"))
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("trace over the limit: %v, want ErrInvalid", err)
	}
}
