package auth

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPassword(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPassword(h, "correct horse battery"); err != nil {
		t.Errorf("right password refused: %v", err)
	}
	for _, bad := range []string{"", "correct horse batter", "Correct horse battery", strings.Repeat("x", 100)} {
		if CheckPassword(h, bad) == nil {
			t.Errorf("wrong password %q accepted", bad)
		}
	}
	if CheckPassword(nil, "") == nil {
		t.Error("an account without a password accepted an empty one")
	}
	for _, bad := range []string{"short", strings.Repeat("y", MaxPasswordLen+1)} {
		if _, err := HashPassword(bad); err == nil {
			t.Errorf("HashPassword(%d bytes) accepted", len(bad))
		}
	}
}

func TestToken(t *testing.T) {
	a, err := NewToken(TokenPrefix)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken(TokenPrefix)
	if a == b || !LooksLikeToken(a, TokenPrefix) || len(a) != len(TokenPrefix)+64 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if string(HashToken(a)) == string(HashToken(b)) || len(HashToken(a)) != 32 {
		t.Error("hashes collide or have the wrong size")
	}
	for _, bad := range []string{"", a[3:], "cb_" + strings.Repeat("z", 64), a + "0"} {
		if LooksLikeToken(bad, TokenPrefix) {
			t.Errorf("LooksLikeToken(%q) = true", bad)
		}
	}
}

func TestLimiter(t *testing.T) {
	l := NewLimiter(3, time.Minute)
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for i := range 3 {
		if ok, _ := l.Allow(now, "ip:1", "user:a"); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
	}
	ok, wait := l.Allow(now, "ip:1", "user:a")
	if ok || wait <= 0 || wait > time.Minute {
		t.Fatalf("4th attempt: ok=%v wait=%s", ok, wait)
	}
	// The same user from another address is still limited by the user key.
	if ok, _ := l.Allow(now, "ip:2", "user:a"); ok {
		t.Error("user key not limited from a second address")
	}
	// A refused attempt took nothing from ip:2.
	if ok, _ := l.Allow(now, "ip:2", "user:b"); !ok {
		t.Error("ip:2 was charged for a refused attempt")
	}
	if ok, _ := l.Allow(now.Add(time.Minute), "ip:1", "user:a"); !ok {
		t.Error("no attempt came back after the refill period")
	}
}

func TestProxy(t *testing.T) {
	p, err := ParseProxies("10.0.0.0/8, 192.168.1.5,::1")
	if err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{}
	hdr.Set("X-Forwarded-User", "alice")
	cases := []struct {
		name, peer string
		hdr        http.Header
		want       string
	}{
		{"trusted range", "10.1.2.3:5000", hdr, "alice"},
		{"trusted address", "192.168.1.5:1", hdr, "alice"},
		{"trusted v6", "[::1]:80", hdr, "alice"},
		{"untrusted", "192.168.1.6:1", hdr, ""},
		{"mapped v4", "[::ffff:10.0.0.1]:1", hdr, "alice"},
		{"email fallback", "10.0.0.1:1", http.Header{"X-Forwarded-Email": {"bob@example.com"}}, "bob@example.com"},
		{"control character", "10.0.0.1:1", http.Header{"X-Forwarded-User": {"a\x00b"}}, ""},
		{"nobody", "10.0.0.1:1", http.Header{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.User(tc.peer, tc.hdr.Get); got != tc.want {
				t.Errorf("User = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ParseProxies("10.0.0.0/33"); err == nil {
		t.Error("bad CIDR accepted")
	}
}

func TestRoles(t *testing.T) {
	for _, r := range []Role{RoleViewer, RoleReviewer, RoleAdmin} {
		got, err := ParseRole(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("unknown role accepted")
	}
	if ScopeWebhook.Role() != RoleNone || ScopeRead.Role() != RoleViewer || ScopeWrite.Role() != RoleReviewer {
		t.Error("scope roles")
	}
	if !(Principal{Role: RoleAdmin}).Can(RoleReviewer) || (Principal{Role: RoleViewer}).Can(RoleReviewer) {
		t.Error("role order")
	}
}

func TestLoginLimiter(t *testing.T) {
	l := NewLoginLimiter()
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for i := range LoginPairBurst {
		if ok, _ := l.Begin(now, "10.0.0.1", "ana"); !ok {
			t.Fatalf("failure %d refused", i+1)
		}
	}
	if ok, wait := l.Begin(now, "10.0.0.1", "ANA"); ok || wait <= 0 {
		t.Fatalf("6th attempt for ana from 10.0.0.1: ok=%v wait=%s", ok, wait)
	}
	if ok, _ := l.Begin(now, "10.0.0.2", "ana"); !ok {
		t.Fatal("ana locked out from another address")
	}
	l.Succeeded(now, "10.0.0.2", "ana")
	// Successes give their attempt back: far more than the burst pass.
	for i := range 10 * LoginAddrBurst {
		if ok, _ := l.Begin(now, "10.0.0.3", "bo"); !ok {
			t.Fatalf("success %d refused", i+1)
		}
		l.Succeeded(now, "10.0.0.3", "bo")
	}
	// A success clears the (address, name) failures.
	for range LoginPairBurst - 1 {
		l.Begin(now, "10.0.0.4", "cy")
	}
	l.Begin(now, "10.0.0.4", "cy")
	l.Succeeded(now, "10.0.0.4", "cy")
	for i := range LoginPairBurst {
		if ok, _ := l.Begin(now, "10.0.0.4", "cy"); !ok {
			t.Fatalf("failure %d after a success refused", i+1)
		}
	}
	// One IPv6 client's /64 counts as one address.
	for i := range LoginAddrBurst {
		if ok, _ := l.Begin(now, fmt.Sprintf("2001:db8:1:2::%x", i+1), fmt.Sprintf("u%d", i)); !ok {
			t.Fatalf("v6 failure %d refused", i+1)
		}
	}
	if ok, _ := l.Begin(now, "2001:db8:1:2:ffff::1", "zed"); ok {
		t.Error("a new address in the same /64 was not limited")
	}
	if ok, _ := l.Begin(now.Add(LoginRefillTime), "2001:db8:1:2::1", "zed"); !ok {
		t.Error("no attempt came back after the refill time")
	}
}
