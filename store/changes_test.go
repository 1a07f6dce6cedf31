package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

func TestChangeRequests(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	inc, _, err := s.OpenIncident(ctx, newIncident("eviction", 0, nil), newDiagnosis(metrics.CauseKVCacheEviction, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	nc := store.NewChange{IncidentID: inc.ID, UID: "cr-1", RootCause: metrics.CauseKVCacheEviction, ActionID: "raise_gpu_memory_utilization",
		Knob: "gpu_memory_utilization", Before: "0.9", After: "0.95", Doc: json.RawMessage(`{"id":"cr-1"}`), Markdown: "# cr-1",
		CreatedAt: t0, CreatedBy: "ana", Deliver: true}
	c, err := s.AddChange(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.ChangeProposed || c.Delivery != store.DeliveryPending || c.Before != "0.9" || !c.CreatedAt.Equal(t0) || string(c.Doc) != `{"id":"cr-1"}` {
		t.Errorf("stored %+v", c)
	}
	if _, err := s.AddChange(ctx, nc); !errors.Is(err, store.ErrConflict) {
		t.Errorf("repeated id: %v, want ErrConflict", err)
	}
	bad := nc
	bad.UID, bad.Doc = "cr-2", json.RawMessage(`{`)
	if _, err := s.AddChange(ctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad JSON: %v, want ErrInvalid", err)
	}
	bad = nc
	bad.UID, bad.IncidentID = "cr-3", inc.ID+100
	if _, err := s.AddChange(ctx, bad); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown incident: %v, want ErrNotFound", err)
	}

	pending, err := s.PendingChanges(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != c.ID {
		t.Fatalf("pending %v %+v", err, pending)
	}
	if err := s.RecordDelivery(ctx, c.ID, store.Delivery{Attempt: 1, At: t0, Code: 503, Error: "503 Service Unavailable"}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDelivery(ctx, c.ID, store.Delivery{Attempt: 2, At: t0.Add(time.Second), OK: true, Code: 201}, false); err != nil {
		t.Fatal(err)
	}
	got, err := s.Change(ctx, inc.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Delivery != store.DeliveryDelivered || got.Status != store.ChangeSent || len(got.Attempts) != 2 || got.Attempts[0].Code != 503 || !got.Attempts[1].OK {
		t.Errorf("after delivery %+v", got)
	}
	if p, _ := s.PendingChanges(ctx); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}

	applied := t0.Add(time.Hour)
	if err := s.SetChangeStatus(ctx, inc.ID, c.ID, store.ChangeApplied, applied); err != nil {
		t.Fatal(err)
	}
	if u, err := s.UnmeasuredChanges(ctx); err != nil || len(u) != 1 || u[0].ID != c.ID {
		t.Fatalf("unmeasured after applying: %v %+v", err, u)
	}
	if err := s.SetChangeOutcome(ctx, inc.ID, c.ID, json.RawMessage(`{"verdict":"expected"}`), "expected"); err != nil {
		t.Fatal(err)
	}
	if u, err := s.UnmeasuredChanges(ctx); err != nil || len(u) != 0 {
		t.Fatalf("unmeasured after measuring: %v %+v", err, u)
	}
	if err := s.SetChangeStatus(ctx, inc.ID, c.ID, "done", applied); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	if err := s.SetChangeStatus(ctx, inc.ID+1, c.ID, store.ChangeApplied, applied); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other incident: %v", err)
	}
	// A second, unapplied request for another action of the same cause.
	nc2 := nc
	nc2.UID, nc2.ActionID, nc2.Deliver = "cr-4", "add_replicas", false
	c2, err := s.AddChange(ctx, nc2)
	if err != nil || c2.Delivery != store.DeliveryNone {
		t.Fatalf("second change: %v %+v", err, c2)
	}
	list, err := s.Changes(ctx, inc.ID)
	if err != nil || len(list) != 2 || list[0].ID != c.ID || !list[0].AppliedAt.Equal(applied) || list[0].Verdict != "expected" {
		t.Fatalf("changes %v %+v", err, list)
	}
	outs, err := s.ActionOutcomes(ctx, metrics.CauseKVCacheEviction)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ActionOutcome{
		{ActionID: "raise_gpu_memory_utilization", Requested: 1, Applied: 1, Expected: 1},
		{ActionID: "add_replicas", Requested: 1},
	}
	if len(outs) != len(want) {
		t.Fatalf("outcomes %+v", outs)
	}
	for i := range want {
		if outs[i] != want[i] {
			t.Errorf("outcome %d = %+v, want %+v", i, outs[i], want[i])
		}
	}
	if err := s.Redeliver(ctx, inc.ID, c2.ID); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.PendingChanges(ctx); len(p) != 1 || p[0].ID != c2.ID || p[0].RoundStart != 0 {
		t.Errorf("redeliver: %+v", p)
	}
	if err := s.Redeliver(ctx, inc.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Change(ctx, inc.ID, c.ID); again.RoundStart != 2 || again.Delivery != store.DeliveryPending {
		t.Errorf("a new round after two attempts: %+v", again)
	}
}
