package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/internal/route"
)

// TestBodyDeadline sends bodies one byte every 100 ms through the whole
// middleware stack, with the paces shortened: a form route drops the
// sender once it falls behind, the trace-upload route lets it finish, a
// prompt body is read whole, and a deadline does not outlive its body (a
// handler that works on after reading keeps its context).
func TestBodyDeadline(t *testing.T) {
	savedForm, savedUpload := formPace, uploadPace
	t.Cleanup(func() { formPace, uploadPace = savedForm, savedUpload })
	formPace = bodyPace{grace: 300 * time.Millisecond, rate: 1000, max: 2 * time.Second}
	uploadPace = bodyPace{grace: 5 * time.Second, rate: 1000, max: 10 * time.Second}

	type result struct {
		n      int
		err    error
		ctxErr error
	}
	got := make(chan result, 1)
	read := func(c echo.Context) error {
		n, err := io.Copy(io.Discard, c.Request().Body)
		if err == nil {
			time.Sleep(600 * time.Millisecond) // past the form deadline
		}
		got <- result{int(n), err, c.Request().Context().Err()}
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, "read")
	}
	tel := handlerstest.NewTelemetry(handlerstest.Options{Span: time.Hour})
	console := New(Options{Telemetry: tel, Diagnoser: &handlerstest.Diagnoser{}})
	console.POST("/webhook", read) // a form route; the real webhook also wants its token
	console.POST(route.IncidentTraceCreate.Pattern(), read)
	srv := httptest.NewServer(console)
	defer srv.Close()

	send := func(path string, body string, every time.Duration, extra ...string) string {
		t.Helper()
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		const csrf = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nCookie: %s=%s\r\nX-CSRF-Token: %s\r\n%sContent-Length: %d\r\n\r\n",
			path, handlers.CSRFCookie, csrf, csrf, strings.Join(extra, ""), len(body))
		for i := 0; i < len(body); i++ {
			if every == 0 {
				conn.Write([]byte(body))
				break
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				break // the server hung up
			}
			time.Sleep(every)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(conn).ReadString('\n')
		return strings.TrimSpace(line)
	}
	wait := func(status string) result {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("the handler never ran; the server answered %q", status)
			return result{}
		}
	}

	// Also with a compressed response, whose writer wraps the connection's.
	for _, extra := range []string{"", "Accept-Encoding: gzip\r\n"} {
		status := send("/webhook", strings.Repeat("x", 20), 100*time.Millisecond, extra)
		r := wait(status)
		if !errors.Is(r.err, ErrBodyTooSlow) || r.n >= 20 {
			t.Errorf("slow body on a form route (%q): read %d bytes, error %v; want it cut short with ErrBodyTooSlow", extra, r.n, r.err)
		}
		if status != "" && !strings.Contains(status, "408") {
			t.Errorf("slow body on a form route (%q) answered %q, want 408 or a closed connection", extra, status)
		}
	}

	status := send("/incidents/1/traces", strings.Repeat("x", 20), 100*time.Millisecond)
	if r := wait(status); r.err != nil || r.n != 20 || r.ctxErr != nil || !strings.Contains(status, "200") {
		t.Errorf("slow body on the upload route: %q, read %d bytes, error %v, context %v; want all of it", status, r.n, r.err, r.ctxErr)
	}

	status = send("/webhook", strings.Repeat("x", 4000), 0)
	if r := wait(status); r.err != nil || r.n != 4000 || r.ctxErr != nil || !strings.Contains(status, "200") {
		t.Errorf("prompt body: %q, read %d bytes, error %v, context %v", status, r.n, r.err, r.ctxErr)
	}
}
