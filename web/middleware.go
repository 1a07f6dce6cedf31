package web

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/route"
)

// ContentSecurityPolicy allows only the console's own scripts, styles and
// images; no inline script or style, no framing, forms post only to us.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'"

// useMiddleware installs the ordered stack: recover, request ID, request
// logging, request metrics, secure headers, cross-origin protection,
// compression, body limit, timeout, the request's language,
// authentication with the route policies and form tokens.
func useMiddleware(e *echo.Echo, opts Options, om *observability, authn *authenticator) {
	log := opts.Logger
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.ErrorContext(c.Request().Context(), "panic",
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID),
				"err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(middleware.RequestID())
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:  true,
		LogLatency:   true,
		LogMethod:    true,
		LogURI:       true,
		LogRoutePath: true,
		LogRequestID: true,
		LogStatus:    true,
		LogError:     true,
		LogRemoteIP:  true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.Status >= 500:
				level = slog.LevelError
			case v.Status >= 400:
				level = slog.LevelWarn
			}
			attrs := []slog.Attr{
				slog.String("method", v.Method), slog.String("uri", v.URI),
				slog.String("route", v.RoutePath), slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency), slog.String("request_id", v.RequestID),
				slog.String("remote_ip", v.RemoteIP),
			}
			if v.Error != nil {
				attrs = append(attrs, slog.String("err", v.Error.Error()))
			}
			log.LogAttrs(context.Background(), level, "request", attrs...)
			return nil
		},
	}))
	e.Use(om.measure)
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:         "0",
		ContentTypeNosniff:    "nosniff",
		XFrameOptions:         "DENY",
		ContentSecurityPolicy: ContentSecurityPolicy,
		ReferrerPolicy:        "same-origin",
		// Sent only over HTTPS (directly or as X-Forwarded-Proto).
		HSTSMaxAge: 365 * 24 * 3600,
	}))
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			h.Set("Cross-Origin-Resource-Policy", "same-origin")
			h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
			return next(c)
		}
	})
	e.Use(crossOrigin())
	// Live pages carry chart data for the hover read-out; gzip shrinks them
	// about fourfold. /metrics compresses itself.
	e.Use(middleware.GzipWithConfig(middleware.GzipConfig{
		Level:   5,
		Skipper: func(c echo.Context) bool { return c.Path() == route.Metrics.Pattern() },
	}))
	e.Use(bodyDeadline(formPace, uploadPace))
	// Kernel-trace uploads stream to disk under their own, larger limit
	// and may take longer than a page to receive and parse.
	ownLimit := func(c echo.Context) bool {
		return handlers.EnforcesOwnBodyLimit(c) || handlers.IsAlertmanagerWebhook(c)
	}
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: opts.BodyLimit, Skipper: ownLimit}))
	e.Use(middleware.ContextTimeoutWithConfig(middleware.ContextTimeoutConfig{Timeout: opts.RequestTimeout, Skipper: handlers.EnforcesOwnBodyLimit}))
	// Which language the pages speak, before authentication so that its
	// refusals are in the viewer's language too.
	e.Use(localize)
	// Who is asking, may they, and did their form come from our page.
	e.Use(authn.middleware)
}

// crossOrigin rejects cross-site state-changing requests (the standard
// library's Sec-Fetch-Site / Origin check). Form tokens (authenticator)
// back it up for browsers that send neither header.
func crossOrigin() echo.MiddlewareFunc {
	cop := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := cop.Check(c.Request()); err != nil {
				return handlers.HTTPError(http.StatusForbidden, "error.cross_origin").SetInternal(err)
			}
			return next(c)
		}
	}
}
