package views

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/a-h/templ/parser/v2"

	"github.com/casebook/casebook/internal/i18n"
)

// notWords are the tokens a template may show as they are: the product's
// name, metric or engine names and file formats engineers write in Latin
// letters in every language.
var notWords = []string{"Casebook", "TTFT", "TPOT", "vLLM", "SGLang", "E2E", "KV", "GPU", "z", "Markdown", "JSON", "HTTP"}

// shownAttrs are the attributes a reader sees or hears.
var shownAttrs = []string{"title", "placeholder", "aria-label", "alt", "content", "label", "value"}

// isWord reports whether s holds a word a reader must be able to read in
// their language: a letter outside the allowed tokens.
func isWord(s string) bool {
	for _, w := range notWords {
		s = regexp.MustCompile(`\b`+regexp.QuoteMeta(w)+`\b`).ReplaceAllString(s, "")
	}
	return strings.ContainsFunc(s, unicode.IsLetter)
}

// literals finds the words a template shows outside catalog calls: text
// nodes, string-literal expressions and constant shown attributes.
// Keyboard keys (<kbd>) and code are not words.
func literals(nodes []parser.Node, found *[]string) {
	for _, n := range nodes {
		switch n := n.(type) {
		case *parser.Text:
			if isWord(n.Value) {
				*found = append(*found, strings.TrimSpace(n.Value))
			}
		case *parser.StringExpression:
			if s, err := strconv.Unquote(strings.TrimSpace(n.Expression.Value)); err == nil && isWord(s) {
				*found = append(*found, s)
			}
		case *parser.Element:
			for _, a := range n.Attributes {
				ca, ok := a.(*parser.ConstantAttribute)
				if !ok {
					continue
				}
				k, _ := ca.Key.(parser.ConstantAttributeKey)
				if slices.Contains(shownAttrs, k.Name) && n.Name != "input" && n.Name != "option" && n.Name != "meta" && isWord(ca.Value) {
					*found = append(*found, k.Name+"="+ca.Value)
				}
			}
			if n.Name != "kbd" && n.Name != "code" {
				literals(n.Children, found)
			}
		case *parser.IfExpression:
			literals(n.Then, found)
			for _, e := range n.ElseIfs {
				literals(e.Then, found)
			}
			literals(n.Else, found)
		case *parser.ForExpression:
			literals(n.Children, found)
		case *parser.SwitchExpression:
			for _, c := range n.Cases {
				literals(c.Children, found)
			}
		case *parser.TemplElementExpression:
			literals(n.Children, found)
		}
	}
}

func templateLiterals(t *testing.T, path string) []string {
	t.Helper()
	tf, err := parser.Parse(path)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var found []string
	for _, n := range tf.Nodes {
		if h, ok := n.(*parser.HTMLTemplate); ok {
			literals(h.Children, &found)
		}
	}
	return found
}

// TestTemplatesUseCatalog fails when a template shows a word that is not
// printed from the catalogs.
func TestTemplatesUseCatalog(t *testing.T) {
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for _, f := range files {
		for _, s := range templateLiterals(t, f) {
			t.Errorf("%s shows %q outside the catalog: print it with T(ctx, key)", f, s)
		}
	}
}

// TestWordCheckFindsEnglish shows the check is not vacuous: a template
// with English words in text, an expression and an attribute fails it.
func TestWordCheckFindsEnglish(t *testing.T) {
	src := `package views

templ probe() {
	<p title="Shortcut">Hello <kbd>j</kbd> { "there" } { T(ctx, "nav.incidents") } · 42 TTFT</p>
}
`
	path := filepath.Join(t.TempDir(), "probe.templ")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := templateLiterals(t, path)
	want := []string{"title=Shortcut", "Hello", "there"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

var catalogCall = regexp.MustCompile(`\bT\((?:ctx|c\.Request\(\)\.Context\(\)|r\.Context\(\)), "([^"]+)"`)

// TestCatalogKeysExist fails when a template or view model asks for a
// key neither catalog holds (it would print the key itself).
func TestCatalogKeysExist(t *testing.T) {
	keys := i18n.Keys()
	var files []string
	for _, g := range []string{"*.templ", "*.go", "../web/*.go", "../handlers/*.go", "../cmd/casebook/*.go"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	calls := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_templ.go") || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range catalogCall.FindAllStringSubmatch(string(b), -1) {
			calls++
			if !keys[m[1]] {
				t.Errorf("%s asks for key %q, which the catalogs lack", f, m[1])
			}
		}
	}
	for _, n := range append(navKeys(), slices.Collect(maps.Values(chartTitleKeys))...) {
		if !keys[n] {
			t.Errorf("nav entry key %q missing from the catalogs", n)
		}
	}
	if calls < 100 {
		t.Errorf("found only %d catalog calls", calls)
	}
}

// navKeys are the nav entries' catalog keys (navLinks keeps them as data).
func navKeys() []string {
	var out []string
	for _, n := range (LayoutView{ShowFaults: true}).navLinks() {
		out = append(out, n.Label)
	}
	return out
}
