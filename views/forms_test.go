package views

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryPostFormCarriesTheFormToken reads every template: a form that
// posts must render CSRFField (or, for a multipart upload that is checked
// before its body is read, carry the token in its action URL). A form
// without it is refused with 403 at run time, which only a click shows.
func TestEveryPostFormCarriesTheFormToken(t *testing.T) {
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates found: %v", err)
	}
	form := regexp.MustCompile(`(?s)<form\b([^>]*)>(.*?)</form>`)
	posts := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range form.FindAllStringSubmatch(string(b), -1) {
			attrs, body := m[1], m[2]
			if !strings.Contains(attrs, `method="post"`) {
				continue
			}
			posts++
			if !strings.Contains(body, "@CSRFField()") && !strings.Contains(attrs, "withCSRF(") {
				t.Errorf("%s: a post form without the form token: <form%s>", f, attrs)
			}
		}
	}
	if posts < 10 {
		t.Fatalf("found only %d post forms: the pattern no longer matches the templates", posts)
	}
}
