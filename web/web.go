package web

import (
	"log/slog"
	"net"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/casebook/casebook/auth"
	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/static"
	"github.com/casebook/casebook/views"
)

// Options configures the server. Telemetry and Diagnoser are required;
// everything else has a default.
type Options struct {
	Telemetry handlers.Telemetry
	Diagnoser handlers.Diagnoser
	// Faults enables the demo fault panel; nil outside demo mode.
	Faults handlers.FaultInjector
	// Incidents serves the archive (incidents, knowledge base, accuracy,
	// traces, change requests, the webhook and JSON API); nil leaves
	// those routes out.
	Incidents *handlers.Incidents
	// IncidentOpener makes "Diagnose now" open an incident; nil shows the
	// diagnosis directly.
	IncidentOpener handlers.IncidentOpener
	// Layout frames every page; nil builds one over Telemetry.
	Layout *handlers.Layout
	// Forecaster draws forecast bands on the live charts; nil draws none.
	Forecaster handlers.Forecaster
	// Detector reports the detector's last round on the storage page;
	// nil when the detector is off.
	Detector handlers.DetectorReporter
	// Storage describes the embedded metric store; nil means remote.
	Storage handlers.StorageReporter
	// Deviations overrides diagnose.Deviations for status colours.
	Deviations func(metrics.Snapshot) map[string]diagnose.Deviation
	Logger     *slog.Logger
	// Registry receives the console's own metrics and is served on
	// /metrics; nil means a fresh registry.
	Registry *prometheus.Registry
	// RequestTimeout bounds each request; 0 means 30s.
	RequestTimeout time.Duration
	// BodyLimit bounds request bodies, in echo's notation; "" means "5M".
	BodyLimit string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Auth configures authentication; the zero value lets everyone in as
	// an admin (the loopback default).
	Auth AuthOptions
	// Stores whose write failures make the console not ready and put a
	// banner on every page (handlers.Deps.Stores).
	Stores []handlers.Store
}

// ipExtractor names the client: the direct peer, or the address a trusted
// proxy puts in X-Forwarded-For.
func ipExtractor(p auth.Proxy) echo.IPExtractor {
	if len(p.Trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, pf := range p.Trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: net.IP(pf.Addr().AsSlice()), Mask: net.CIDRMask(pf.Bits(), pf.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// Assets are the console's embedded stylesheet and script, with their
// content versions.
func Assets() views.Assets {
	return views.Assets{CSS: static.URL("css/casebook.css"), JS: static.URL("js/casebook.js")}
}

// Server is the assembled console: the Echo instance plus the handlers,
// whose Layout the archive's pages use.
type Server struct {
	*echo.Echo
	Handlers *handlers.Handlers
}

// New builds the console. It registers every route, the middleware stack
// and the error handler; the caller starts it with Start or serves it
// through httptest.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.BodyLimit == "" {
		opts.BodyLimit = "5M"
	}
	om := newObservability(opts.Registry)
	h := handlers.New(handlers.Deps{
		Telemetry:  opts.Telemetry,
		Diagnoser:  opts.Diagnoser,
		Faults:     opts.Faults,
		Incidents:  opts.IncidentOpener,
		Deviations: opts.Deviations,
		Diagnoses:  om.diagnoses,
		Layout:     opts.Layout,
		Forecaster: opts.Forecaster,
		Detector:   opts.Detector,
		Storage:    opts.Storage,
		Assets:     Assets(),
		Logger:     opts.Logger,
		Now:        opts.Now,
		Stores:     opts.Stores,
	})
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(opts.Logger, h, opts.BodyLimit)
	e.IPExtractor = ipExtractor(opts.Auth.Proxy)
	if opts.Auth.Mode == "" {
		opts.Auth.Mode = AuthNone
	}
	if opts.Auth.Mode != AuthNone && opts.Auth.Accounts == nil {
		panic("web: authentication mode " + string(opts.Auth.Mode) + " needs Auth.Accounts")
	}
	authn := &authenticator{opts: opts.Auth, now: opts.Now}
	if authn.now == nil {
		authn.now = time.Now
	}
	useMiddleware(e, opts, om, authn)
	authn.routes = register(e, routeTable(h, opts, om))
	return &Server{Echo: e, Handlers: h}
}
