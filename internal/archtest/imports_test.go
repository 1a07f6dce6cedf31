package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/casebook/casebook/"

// rule forbids package pkg (and its subpackages when sub) to import what
// denied reports true for.
type rule struct {
	pkg    string
	sub    bool
	why    string
	denied func(imp string) bool
}

func internalPkg(imp string) (string, bool) { return strings.CutPrefix(imp, module) }

// only allows the standard library, the named module packages (and their
// subpackages) and the named outside modules.
func only(allowed ...string) func(string) bool {
	return func(imp string) bool {
		if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			return false // the standard library
		}
		p, _ := internalPkg(imp)
		for _, a := range allowed {
			if p == a || strings.HasPrefix(p, a+"/") || imp == a || strings.HasPrefix(imp, a+"/") {
				return false
			}
		}
		return true
	}
}

func anyOf(prefixes ...string) func(string) bool {
	return func(imp string) bool {
		for _, p := range prefixes {
			if imp == p || strings.HasPrefix(imp, p+"/") || imp == module+p || strings.HasPrefix(imp, module+p+"/") {
				return true
			}
		}
		return false
	}
}

var rules = []rule{
	{"metrics", false, "the catalog and snapshot types have no dependencies", only()},
	{"internal/route", false, "route names and patterns are a leaf that every layer links with", only()},
	{"diagnose", true, "diagnosis is pure functions over metrics types", only("metrics", "internal", "gonum.org/v1/gonum")},
	{"store", false, "the archive knows only metrics types", only("metrics", "github.com/mattn/go-sqlite3")},
	{"views", false, "templates render view models; they do not reach the HTTP layer or the archive", anyOf("github.com/labstack/echo", "store")},
	{"incident", false, "the incident service knows no HTTP or templates", anyOf("github.com/labstack/echo", "github.com/a-h/templ", "handlers", "web", "views")},
	{"telemetry", false, "telemetry is handed the demo cluster, it does not build one", anyOf("telemetry/sim")},
}

// violations lists the forbidden imports of pkgs (import path -> imports).
func violations(pkgs map[string][]string) []string {
	var out []string
	for path, imps := range pkgs {
		p, ok := internalPkg(path)
		if !ok {
			continue
		}
		for _, imp := range imps {
			ip, own := internalPkg(imp)
			switch {
			case own && (ip == "cmd" || strings.HasPrefix(ip, "cmd/")) && !strings.HasPrefix(p, "cmd/"):
				out = append(out, path+" imports "+imp+": nothing imports the command")
			case own && ip == "web" && !strings.HasPrefix(p, "cmd/"):
				out = append(out, path+" imports "+imp+": only the command assembles the server")
			case own && ip == "handlers" && p != "web" && !strings.HasPrefix(p, "cmd/") && !strings.HasPrefix(p, "handlers/"):
				out = append(out, path+" imports "+imp+": handlers are adapters; share the incident service instead")
			}
			for _, r := range rules {
				if (p == r.pkg || r.sub && strings.HasPrefix(p, r.pkg+"/")) && r.denied(imp) {
					out = append(out, path+" imports "+imp+": "+r.why)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// listImports is `go list` over the module: each package's non-test
// imports.
func listImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "sqlite_fts5", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs[f[0]] = f[1:]
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; is the test run from the module?", len(pkgs))
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	for _, v := range violations(listImports(t)) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations adds one forbidden import at a time to
// the real import graph and checks that each is reported.
func TestImportRulesCatchViolations(t *testing.T) {
	real := listImports(t)
	tests := []struct{ pkg, imp, want string }{
		{"diagnose", "github.com/casebook/casebook/store", "diagnosis is pure"},
		{"diagnose/forecast", "net/http", ""}, // the standard library is fine
		{"diagnose/forecast", "github.com/prometheus/prometheus/promql", "diagnosis is pure"},
		{"store", "github.com/casebook/casebook/diagnose", "knows only metrics"},
		{"views", "github.com/labstack/echo/v4", "do not reach the HTTP layer"},
		{"views", "github.com/casebook/casebook/store", "do not reach the HTTP layer"},
		{"incident", "github.com/casebook/casebook/handlers", "share the incident service"},
		{"incident", "github.com/casebook/casebook/views", "knows no HTTP"},
		{"watch", "github.com/casebook/casebook/handlers", "share the incident service"},
		{"telemetry", "github.com/casebook/casebook/telemetry/sim", "handed the demo cluster"},
		{"store", "github.com/casebook/casebook/cmd/casebook", "nothing imports the command"},
		{"handlers", "github.com/casebook/casebook/web", "only the command assembles"},
		{"metrics", "gonum.org/v1/gonum/mat", "no dependencies"},
		{"internal/route", "github.com/labstack/echo/v4", "a leaf"},
	}
	for _, tc := range tests {
		pkgs := map[string][]string{}
		for k, v := range real {
			pkgs[k] = v
		}
		path := module + tc.pkg
		if _, ok := pkgs[path]; !ok {
			t.Fatalf("package %s not in the module", path)
		}
		pkgs[path] = append(slices.Clone(pkgs[path]), tc.imp)
		got := violations(pkgs)
		found := slices.ContainsFunc(got, func(v string) bool {
			return strings.HasPrefix(v, path+" imports "+tc.imp+":") && strings.Contains(v, tc.want)
		})
		if tc.want == "" && len(got) > 0 || tc.want != "" && !found {
			t.Errorf("%s importing %s: violations %q, want one saying %q", tc.pkg, tc.imp, got, tc.want)
		}
	}
}
