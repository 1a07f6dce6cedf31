package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/internal/i18n"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/views"
)

// errorHandler is the single place errors become responses. Bad parameters
// are 400s naming the parameter; echo errors keep their code; anything else
// is a 500 that shows only the request id. 5xx are logged at error, 4xx at
// warn. API routes answer JSON.
func errorHandler(log *slog.Logger, h *handlers.Handlers, bodyLimit string) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		req := c.Request()
		ctx := req.Context()
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		v := views.ErrorView{Status: http.StatusInternalServerError}
		var pe *handlers.ParamError
		var he *echo.HTTPError
		switch {
		case errors.As(err, &pe):
			v.Status, v.Param, v.Message = pe.Code(), pe.Param, pe.ReasonIn(ctx)
		case errors.As(err, &he):
			v.Status = he.Code
			if m, ok := he.Message.(handlers.Message); ok && v.Status < 500 {
				v.Message = m.In(ctx)
			} else if v.Status < 500 {
				v.Message = fmt.Sprint(he.Message)
			}
		case errors.Is(err, context.DeadlineExceeded):
			v.Status = http.StatusServiceUnavailable
			v.Message = i18n.T(ctx, "error.too_long")
		}
		if v.Status == http.StatusRequestEntityTooLarge && (v.Message == "" || strings.EqualFold(v.Message, http.StatusText(v.Status))) {
			v.Message = i18n.T(ctx, "error.body_too_large", bodyLimit)
		}
		if v.Status == http.StatusNotFound && (v.Message == "" || strings.EqualFold(v.Message, http.StatusText(http.StatusNotFound))) {
			v.Message = i18n.T(ctx, "error.no_page", req.URL.Path)
		}
		v.Title = statusText(ctx, v.Status)
		if v.Status >= 500 {
			v.RequestID = reqID
			if v.Message == "" {
				v.Message = i18n.T(ctx, "error.internal")
			}
			log.ErrorContext(req.Context(), "request failed", "request_id", reqID, "status", v.Status, "err", err)
		} else {
			log.WarnContext(req.Context(), "request rejected", "request_id", reqID, "status", v.Status, "err", err)
		}

		if req.Method == http.MethodHead {
			_ = c.NoContent(v.Status)
			return
		}
		if strings.HasPrefix(req.URL.Path, route.APIPrefix) {
			msg := v.Message
			if v.Param != "" {
				msg = v.Param + ": " + msg
			}
			_ = c.JSON(v.Status, map[string]string{"error": msg, "request_id": reqID})
			return
		}
		v.Layout = h.Layout(v.Title, "")
		// The request context may already be cancelled by the timeout
		// middleware; the error page must still render.
		var buf bytes.Buffer
		if rerr := views.ErrorPage(v).Render(context.WithoutCancel(req.Context()), &buf); rerr != nil {
			log.ErrorContext(req.Context(), "render error page", "request_id", reqID, "err", rerr)
			_ = c.String(v.Status, v.Title)
			return
		}
		_ = c.HTMLBlob(v.Status, buf.Bytes())
	}
}

// statusKeys are the catalog keys of the status lines the console
// answers with; others keep Go's English text.
var statusKeys = map[int]string{
	http.StatusBadRequest:            "http.400",
	http.StatusUnauthorized:          "http.401",
	http.StatusForbidden:             "http.403",
	http.StatusNotFound:              "http.404",
	http.StatusMethodNotAllowed:      "http.405",
	http.StatusConflict:              "http.409",
	http.StatusRequestEntityTooLarge: "http.413",
	http.StatusTooManyRequests:       "http.429",
	http.StatusInternalServerError:   "http.500",
	http.StatusServiceUnavailable:    "http.503",
}

// statusText is the status line's text in the request's language.
func statusText(ctx context.Context, code int) string {
	if k, ok := statusKeys[code]; ok {
		return i18n.T(ctx, k)
	}
	return http.StatusText(code)
}
