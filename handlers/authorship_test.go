package handlers_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

// TestTokenWritesAsItself checks that an API token's note and label are
// authored by the token, whatever name its body gives.
func TestTokenWritesAsItself(t *testing.T) {
	f := newAuthFixture(t, web.AuthAccounts, "")
	ctx := context.Background()
	if _, err := f.st.AddUser(ctx, "ana", "admin", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	inc, _, err := f.st.OpenIncident(ctx, store.NewIncident{Title: "t", Scope: incidentScope, Trigger: store.TriggerManual,
		OpenedAt: time.Now(), WindowStart: time.Now().Add(-time.Hour), WindowEnd: time.Now()},
		store.DiagnosisRecord{EngineVersion: "test", CreatedAt: time.Now(), RootCause: metrics.CauseQueueBacklog, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	tok := f.token(t, "ci-bot", "write")
	hdr := map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	path := "/api/v1/incidents/" + strconv.FormatInt(inc.ID, 10)
	if r := f.do(t, http.MethodPost, path+"/notes", strings.NewReader(`{"by":"ana","body":"rolled back"}`), hdr); r.status != http.StatusCreated {
		t.Fatalf("note: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPost, path+"/labels", strings.NewReader(`{"by":"ana","verdict":"correct"}`), hdr); r.status != http.StatusCreated {
		t.Fatalf("label: %d %s", r.status, r.body)
	}
	p, err := f.st.Page(ctx, inc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) != 1 || p.Notes[0].Author != "token ci-bot" {
		t.Errorf("note authors %+v, want the token", p.Notes)
	}
	if len(p.Labels) != 1 || p.Labels[0].By != "token ci-bot" {
		t.Errorf("label authors %+v, want the token", p.Labels)
	}
}

// TestLabelAPIRefusesConflictingCauses checks that a label naming both an
// existing and a new cause is refused, naming the field.
func TestLabelAPIRefusesConflictingCauses(t *testing.T) {
	f := newAuthFixture(t, web.AuthNone, "")
	inc, _, err := f.st.OpenIncident(context.Background(), store.NewIncident{Title: "t", Scope: incidentScope, Trigger: store.TriggerManual,
		OpenedAt: time.Now(), WindowStart: time.Now().Add(-time.Hour), WindowEnd: time.Now()},
		store.DiagnosisRecord{EngineVersion: "test", CreatedAt: time.Now(), RootCause: metrics.CauseQueueBacklog, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodPost, "/api/v1/incidents/"+strconv.FormatInt(inc.ID, 10)+"/labels",
		strings.NewReader(`{"by":"ana","verdict":"wrong","true_cause":"host_overhead","new_cause":"GPU throttling"}`),
		map[string]string{"Content-Type": "application/json"})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "new_cause") {
		t.Errorf("status %d body %s; want 400 naming new_cause", r.status, r.body)
	}
}

func TestIncidentListRefusesReversedRange(t *testing.T) {
	f := newAuthFixture(t, web.AuthNone, "")
	for _, path := range []string{"/incidents", "/api/v1/incidents"} {
		r := f.do(t, http.MethodGet, path+"?from=2026-11-30T05:00:00Z&to=2026-11-29T05:00:00Z", nil, nil)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, "is after to") {
			t.Errorf("%s: status %d body %.200s; want 400 saying from is after to", path, r.status, r.body)
		}
	}
}

// TestIncidentPageShowsLostAlerts checks that an incident opened from a
// message that dropped or truncated alerts says so on its page.
func TestIncidentPageShowsLostAlerts(t *testing.T) {
	f := newAuthFixture(t, web.AuthNone, "")
	inc, _, err := f.st.OpenIncident(context.Background(), store.NewIncident{Title: "t", Scope: incidentScope, Trigger: store.TriggerAlertmanager,
		TriggerDetail: []byte(`{"alertname":"VLLMHighTTFT","dropped_alerts":1500,"truncated_alerts":20}`),
		Alert:         &store.Alert{Fingerprint: "0a", StartsAt: time.Now().Add(-time.Minute), State: store.AlertFiring},
		OpenedAt:      time.Now(), WindowStart: time.Now().Add(-time.Hour), WindowEnd: time.Now()},
		store.DiagnosisRecord{EngineVersion: "test", CreatedAt: time.Now(), RootCause: metrics.CauseQueueBacklog, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodGet, "/incidents/"+strconv.FormatInt(inc.ID, 10), nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d %.300s", r.status, r.body)
	}
	for _, want := range []string{"1500 alerts of its group were past", "Alertmanager left 20 more out of the message"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("incident page lacks %q", want)
		}
	}
}
