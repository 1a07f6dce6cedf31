package web

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers"
)

// bodyPace is how fast a request body must arrive: within grace of the
// first read, plus one second per rate bytes read, and never later than
// max after the first read (zero: no cap but the server's ReadTimeout).
// A client that sends slower loses the connection instead of holding it
// and a goroutine for the server's whole ReadTimeout.
type bodyPace struct {
	grace time.Duration
	rate  int64 // bytes per second
	max   time.Duration
}

// Body paces: every route but the trace uploads gets a short deadline
// (form posts, webhooks and API calls are kilobytes to a few MB); the
// uploads, hundreds of MB over a possibly slow link, get a long grace, a
// minimum rate and the server's 10 minute ReadTimeout as their cap.
var (
	formPace   = bodyPace{grace: 5 * time.Second, rate: 4 << 10, max: 30 * time.Second}
	uploadPace = bodyPace{grace: 30 * time.Second, rate: 32 << 10, max: 10 * time.Minute}
)

// bodyDeadline sets the connection's read deadline as the body arrives,
// at the pace of the route: uploads (handlers.EnforcesOwnBodyLimit) at
// upload, everything else at form.
func bodyDeadline(form, upload bodyPace) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.Body == nil || req.Body == http.NoBody {
				return next(c)
			}
			pace := form
			if handlers.EnforcesOwnBodyLimit(c) {
				pace = upload
			}
			req.Body = &pacedBody{ReadCloser: req.Body, rc: http.NewResponseController(c.Response().Writer), pace: pace}
			return next(c)
		}
	}
}

// pacedBody moves the read deadline forward as bytes arrive, and clears
// it at the end of the body: net/http keeps reading the connection in the
// background while the handler runs, and a deadline passing then would
// cancel the request's context.
type pacedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	pace  bodyPace
	start time.Time
	n     int64
	done  bool
}

// ErrBodyTooSlow is the error a handler's body read returns when the
// client sends the body slower than its route allows.
var ErrBodyTooSlow = errors.New("the request body arrived too slowly")

func (b *pacedBody) Read(p []byte) (int, error) {
	if b.done {
		return b.ReadCloser.Read(p)
	}
	if b.start.IsZero() {
		b.start = time.Now()
	}
	allowed := b.pace.grace + time.Duration(b.n)*time.Second/time.Duration(max(b.pace.rate, 1))
	if b.pace.max > 0 {
		allowed = min(allowed, b.pace.max)
	}
	// Not every writer supports deadlines (httptest's recorder); the
	// body is then read as before.
	_ = b.rc.SetReadDeadline(b.start.Add(allowed))
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, echo.NewHTTPError(http.StatusRequestTimeout, "The request body arrived too slowly: "+
			b.paceText()).SetInternal(errors.Join(ErrBodyTooSlow, err))
	}
	return n, err
}

func (b *pacedBody) paceText() string {
	s := "send it within " + b.pace.grace.String() + " plus one second per " + byteCount(b.pace.rate)
	if b.pace.max > 0 {
		s += ", at most " + b.pace.max.String()
	}
	return s + "."
}

func byteCount(n int64) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
