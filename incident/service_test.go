package incident_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/incident"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

var now = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// capture is a metric source with one engine instance, llama-70b-1 of
// llama-70b; it counts snapshots taken.
type capture struct{ snaps atomic.Int64 }

func (c *capture) Snapshot(ctx context.Context, scope metrics.Scope, at time.Time) (metrics.Snapshot, error) {
	c.snaps.Add(1)
	return metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{metrics.TTFT: 900}}, nil
}

func (c *capture) Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error) {
	return nil, nil
}

func (c *capture) Scopes(ctx context.Context) ([]metrics.Scope, error) {
	return []metrics.Scope{{Model: "llama-70b"}, {Model: "llama-70b", Instance: "llama-70b-1"}}, nil
}

// diagnoser names one cause for every snapshot.
type diagnoser struct{}

func (diagnoser) Diagnose(s metrics.Snapshot) diagnose.Diagnosis {
	return diagnose.Diagnosis{RootCause: metrics.CauseQueueBacklog, Confidence: 0.8, Severity: diagnose.SeverityWarning}
}

func newService(t *testing.T) (*incident.Service, *store.Store, *capture) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &capture{}
	svc := incident.New(incident.Options{Archive: st, Capture: c, Diagnoser: diagnoser{}, Now: func() time.Time { return now }})
	return svc, st, c
}

// message is a webhook message of n firing alerts on one model.
func message(n, truncated int, labels func(i int) map[string]string) incident.AlertmanagerMessage {
	m := incident.AlertmanagerMessage{Version: "4", GroupKey: "{}:{alertname=\"X\"}", TruncatedAlerts: truncated, Status: "firing"}
	for i := range n {
		m.Alerts = append(m.Alerts, incident.AlertmanagerAlert{Status: "firing", Labels: labels(i),
			StartsAt: now.Add(-8 * time.Minute), Fingerprint: fmt.Sprintf("%016x", i)})
	}
	return m
}

func TestHandleAlertmanagerLargeGroup(t *testing.T) {
	svc, st, c := newService(t)
	n := incident.MaxAlertsPerMessage + 37
	msg := message(n, 12, func(i int) map[string]string {
		return map[string]string{"alertname": "VLLMHighTTFT", "model_name": "llama-70b", "pod": "llama-70b-1", "shard": fmt.Sprint(i)}
	})
	results := svc.HandleAlertmanager(context.Background(), msg)
	if len(results) != n {
		t.Fatalf("%d results for %d alerts", len(results), n)
	}
	counts := map[string]int{}
	for i, r := range results {
		counts[r.Status]++
		if r.Fingerprint != msg.Alerts[i].Fingerprint {
			t.Fatalf("result %d is for %s, not its alert %s", i, r.Fingerprint, msg.Alerts[i].Fingerprint)
		}
		if i >= incident.MaxAlertsPerMessage && (r.Status != "dropped" || !strings.Contains(r.Reason, fmt.Sprint(n))) {
			t.Errorf("alert %d past the limit: %+v, want dropped with the message's size", i, r)
		}
	}
	if counts["opened"] != incident.MaxAlertsPerMessage || counts["dropped"] != 37 {
		t.Fatalf("statuses %v, want %d opened and 37 dropped", counts, incident.MaxAlertsPerMessage)
	}
	if got := c.snaps.Load(); got != 1 {
		t.Errorf("%d snapshots captured for one scope and second, want 1 shared", got)
	}
	inc, err := st.Incident(context.Background(), results[0].IncidentID)
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]any
	if err := json.Unmarshal(inc.TriggerDetail, &detail); err != nil {
		t.Fatal(err)
	}
	if detail["dropped_alerts"] != float64(37) || detail["truncated_alerts"] != float64(12) {
		t.Errorf("trigger detail %s does not record the 37 dropped and 12 truncated alerts", inc.TriggerDetail)
	}

	// Alertmanager repeats the group: nothing is opened twice.
	again := svc.HandleAlertmanager(context.Background(), msg)
	for i, r := range again[:incident.MaxAlertsPerMessage] {
		if r.Status != "existing" || r.IncidentID != results[i].IncidentID {
			t.Fatalf("repeat of alert %d: %+v, want existing incident %d", i, r, results[i].IncidentID)
		}
	}
}

func TestHandleAlertmanagerScopes(t *testing.T) {
	svc, st, _ := newService(t)
	tests := []struct {
		name       string
		labels     map[string]string
		wantStatus string
		wantScope  metrics.Scope
		wantReason string
	}{
		{"engine alert", map[string]string{"model_name": "llama-70b", "pod": "llama-70b-1"}, "opened", metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}, ""},
		// Behind a ServiceMonitor with honorLabels false, dcgm-exporter's
		// series carry the workload as exported_pod and the exporter as pod.
		{"DCGM alert behind a ServiceMonitor", map[string]string{"alertname": "GPUHot", "exported_pod": "llama-70b-1", "pod": "dcgm-exporter-x7", "gpu": "0"},
			"opened", metrics.Scope{Model: "llama-70b", Instance: "llama-70b-1"}, ""},
		{"instance of no engine", map[string]string{"pod": "nginx-1"}, "skipped", metrics.Scope{}, `no engine series carry pod "nginx-1"`},
		{"neither label", map[string]string{"alertname": "Disk"}, "skipped", metrics.Scope{}, "neither a model_name"},
		{"model name too long", map[string]string{"model_name": strings.Repeat("m", 257)}, "skipped", metrics.Scope{}, "model_name label is 257 bytes"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := message(1, 0, func(int) map[string]string { return tc.labels })
			msg.Alerts[0].Fingerprint = fmt.Sprintf("f%d", i)
			r := svc.HandleAlertmanager(context.Background(), msg)[0]
			if r.Status != tc.wantStatus || !strings.Contains(r.Reason, tc.wantReason) {
				t.Fatalf("result %+v, want %s with reason containing %q", r, tc.wantStatus, tc.wantReason)
			}
			if r.Status != "opened" {
				return
			}
			inc, err := st.Incident(context.Background(), r.IncidentID)
			if err != nil || inc.Scope != tc.wantScope {
				t.Errorf("incident scope %v (err %v), want %v", inc.Scope, err, tc.wantScope)
			}
		})
	}
}

func TestHandleAlertmanagerCleansText(t *testing.T) {
	svc, st, _ := newService(t)
	msg := message(1, 0, func(int) map[string]string {
		return map[string]string{"alertname": "TTFT\x00High", "model_name": "llama-70b", "team": "a\u202Egnp.exe"}
	})
	msg.Alerts[0].Annotations = map[string]string{"summary": "TTFT \u202Ehigh\x07 on llama"}
	r := svc.HandleAlertmanager(context.Background(), msg)[0]
	inc, err := st.Incident(context.Background(), r.IncidentID)
	if err != nil {
		t.Fatalf("%+v: %v", r, err)
	}
	for _, s := range []string{inc.Title, string(inc.TriggerDetail)} {
		if strings.ContainsAny(s, "\x00\x07\u202E") || strings.Contains(s, `\u0000`) || strings.Contains(s, `\u202e`) {
			t.Errorf("control or bidi characters kept: %q", s)
		}
	}
	if inc.Title != "TTFT high on llama" {
		t.Errorf("title %q", inc.Title)
	}
}

func TestReview(t *testing.T) {
	svc, st, _ := newService(t)
	inc, _, err := svc.Open(context.Background(), incident.Trigger{Kind: store.TriggerManual, Scope: metrics.Scope{Model: "llama-70b"}, At: now})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Review(context.Background(), store.NewLabel{IncidentID: inc.ID, Verdict: store.VerdictWrong,
		TrueCause: metrics.CauseHostOverhead, NewCause: "Tokenizer pool", By: "ana"})
	var fe *incident.FieldError
	if !errors.As(err, &fe) || fe.Field != "new_cause" {
		t.Fatalf("both true_cause and new_cause: %v, want a new_cause field error", err)
	}
	l, err := svc.Review(context.Background(), store.NewLabel{IncidentID: inc.ID, Verdict: store.VerdictWrong, NewCause: " gpu  Throttling! ", By: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if l.TrueCause != metrics.CauseGPUThrottling {
		t.Errorf("new cause named like the taxonomy's %q became %q", metrics.CauseGPUThrottling, l.TrueCause)
	}
	causes, err := st.Causes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range causes {
		if !c.Builtin {
			t.Errorf("a duplicate cause was created: %+v", c)
		}
	}
}
