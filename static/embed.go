package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/url"
	"sync"

	"github.com/casebook/casebook/internal/route"
)

// FS holds the stylesheet and scripts, rooted so that paths start with
// "css/" or "js/".
//
//go:embed css js
var FS embed.FS

var versions = sync.OnceValue(func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[path] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out
})

// Version returns a short content hash of the embedded file name, or ""
// when there is no such file.
func Version(name string) string {
	return versions()[name]
}

// URL returns the cache-busting URL of an embedded file, such as
// "/static/css/casebook.css?v=3f2a9c01b7de". The version changes whenever
// the file's content does, so responses for it may be cached for a year.
func URL(name string) string {
	q := url.Values{}
	if v := Version(name); v != "" {
		q.Set("v", v)
	}
	return route.URLQuery(route.Static, q, name)
}
