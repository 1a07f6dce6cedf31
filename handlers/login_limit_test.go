package handlers_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/views"
	"github.com/casebook/casebook/web"
)

// newFrozenLoginFixture is an accounts-mode console behind a trusted
// proxy on loopback whose sign-in clock stands still, so that no attempt
// refills however slowly bcrypt runs (the race detector slows it tenfold).
func newFrozenLoginFixture(t *testing.T) *authFixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	px, err := auth.ParseProxies("127.0.0.1/32,::1")
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	var srvLayout func(string, string) views.LayoutView
	layout := func(title, nav string) views.LayoutView { return srvLayout(title, nav) }
	f := newFixture(t, sharedTel(), func(o *web.Options) {
		o.Auth = web.AuthOptions{Mode: web.AuthAccounts, Proxy: px, Accounts: handlers.NewAccounts(handlers.AccountDeps{
			Store: st, PasswordLogin: true, Layout: layout, Now: func() time.Time { return frozen }})}
	})
	srvLayout = web.New(f.opts).Handlers.Layout
	return &authFixture{fixture: f, st: st}
}

// TestLoginLimitIsPerAddressAndName fails ana's password five times from
// one address: the real ana, from another address, still signs in, while
// the attacking address is refused for ana. Successful sign-ins, however
// many, never use up an address's allowance, and one success clears the
// failures of that address and name.
func TestLoginLimitIsPerAddressAndName(t *testing.T) {
	f := newFrozenLoginFixture(t)
	hash, err := auth.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ana", "bo"} {
		if _, err := f.st.AddUser(context.Background(), name, "reviewer", hash, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	login := func(from, name, pw string) int {
		return f.do(t, http.MethodPost, "/login", strings.NewReader("name="+name+"&password="+pw),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": from}).status
	}
	const attacker, office = "203.0.113.9", "198.51.100.4"
	for i := range auth.LoginPairBurst {
		if s := login(attacker, "ana", "guess"); s != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i+1, s)
		}
	}
	if s := login(attacker, "ana", "correct+horse+battery"); s != http.StatusTooManyRequests {
		t.Errorf("the attacking address, ana's password: %d, want 429", s)
	}
	if s := login(office, "ana", "correct+horse+battery"); s != http.StatusSeeOther {
		t.Errorf("ana from her own address after someone else's failures: %d, want 303", s)
	}
	if s := login(attacker, "bo", "correct+horse+battery"); s != http.StatusSeeOther {
		t.Errorf("another name from the attacking address: %d, want 303", s)
	}
	// Many successes from one address (a shared office NAT) are never
	// limited.
	for i := range 3 * auth.LoginAddrBurst {
		if s := login(office, "bo", "correct+horse+battery"); s != http.StatusSeeOther {
			t.Fatalf("success %d from one address: %d, want 303", i+1, s)
		}
	}
	// Four failures, a success, then five more failures are allowed:
	// the success cleared the count.
	for i := range 2*auth.LoginPairBurst - 1 {
		pw := "guess"
		if i == auth.LoginPairBurst-1 {
			pw = "correct+horse+battery"
		}
		if s := login(office, "ana", pw); s == http.StatusTooManyRequests {
			t.Fatalf("attempt %d after a success: 429", i+1)
		}
	}
	// Failures spread over many names from one address still stop at the
	// per-address limit.
	limited := false
	for i := range auth.LoginAddrBurst + 1 {
		if login("192.0.2.77", "user"+strings.Repeat("x", i), "guess") == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Errorf("%d failures over distinct names from one address were not limited", auth.LoginAddrBurst+1)
	}
}
