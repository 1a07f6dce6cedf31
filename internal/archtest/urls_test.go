package archtest

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/casebook/casebook/internal/route"
)

// notConsoleURLs are literals that look like a console route but name
// something else, by the folder or file they may appear in (relative to
// the module root).
var notConsoleURLs = map[string][]string{
	// The exposition endpoints of inference engines and of the simulated
	// cluster, which telemetry scrapes: not the console's own /metrics.
	"telemetry/": {"/metrics"},
	// file_sd's default __metrics_path__ of a scrape target.
	"cmd/casebook/targets_file.go": {"/metrics"},
}

// allowedIn reports whether lit may appear in the file rel.
func allowedIn(allowed map[string][]string, rel, lit string) bool {
	for where, lits := range allowed {
		if strings.HasPrefix(rel, where) && slices.Contains(lits, lit) {
			return true
		}
	}
	return false
}

// routePrefixes are the static starts of the console's route patterns:
// each pattern up to its first parameter ("/incidents/" of
// "/incidents/:id", "/kb" of "/kb"). The root "/" is left out: it is the
// start of every path, and of cookie paths.
func routePrefixes() []string {
	var out []string
	for _, n := range route.Names() {
		p := n.Pattern()
		if i := strings.IndexAny(p, ":*"); i >= 0 {
			p = p[:i]
		}
		if p != "/" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// handBuilt reports whether the literal s starts a URL to a console
// route: it begins with a route's static prefix, ending there or
// continued by a path, query, fragment or extension.
func handBuilt(s string, prefixes []string) bool {
	for _, p := range prefixes {
		rest, ok := strings.CutPrefix(s, p)
		if !ok {
			continue
		}
		if strings.HasSuffix(p, "/") || rest == "" || strings.ContainsRune("/?#.", rune(rest[0])) {
			return true
		}
	}
	return false
}

// templString is a double-quoted string in a .templ file: an attribute
// value or a Go string in an expression.
var templString = regexp.MustCompile(`"((?:[^"\\\n]|\\.)*)"`)

// scanURLs lists, as "file:line: literal", the hand-built URLs to console
// routes in the non-test .go files and the .templ files under root,
// leaving out the route package (which holds the patterns), generated
// templ code (its .templ is scanned instead), testdata and the allowed
// literals.
func scanURLs(root string, prefixes []string, allowed map[string][]string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "testout" || rel == "internal/route") {
				return filepath.SkipDir
			}
			return nil
		}
		isTempl := strings.HasSuffix(name, ".templ")
		isGo := strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && !strings.HasSuffix(name, "_templ.go")
		if !isTempl && !isGo {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		report := func(line int, lit string) {
			if handBuilt(lit, prefixes) && !allowedIn(allowed, rel, lit) {
				out = append(out, rel+":"+strconv.Itoa(line)+": "+strconv.Quote(lit))
			}
		}
		if isTempl {
			for i, l := range strings.Split(string(src), "\n") {
				for _, m := range templString.FindAllStringSubmatch(l, -1) {
					report(i+1, m[1])
				}
			}
			return nil
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(path, -1, len(src)), src, nil, 0)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				return nil
			}
			if tok != token.STRING {
				continue
			}
			if v, err := strconv.Unquote(lit); err == nil {
				report(fset.Position(pos).Line, v)
			}
		}
	})
	return out, err
}

// TestNoHandBuiltURLs fails when a source file builds a URL to one of
// the console's routes by hand instead of with route.URL: such a link
// breaks silently when the route moves.
func TestNoHandBuiltURLs(t *testing.T) {
	prefixes := routePrefixes()
	if len(prefixes) < 10 {
		t.Fatalf("only %d route prefixes: %q", len(prefixes), prefixes)
	}
	t.Run("module", func(t *testing.T) {
		found, err := scanURLs("../..", prefixes, notConsoleURLs)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Errorf("%s: build it with route.URL", f)
		}
	})
	t.Run("catches planted literals", func(t *testing.T) {
		dir := t.TempDir()
		files := map[string]string{
			"a/a.go":              "package a\n\nvar x = fmt.Sprintf(\"/incidents/%d/notes\", 1)\nvar y = `/kb`\nvar ok = \"/kbd\"\n",
			"a/a_test.go":         "package a\n\nvar t = \"/incidents\"\n",
			"v/page.templ":        "templ P() {\n\t<a href=\"/admin/users?done=1\">x</a>\n\t<a href=\"https://example.com/incidents\">y</a>\n}\n",
			"v/page_templ.go":     "package v\n\nvar g = \"/incidents\"\n",
			"testdata/x.go":       "package x\n\nvar d = \"/incidents\"\n",
			"internal/route/r.go": "package route\n\nvar p = \"/incidents\"\n",
			"b/b.go":              "package b\n\nvar m = \"/metrics\"\nvar n = \"/metrics\"\n",
		}
		for name, src := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := scanURLs(dir, prefixes, map[string][]string{"b/b.go": {"/metrics"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`a/a.go:3: "/incidents/%d/notes"`, `a/a.go:4: "/kb"`, `v/page.templ:2: "/admin/users?done=1"`}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("found %q, want %q", got, want)
		}
	})
}
