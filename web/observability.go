package web

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// observability holds the console's own metrics.
type observability struct {
	reg       *prometheus.Registry
	duration  *prometheus.HistogramVec
	diagnoses prometheus.Counter
}

func newObservability(reg *prometheus.Registry) *observability {
	o := &observability{
		reg: reg,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "casebook",
			Name:      "http_request_duration_seconds",
			Help:      "Duration of HTTP requests by route pattern, method and status code.",
			Buckets:   []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method", "code"}),
		diagnoses: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "casebook",
			Name:      "diagnoses_total",
			Help:      "Diagnoses made through the console and the API.",
		}),
	}
	reg.MustRegister(o.duration, o.diagnoses)
	return o
}

// measure records each request's duration under its route pattern (never
// the raw path, to bound cardinality). It hands errors to the error
// handler first so that the recorded code is the one sent.
func (o *observability) measure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		route := c.Path()
		status := c.Response().Status
		if route == "" || status == 404 {
			route = "unmatched"
		}
		o.duration.WithLabelValues(route, c.Request().Method, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
		return nil
	}
}
