package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/store"
)

func runCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	if stdin != "" {
		f := filepath.Join(t.TempDir(), "pw")
		if err := os.WriteFile(f, []byte(stdin), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--password-file", f)
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &errb)
	return out.String(), err
}

// TestUserTokenBackupRestore drives the account, token, backup and restore
// commands against a data directory.
func TestUserTokenBackupRestore(t *testing.T) {
	data := t.TempDir()
	if _, err := runCmd(t, "correct horse battery\n", "user", "add", "ana", "--role", "admin", "--data", data); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "short\n", "user", "add", "bo", "--data", data); !errors.Is(err, errUsage) {
		t.Errorf("short password: %v", err)
	}
	if _, err := runCmd(t, "", "user", "add", "cy", "--role", "root", "--no-password", "--data", data); !errors.Is(err, errUsage) {
		t.Errorf("role root: %v", err)
	}
	secret, err := runCmd(t, "", "token", "add", "alertmanager", "--scope", "webhook", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	secret = strings.TrimSpace(secret)
	if !auth.LooksLikeToken(secret, auth.TokenPrefix) {
		t.Fatalf("token add printed %q", secret)
	}
	list, _ := runCmd(t, "", "token", "list", "--data", data)
	if strings.Contains(list, secret) || !strings.Contains(list, "alertmanager") {
		t.Errorf("token list shows the secret or misses the token:\n%s", list)
	}

	bak := filepath.Join(t.TempDir(), "casebook.bak")
	if _, err := runCmd(t, "", "backup", bak, "--data", data); err != nil {
		t.Fatal(err)
	}
	// A change after the backup is gone after the restore.
	if _, err := runCmd(t, "", "user", "add", "late", "--no-password", "--data", data); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "", "restore", bak, "--data", data); !errors.Is(err, errUsage) {
		t.Errorf("restore over an archive without --force: %v", err)
	}
	// A serving console holds the lock: restore refuses.
	release, err := lockData(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "", "restore", bak, "--data", data, "--force"); !errors.Is(err, errLocked) {
		t.Errorf("restore while serving: %v", err)
	}
	release()
	if _, err := runCmd(t, "", "restore", bak, "--data", data, "--force"); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(data, "casebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	u, err := st.UserByName(ctx, "ana")
	if err != nil || u.Role != "admin" || auth.CheckPassword(u.PasswordHash, "correct horse battery") != nil {
		t.Errorf("restored ana: %+v %v", u, err)
	}
	if _, err := st.UserByName(ctx, "late"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("user added after the backup survived the restore: %v", err)
	}
	if _, err := st.TokenByHash(ctx, auth.HashToken(secret), time.Now()); err != nil {
		t.Errorf("restored token: %v", err)
	}
	log, _ := st.AuditLog(ctx, store.AuditFilter{})
	if len(log) < 2 || !strings.HasPrefix(log[0].Actor, "cli:") {
		t.Errorf("audit log after restore: %+v", log)
	}
	// Not an archive.
	junk := filepath.Join(t.TempDir(), "junk")
	_ = os.WriteFile(junk, []byte("not a database"), 0o600)
	if _, err := runCmd(t, "", "restore", junk, "--data", t.TempDir()); err == nil {
		t.Error("restoring junk succeeded")
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		authed, insec bool
		wantErr       bool
	}{
		{"127.0.0.1:8080", false, false, false},
		{"localhost:8080", false, false, false},
		{"[::1]:8080", false, false, false},
		{"0.0.0.0:8080", false, false, true},
		{"0.0.0.0:8080", true, false, false},
		{"0.0.0.0:8080", false, true, false},
		{":8080", false, false, true},
	} {
		if err := checkListen(tc.addr, tc.authed, tc.insec); (err != nil) != tc.wantErr {
			t.Errorf("checkListen(%q, auth=%v, insecure=%v) = %v", tc.addr, tc.authed, tc.insec, err)
		}
	}
}

func TestParseServeAuthFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{}, true},
		{[]string{"--listen", "0.0.0.0:8080"}, false},
		{[]string{"--listen", "0.0.0.0:8080", "--auth", "accounts"}, true},
		{[]string{"--listen", "0.0.0.0:8080", "--auth", "proxy"}, false},
		{[]string{"--listen", "0.0.0.0:8080", "--auth", "proxy", "--trusted-proxies", "10.0.0.0/8"}, true},
		{[]string{"--auth", "proxy", "--trusted-proxies", "10.0.0.0/33"}, false},
		{[]string{"--auth", "ldap"}, false},
		{[]string{"--proxy-role", "root"}, false},
		{[]string{"--session-ttl", "1s"}, false},
		{[]string{"--listen", "0.0.0.0:8080", "--insecure-no-auth"}, true},
	} {
		_, err := parseServe(tc.args, noEnv, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("parseServe(%q) = %v, want ok=%v", tc.args, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errUsage) {
			t.Errorf("parseServe(%q) = %v, not a usage error", tc.args, err)
		}
	}
}
