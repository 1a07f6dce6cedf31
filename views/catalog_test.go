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

// catalogKey finds the literal keys Go code and templates print from the
// catalogs: T(ctx, "key"), i18n.T(anything, "key"), a Locale's
// l.T("key"), a banner's Msg: "key", and a key chosen into a variable
// before the call (key := "key", key, start := "key", ...).
var catalogKey = regexp.MustCompile(`\bT\((?:(?:[^"(),]|\([^()]*\))*,\s*)?"([^"]+)"` +
	`|\bMsg:\s*"([^"]+)"` +
	`|\bkey(?:,\s*\w+)?\s*:?=\s*"([^"]+)"`)

// dynamicKeys are the keys code builds from a prefix and a value
// ("cr."+direction): every value it can take.
var dynamicKeys = []string{"cr.up", "cr.down", "severity.critical", "severity.warning", "severity.info",
	"dim.latency", "dim.throughput", "dim.utilization", "dim.quality"}

// catalogFiles are the module's Go files and templates outside the
// catalogs themselves, without generated code and tests.
func catalogFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "testout":
				return filepath.SkipDir
			}
			if path == filepath.Join("..", "internal", "i18n") {
				return filepath.SkipDir
			}
			return nil
		}
		n := d.Name()
		if (strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".templ")) && !strings.HasSuffix(n, "_templ.go") && !strings.HasSuffix(n, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCatalogKeysExist fails when code or a template anywhere in the
// module asks for a key that lacks an English or a Chinese entry (it
// would print the key itself, or English to a Chinese reader).
func TestCatalogKeysExist(t *testing.T) {
	entries := map[string]i18n.Msg{}
	for _, m := range i18n.All() {
		entries[m.Key] = m
	}
	check := func(where, key string) {
		m, ok := entries[key]
		switch {
		case !ok:
			t.Errorf("%s asks for key %q, which the catalogs lack", where, key)
		case m.En == "" || m.Zh == "":
			t.Errorf("%s asks for key %q, which lacks its English or Chinese text", where, key)
		}
	}
	calls := map[string]int{}
	for _, f := range catalogFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range catalogKey.FindAllStringSubmatch(string(b), -1) {
			key := m[1] + m[2] + m[3]
			calls[filepath.Dir(f)]++
			if !strings.HasSuffix(key, ".") { // a prefix: see dynamicKeys
				check(f, key)
			}
		}
	}
	for _, k := range dynamicKeys {
		check("a key built from a prefix", k)
	}
	for _, n := range append(navKeys(), slices.Collect(maps.Values(chartTitleKeys))...) {
		check("nav or chart entry", n)
	}
	// The scan reaches the packages that print from the catalogs.
	for dir, least := range map[string]int{"../views": 100, "../handlers": 50, "../web": 3, "../change": 10} {
		if calls[dir] < least {
			t.Errorf("found only %d catalog calls in %s: the scan misses them", calls[dir], dir)
		}
	}
}

// TestCatalogKeyFindsEveryForm shows the key scan is not vacuous: each
// way code asks for a key is found, and other strings are not.
func TestCatalogKeyFindsEveryForm(t *testing.T) {
	src := `T(ctx, "a.one") i18n.T(c.Request().Context(), "a.two") l.T("a.three") i18n.T(ctx, "a.four", x, y)
	views.Banner{Msg: "a.five"} key := "a.six" key, start := "a.seven", 3 key = "a.eight"
	fmt.Sprintf("not.a.key") strings.Join(parts, ", ")`
	var got []string
	for _, m := range catalogKey.FindAllStringSubmatch(src, -1) {
		got = append(got, m[1]+m[2]+m[3])
	}
	want := []string{"a.one", "a.two", "a.three", "a.four", "a.five", "a.six", "a.seven", "a.eight"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
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
