// Package depsanchor keeps the project's direct dependencies pinned in go.mod
// while the packages that use them are being written. It is removed once every
// dependency has a real importer.
package depsanchor

import (
	_ "github.com/NVIDIA/go-dcgm/pkg/dcgm"
	_ "github.com/a-h/templ"
	_ "github.com/chromedp/chromedp"
	_ "github.com/labstack/echo/v4"
	_ "github.com/labstack/echo/v4/middleware"
	_ "github.com/mattn/go-sqlite3"
	_ "github.com/prometheus/client_golang/api"
	_ "github.com/prometheus/client_golang/api/prometheus/v1"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/prometheus/common/model"
	_ "github.com/prometheus/prometheus/model/labels"
	_ "github.com/prometheus/prometheus/model/textparse"
	_ "github.com/prometheus/prometheus/promql"
	_ "github.com/prometheus/prometheus/promql/parser"
	_ "github.com/prometheus/prometheus/storage"
	_ "github.com/prometheus/prometheus/tsdb"
	_ "golang.org/x/crypto/bcrypt"
	_ "gonum.org/v1/gonum/mat"
	_ "gonum.org/v1/gonum/stat"
)
