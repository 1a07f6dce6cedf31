package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sandbox runs ensure-test-deps as root against stub commands that log
// what they were asked: apt-get (which also runs the policy-rc.d in place,
// as invoke-rc.d would, and logs its answer), pkill, killall, systemctl,
// deb-systemd-helper. Nothing of the real machine is touched.
type sandbox struct {
	dir, bin, log, policy string
}

func newSandbox(t *testing.T, aptFails bool) *sandbox {
	t.Helper()
	s := &sandbox{dir: t.TempDir()}
	s.bin = filepath.Join(s.dir, "bin")
	s.log = filepath.Join(s.dir, "log")
	s.policy = filepath.Join(s.dir, "policy-rc.d")
	if err := os.Mkdir(s.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	aptExit := "0"
	if aptFails {
		aptExit = "100"
	}
	stubs := map[string]string{
		"id":                 `echo 0`,
		"apt-get":            `echo "apt-get $*" >>"$LOG"; if [ "$1" = install ]; then if [ -x "$CASEBOOK_POLICY_RC_D" ]; then "$CASEBOOK_POLICY_RC_D" prometheus start; echo "policy-rc.d start: $?" >>"$LOG"; else echo "policy-rc.d: none" >>"$LOG"; fi; exit ` + aptExit + `; fi`,
		"pkill":              `echo "pkill $*" >>"$LOG"`,
		"killall":            `echo "killall $*" >>"$LOG"`,
		"systemctl":          `echo "systemctl $*" >>"$LOG"`,
		"deb-systemd-helper": `echo "deb-systemd-helper $*" >>"$LOG"`,
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(s.bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"chmod", "rm", "sh"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(s.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *sandbox) run(t *testing.T) (string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	cmd := exec.Command(bash, "ensure-test-deps")
	cmd.Env = []string{"PATH=" + s.bin, "LOG=" + s.log, "CASEBOOK_POLICY_RC_D=" + s.policy}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *sandbox) calls(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEnsureTestDepsKillsNothing installs the packages with no policy in
// place: services are refused at install by a temporary policy-rc.d that
// is gone afterwards, the installed units are disabled, and no process is
// killed by name.
func TestEnsureTestDepsKillsNothing(t *testing.T) {
	s := newSandbox(t, false)
	out, err := s.run(t)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	calls := s.calls(t)
	if strings.Contains(calls, "pkill") || strings.Contains(calls, "killall") {
		t.Errorf("killed by name:\n%s", calls)
	}
	if !strings.Contains(calls, "policy-rc.d start: 101") {
		t.Errorf("services were not refused at install:\n%s", calls)
	}
	for _, unit := range []string{"prometheus.service", "prometheus-alertmanager.service"} {
		if !strings.Contains(calls, "deb-systemd-helper disable "+unit) {
			t.Errorf("%s not disabled:\n%s", unit, calls)
		}
	}
	if _, err := os.Lstat(s.policy); !os.IsNotExist(err) {
		t.Errorf("the temporary policy-rc.d was left behind (%v)", err)
	}
}

// TestEnsureTestDepsKeepsPolicy leaves an operator's own policy-rc.d as
// it was, and stops at most the units it installed.
func TestEnsureTestDepsKeepsPolicy(t *testing.T) {
	s := newSandbox(t, false)
	const own = "#!/bin/sh\nexit 0\n"
	if err := os.WriteFile(s.policy, []byte(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := s.run(t); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, err := os.ReadFile(s.policy); err != nil || string(b) != own {
		t.Errorf("policy-rc.d changed: %q (%v)", b, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(s.calls(t)), "\n") {
		if strings.HasPrefix(line, "pkill") || strings.HasPrefix(line, "killall") ||
			(strings.HasPrefix(line, "systemctl") && line != "systemctl stop prometheus.service" && line != "systemctl stop prometheus-alertmanager.service") {
			t.Errorf("unexpected call %q", line)
		}
	}
}

// TestEnsureTestDepsRemovesPolicyOnFailure: a failed install still removes
// the temporary policy-rc.d.
func TestEnsureTestDepsRemovesPolicyOnFailure(t *testing.T) {
	s := newSandbox(t, true)
	if out, err := s.run(t); err == nil {
		t.Fatalf("a failed apt-get install succeeded:\n%s", out)
	}
	if _, err := os.Lstat(s.policy); !os.IsNotExist(err) {
		t.Errorf("the temporary policy-rc.d was left behind (%v)", err)
	}
}
