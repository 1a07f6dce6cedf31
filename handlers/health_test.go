package handlers_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/web"
)

// fakeStore fails its writes with err while err is set.
type fakeStore struct{ err atomic.Pointer[error] }

func (s *fakeStore) WriteError() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

// TestStoreThatCannotWrite: while a store cannot write (a damaged
// archive, a full disk), /readyz answers 503 with the reason and every
// page carries it in a banner; both clear when the store recovers.
func TestStoreThatCannotWrite(t *testing.T) {
	st := &fakeStore{}
	f := newFixture(t, sharedTel(), func(o *web.Options) { o.Stores = []handlers.Store{st} })
	// The fake telemetry has no sources, so /readyz says so; the store's
	// state comes on top of that.
	base := f.do(t, http.MethodGet, "/readyz", nil, nil)
	if strings.Contains(base.body, "writes are refused") {
		t.Fatalf("healthy: /readyz %d %q", base.status, base.body)
	}
	damaged := errors.New("casebook.db is damaged (quick_check: page 7). Run `casebook restore FILE` or use casebook.db.v3.bak")
	st.err.Store(&damaged)
	r := f.do(t, http.MethodGet, "/readyz", nil, nil)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "casebook restore") {
		t.Errorf("damaged: /readyz %d %q, want 503 naming casebook restore", r.status, r.body)
	}
	for _, path := range []string{"/", "/scopes/llama-70b", "/nowhere"} {
		if r := f.do(t, http.MethodGet, path, nil, nil); !strings.Contains(r.body, "Writes are refused") || !strings.Contains(r.body, "casebook restore FILE") {
			t.Errorf("%s (%d) lacks the banner", path, r.status)
		}
	}
	st.err.Store(nil)
	if r := f.do(t, http.MethodGet, "/readyz", nil, nil); r.status != base.status || r.body != base.body {
		t.Errorf("recovered: /readyz %d %q, want %d %q as before", r.status, r.body, base.status, base.body)
	}
	if r := f.do(t, http.MethodGet, "/", nil, nil); strings.Contains(r.body, "Writes are refused") {
		t.Error("the banner stayed after the store recovered")
	}
}
