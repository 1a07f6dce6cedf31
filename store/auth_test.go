package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/store"
)

func TestUsersAndSessions(t *testing.T) {
	s := openTest(t)
	ctx := store.WithActor(context.Background(), store.Actor{Name: "root", Addr: "10.0.0.9"})
	u, err := s.AddUser(ctx, "ana", "reviewer", []byte("hash"), t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddUser(ctx, "ana", "admin", nil, t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second ana: %v, want ErrConflict", err)
	}
	if _, err := s.AddUser(ctx, "bo", "root", nil, t0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("role root: %v, want ErrInvalid", err)
	}
	sid := sha256.Sum256([]byte("session"))
	if err := s.CreateSession(ctx, sid[:], u.ID, "csrf1", "10.0.0.9", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ss, err := s.SessionByHash(ctx, sid[:], t0.Add(time.Minute))
	if err != nil || ss.User.Name != "ana" || ss.User.Role != "reviewer" || ss.CSRF != "csrf1" {
		t.Fatalf("session = %+v, %v", ss, err)
	}
	if _, err := s.SessionByHash(ctx, sid[:], t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired session: %v", err)
	}
	// A role change ends the account's sessions.
	if _, err := s.UpdateUser(ctx, u.ID, "viewer", nil, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, sid[:], t0.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session after role change: %v", err)
	}
	got, err := s.UserByName(ctx, "ana")
	if err != nil || got.Role != "viewer" || string(got.PasswordHash) != "hash" {
		t.Errorf("after update: %+v, %v", got, err)
	}
	if err := s.DeleteUser(ctx, u.ID, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByName(ctx, "ana"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted user: %v", err)
	}
	log, err := s.AuditLog(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range log {
		actions = append(actions, e.Action)
		if e.Actor != "root" || e.RemoteAddr != "10.0.0.9" || e.Target != "user ana" {
			t.Errorf("entry %+v", e)
		}
		if strings.Contains(string(e.Before)+string(e.After), "hash") {
			t.Errorf("audit entry leaks the password hash: %s %s", e.Before, e.After)
		}
	}
	if strings.Join(actions, ",") != "user.delete,user.update,user.create" {
		t.Errorf("audit actions %v", actions)
	}
	var before, after map[string]any
	_ = json.Unmarshal(log[1].Before, &before)
	_ = json.Unmarshal(log[1].After, &after)
	if before["role"] != "reviewer" || after["role"] != "viewer" {
		t.Errorf("update before %v after %v", before, after)
	}
}

func TestTokens(t *testing.T) {
	s := openTest(t)
	ctx := store.WithActor(context.Background(), store.Actor{Name: "root"})
	h := sha256.Sum256([]byte("cb_x"))
	tok, err := s.AddToken(ctx, "alertmanager", "webhook", h[:], t0)
	if err != nil {
		t.Fatal(err)
	}
	if tok.CreatedBy != "root" {
		t.Errorf("created by %q", tok.CreatedBy)
	}
	if _, err := s.AddToken(ctx, "x", "admin", []byte("y"), t0); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("scope admin: %v", err)
	}
	got, err := s.TokenByHash(ctx, h[:], t0.Add(time.Hour))
	if err != nil || got.Scope != "webhook" {
		t.Fatalf("TokenByHash = %+v, %v", got, err)
	}
	list, _ := s.Tokens(ctx)
	if len(list) != 1 || !list[0].LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("tokens %+v", list)
	}
	if err := s.RevokeToken(ctx, tok.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenByHash(ctx, h[:], t0.Add(3*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoked token: %v", err)
	}
	if err := s.RevokeToken(ctx, 99, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v", err)
	}
	log, _ := s.AuditLog(ctx, store.AuditFilter{})
	if len(log) != 2 || log[0].Action != "token.revoke" || log[1].Action != "token.create" {
		t.Errorf("audit %+v", log)
	}
}

// TestArchiveChangesAreAudited checks that labels, notes and share links
// leave audit entries with the actor of the request.
func TestArchiveChangesAreAudited(t *testing.T) {
	s := openTest(t)
	ctx := store.WithActor(context.Background(), store.Actor{Name: "ana", Addr: "192.0.2.1"})
	inc, _, err := s.OpenIncident(ctx, newIncident("a", 0, nil), newDiagnosis("queue_backlog", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNote(ctx, store.NewNote{IncidentID: inc.ID, Author: "ana", Body: "looked", At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: inc.ID, Verdict: store.VerdictCorrect, By: "ana", At: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddLabel(ctx, store.NewLabel{IncidentID: inc.ID, Verdict: store.VerdictWrong, TrueCause: "none", By: "ana", At: t0}); err != nil {
		t.Fatal(err)
	}
	link, err := s.CreateShare(ctx, inc.ID, "ana", t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveShare(store.WithActor(context.Background(), store.Actor{Name: "anonymous", Addr: "198.51.100.7"}), link.Token, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeShare(ctx, inc.ID, link.ID, t0); err != nil {
		t.Fatal(err)
	}
	log, err := s.AuditLog(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, e.Actor+" "+e.Action+" "+e.Target)
	}
	want := []string{
		"ana share.revoke incident 1 share 1",
		"anonymous share.open incident 1 share 1",
		"ana share.create incident 1 share 1",
		"ana label.create incident 1",
		"ana label.create incident 1",
		"ana note.create incident 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(string(log[3].Before), `"verdict":"correct"`) || !strings.Contains(string(log[3].After), `"verdict":"wrong"`) {
		t.Errorf("second label before %s after %s", log[3].Before, log[3].After)
	}
	page, _ := s.AuditLog(ctx, store.AuditFilter{Before: log[1].ID, Limit: 2})
	if len(page) != 2 || page[0].ID != log[2].ID {
		t.Errorf("paging: %+v", page)
	}
}

// TestChangeRequestsAreAudited: creating a change request and moving its
// status are recorded with who, from where and the status before and after.
func TestChangeRequestsAreAudited(t *testing.T) {
	s := openTest(t)
	ctx := store.WithActor(context.Background(), store.Actor{Name: "ana", Addr: "192.0.2.1"})
	inc, _, err := s.OpenIncident(ctx, newIncident("a", 0, nil), newDiagnosis("kv_cache_eviction", "v1"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.AddChange(ctx, store.NewChange{IncidentID: inc.ID, UID: "cr-a", RootCause: "kv_cache_eviction", ActionID: "raise_gpu_memory_utilization",
		Knob: "gpu_memory_utilization", Before: "0.9", After: "0.95", Doc: []byte(`{}`), Markdown: "# cr-a", CreatedAt: t0, CreatedBy: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetChangeStatus(ctx, inc.ID, c.ID, store.ChangeApplied, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetChangeStatus(ctx, inc.ID, c.ID+99, store.ChangeApplied, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("status of a missing change: %v, want ErrNotFound", err)
	}
	log, err := s.AuditLog(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[0].Action != "change.status" || log[1].Action != "change.create" {
		t.Fatalf("audit log: %+v", log)
	}
	if log[0].Actor != "ana" || log[0].RemoteAddr != "192.0.2.1" ||
		string(log[0].Before) != `{"status":"proposed"}` || string(log[0].After) != `{"status":"applied"}` {
		t.Errorf("status entry: %+v", log[0])
	}
	if !strings.Contains(string(log[1].After), `"knob":"gpu_memory_utilization"`) {
		t.Errorf("create entry: %s", log[1].After)
	}
}

// TestLastAdminStays: neither deleting nor demoting the last admin is
// allowed; with a second admin both are.
func TestLastAdminStays(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	ana, err := s.AddUser(ctx, "ana", "admin", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateUser(ctx, ana.ID, "viewer", nil, t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("demoting the last admin: %v, want ErrConflict", err)
	}
	if err := s.DeleteUser(ctx, ana.ID, t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("deleting the last admin: %v, want ErrConflict", err)
	}
	if u, err := s.UserByName(ctx, "ana"); err != nil || u.Role != "admin" {
		t.Fatalf("after the refusals ana is %+v, %v; want an unchanged admin", u, err)
	}
	bo, err := s.AddUser(ctx, "bo", "admin", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateUser(ctx, ana.ID, "viewer", nil, t0); err != nil {
		t.Errorf("demoting one of two admins: %v", err)
	}
	if err := s.DeleteUser(ctx, bo.ID, t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("deleting the admin left: %v, want ErrConflict", err)
	}
}

// TestUserLanguage keeps, reads and clears an account's language
// preference; the session that reads the account carries it.
func TestUserLanguage(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	u, err := s.AddUser(ctx, "ana", "viewer", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if u.Language != "" {
		t.Errorf("new account has language %q", u.Language)
	}
	if err := s.SetUserLanguage(ctx, "ana", "zh-CN"); err != nil {
		t.Fatal(err)
	}
	sid := sha256.Sum256([]byte("s"))
	if err := s.CreateSession(ctx, sid[:], u.ID, "c", "", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ss, err := s.SessionByHash(ctx, sid[:], t0); err != nil || ss.User.Language != "zh-CN" {
		t.Errorf("session user language %q, %v", ss.User.Language, err)
	}
	if got, err := s.UserByName(ctx, "ana"); err != nil || got.Language != "zh-CN" {
		t.Errorf("UserByName language %q, %v", got.Language, err)
	}
	if us, err := s.Users(ctx); err != nil || len(us) != 1 || us[0].Language != "zh-CN" {
		t.Errorf("Users = %+v, %v", us, err)
	}
	if err := s.SetUserLanguage(ctx, "ana", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.UserByName(ctx, "ana"); got.Language != "" {
		t.Errorf("cleared language reads %q", got.Language)
	}
	if err := s.SetUserLanguage(ctx, "nobody", "en"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown account: %v, want ErrNotFound", err)
	}
	if err := s.SetUserLanguage(ctx, "ana", strings.Repeat("x", 36)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("long code: %v, want ErrInvalid", err)
	}
}
