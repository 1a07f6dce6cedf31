package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/handlers"
	"github.com/casebook/casebook/handlers/handlerstest"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/web"
)

// newTraceFixture is the archive fixture with a trace upload limit
// (0 means the default) and the console's body limit ("" means its
// default).
func newTraceFixture(t testing.TB, maxBytes int64, bodyLimit ...string) *archiveFixture {
	t.Helper()
	return newTraceFixtureOpts(t, func(d *handlers.IncidentDeps) { d.TraceMaxBytes = maxBytes }, func(o *web.Options) {
		if len(bodyLimit) > 0 {
			o.BodyLimit = bodyLimit[0]
		}
	})
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "traces", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// multipartBody builds a form with a trace file and optional fields.
func multipartBody(t testing.TB, filename string, data []byte, fields ...string) (io.Reader, map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := mw.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if data != nil {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, map[string]string{"Content-Type": mw.FormDataContentType()}
}

// chunked hides the body's length, so the server cannot refuse it from
// Content-Length and must count while streaming.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// chromeTrace writes a small PyTorch-profiler trace: steps profiler steps,
// each with a GEMM and an attention kernel on stream 7 and a kernel named
// odd on stream 9, idle gaps between them. Durations are microseconds.
func chromeTrace(steps int, gemm, attention, oddDur float64, odd string) []byte {
	var ev []string
	ts := 1000.0
	for s := 1; s <= steps; s++ {
		start := ts
		add := func(name string, stream int, dur float64) {
			n, _ := json.Marshal(name)
			ev = append(ev, fmt.Sprintf(`{"ph":"X","cat":"kernel","name":%s,"pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"device":0,"stream":%d}}`,
				n, stream, ts, dur, stream))
			ts += dur + 5
		}
		add("sm90_xmma_gemm_bf16bf16_bf16f32", 7, gemm)
		add("flash_fwd_splitkv_kernel", 7, attention)
		add(odd, 9, oddDur)
		ev = append(ev, fmt.Sprintf(`{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":0,"tid":1,"ts":%.3f,"dur":%.3f}`,
			s, start, ts-start))
		ts += 40
	}
	return []byte(`{"schemaVersion":1,"traceEvents":[` + strings.Join(ev, ",") + `]}`)
}

type traceReply struct {
	Trace    store.Trace `json:"trace"`
	Evidence []struct {
		Cause string `json:"cause"`
		Key   string `json:"key"`
	} `json:"evidence"`
}

func TestTraceUpload(t *testing.T) {
	f := newTraceFixture(t, 0)
	id := f.openViaAlert(t, "00000000000000t1", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)
	page := fmt.Sprintf("/incidents/%d/traces", id)
	jsonTrace := readFixture(t, "llama8b_tp2.pt.trace.json")
	gzTrace := readFixture(t, "llama8b_tp2.pt.trace.json.gz")
	nsys := readFixture(t, "llama8b_tp2.nsys.sqlite")

	raw := func(b []byte) (io.Reader, map[string]string) {
		return bytes.NewReader(b), map[string]string{"Content-Type": "application/octet-stream"}
	}
	cases := []struct {
		name     string
		path     string
		body     func() (io.Reader, map[string]string)
		status   int
		wantKind string
		wantRole store.TraceRole
		wantName string
		wantMsg  string
	}{
		{"JSON, raw body", api + "?name=llama8b_tp2.pt.trace.json", func() (io.Reader, map[string]string) { return raw(jsonTrace) },
			http.StatusCreated, "chrome", store.TraceIncident, "llama8b_tp2.pt.trace.json", ""},
		{"gzip, multipart baseline", api, func() (io.Reader, map[string]string) {
			return multipartBody(t, "healthy.pt.trace.json.gz", gzTrace, "role", "baseline")
		}, http.StatusCreated, "chrome+gzip", store.TraceBaseline, "healthy.pt.trace.json.gz", ""},
		{"nsys, page form", page, func() (io.Reader, map[string]string) {
			return multipartBody(t, `C:\captures\slow.nsys.sqlite`, nsys, "role", "incident")
		}, http.StatusSeeOther, "nsight", store.TraceIncident, "slow.nsys.sqlite", ""},
		{"nsys, raw body named by Content-Disposition", api, func() (io.Reader, map[string]string) {
			return bytes.NewReader(nsys), map[string]string{"Content-Disposition": `attachment; filename="node3.nsys.sqlite"`}
		}, http.StatusCreated, "nsight", store.TraceIncident, "node3.nsys.sqlite", ""},
		{"path and control characters stripped from the name", api + "?name=..%2F..%2Fetc%2Fstep%0A%1b7.json", func() (io.Reader, map[string]string) {
			return raw(jsonTrace)
		}, http.StatusCreated, "chrome", store.TraceIncident, "step7.json", ""},
		{"name field overrides the file name", api, func() (io.Reader, map[string]string) {
			return multipartBody(t, "trace.json", jsonTrace, "name", "decode step, node 3")
		}, http.StatusCreated, "chrome", store.TraceIncident, "decode step, node 3", ""},
		{"garbage", api, func() (io.Reader, map[string]string) { return raw([]byte("hello, this is not a trace")) },
			http.StatusBadRequest, "", "", "", "not a readable trace"},
		{"truncated JSON", api, func() (io.Reader, map[string]string) { return raw(jsonTrace[:len(jsonTrace)/2]) },
			http.StatusBadRequest, "", "", "", "not a readable trace"},
		{"no GPU activity", api, func() (io.Reader, map[string]string) {
			return raw([]byte(`{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":2}]}`))
		}, http.StatusBadRequest, "", "", "", "no GPU kernel"},
		{"empty body", api, func() (io.Reader, map[string]string) { return raw(nil) },
			http.StatusBadRequest, "", "", "", "empty"},
		{"form without a file", page, func() (io.Reader, map[string]string) { return multipartBody(t, "", nil, "role", "incident") },
			http.StatusBadRequest, "", "", "", "no trace file"},
		{"unknown role", api + "?role=healthy", func() (io.Reader, map[string]string) { return raw(jsonTrace) },
			http.StatusBadRequest, "", "", "", "healthy"},
		{"unknown incident", "/api/v1/incidents/987654/traces", func() (io.Reader, map[string]string) { return raw(jsonTrace) },
			http.StatusNotFound, "", "", "", ""},
	}
	stored := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, hdr := tc.body()
			r := f.do(t, http.MethodPost, tc.path, body, hdr)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %.400s", r.status, tc.status, r.body)
			}
			if tc.wantMsg != "" && !strings.Contains(r.body, tc.wantMsg) {
				t.Errorf("answer %.400q lacks %q", r.body, tc.wantMsg)
			}
			if r.status >= 400 {
				return
			}
			stored++
			ts, err := f.st.Traces(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != stored {
				t.Fatalf("%d traces stored, want %d", len(ts), stored)
			}
			got := ts[len(ts)-1]
			if got.Kind != tc.wantKind || got.Role != tc.wantRole || got.Name != tc.wantName || got.Size <= 0 {
				t.Errorf("stored %s %s %q (%d bytes), want %s %s %q", got.Kind, got.Role, got.Name, got.Size, tc.wantKind, tc.wantRole, tc.wantName)
			}
			var sum struct {
				Activities int `json:"activities"`
			}
			if err := json.Unmarshal(got.Summary, &sum); err != nil || sum.Activities != 444 {
				t.Errorf("stored summary: %d activities (%v), want the fixture's 444", sum.Activities, err)
			}
			if r.status == http.StatusCreated {
				var rep traceReply
				if err := json.Unmarshal([]byte(r.body), &rep); err != nil || rep.Trace.ID != got.ID {
					t.Errorf("reply %.300s (%v) does not name trace %d", r.body, err, got.ID)
				}
			}
		})
	}

	r := f.do(t, http.MethodGet, api, nil, nil)
	var list struct {
		Traces []store.Trace `json:"traces"`
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || r.status != 200 || len(list.Traces) != stored {
		t.Errorf("GET %s: %d, %d traces (%v), want %d", api, r.status, len(list.Traces), err, stored)
	}
}

func TestTraceUploadLimit(t *testing.T) {
	const limit = 64 << 10
	f := newTraceFixture(t, limit)
	id := f.openViaAlert(t, "00000000000000t2", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)
	jsonTrace := readFixture(t, "llama8b_tp2.pt.trace.json")  // 360 KiB
	gzTrace := readFixture(t, "llama8b_tp2.pt.trace.json.gz") // 20 KiB, 360 KiB decompressed
	nsys := readFixture(t, "llama8b_tp2.nsys.sqlite")         // 60 KiB

	cases := []struct {
		name   string
		path   string
		body   func() (io.Reader, map[string]string)
		status int
		msg    string
	}{
		{"raw, declared length", api, func() (io.Reader, map[string]string) { return bytes.NewReader(jsonTrace), nil },
			http.StatusRequestEntityTooLarge, "64 KiB limit"},
		{"raw, streamed", api, func() (io.Reader, map[string]string) { return chunked{bytes.NewReader(jsonTrace)}, nil },
			http.StatusRequestEntityTooLarge, "64 KiB limit"},
		{"multipart form", fmt.Sprintf("/incidents/%d/traces", id), func() (io.Reader, map[string]string) {
			return multipartBody(t, "big.json", jsonTrace)
		}, http.StatusRequestEntityTooLarge, "64 KiB limit"},
		{"gzip expanding past the limit", api, func() (io.Reader, map[string]string) { return bytes.NewReader(gzTrace), nil },
			http.StatusRequestEntityTooLarge, "256 KiB decompressed"},
		{"under the limit", api, func() (io.Reader, map[string]string) { return bytes.NewReader(nsys), nil },
			http.StatusCreated, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, hdr := tc.body()
			r := f.do(t, http.MethodPost, tc.path, body, hdr)
			if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
				t.Errorf("status %d, want %d with %q: %.400s", r.status, tc.status, tc.msg, r.body)
			}
		})
	}
	if ts, _ := f.st.Traces(context.Background(), id); len(ts) != 1 {
		t.Errorf("%d traces stored, want only the one under the limit", len(ts))
	}
}

// TestTraceUploadConsoleBodyLimit checks that the console-wide body limit,
// far below a trace's size, does not refuse trace uploads (they enforce
// their own limit) but still guards every other route.
func TestTraceUploadConsoleBodyLimit(t *testing.T) {
	f := newTraceFixture(t, 0, "64K")
	id := f.openViaAlert(t, "00000000000000t5", "TPOT up")
	jsonTrace := readFixture(t, "llama8b_tp2.pt.trace.json")
	if len(jsonTrace) <= 64<<10 {
		t.Fatalf("fixture of %d bytes does not exceed the 64K console limit", len(jsonTrace))
	}
	for _, path := range []string{fmt.Sprintf("/api/v1/incidents/%d/traces", id), fmt.Sprintf("/incidents/%d/traces", id)} {
		var body io.Reader = chunked{bytes.NewReader(jsonTrace)}
		var hdr map[string]string
		if !strings.HasPrefix(path, "/api/") {
			b, h := multipartBody(t, "big.json", jsonTrace)
			body, hdr = chunked{b}, h
		}
		r := f.do(t, http.MethodPost, path, body, hdr)
		if r.status != http.StatusCreated && r.status != http.StatusSeeOther {
			t.Errorf("%s: %d %.300s, want the trace accepted despite the console limit", path, r.status, r.body)
		}
	}
	big := `{"by":"x","body":"` + strings.Repeat("a", 70<<10) + `"}`
	r := f.do(t, http.MethodPost, fmt.Sprintf("/api/v1/incidents/%d/notes", id), strings.NewReader(big), map[string]string{"Content-Type": "application/json"})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("note over the console limit: %d, want 413", r.status)
	}
}

func TestEnforcesOwnBodyLimit(t *testing.T) {
	e := echo.New()
	cases := []struct {
		method, path string
		want         bool
	}{
		{http.MethodPost, "/incidents/:id/traces", true},
		{http.MethodPost, "/api/v1/incidents/:id/traces", true},
		{http.MethodGet, "/api/v1/incidents/:id/traces", false},
		{http.MethodPost, "/incidents/:id/notes", false},
		{http.MethodPost, "/api/v1/alerts/alertmanager", false},
	}
	for _, tc := range cases {
		c := e.NewContext(httptest.NewRequest(tc.method, "/", nil), httptest.NewRecorder())
		c.SetPath(tc.path)
		if got := handlers.EnforcesOwnBodyLimit(c); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// BenchmarkTraceUploadHTTP uploads the 360 KiB JSON fixture through the
// console (spool, parse, summarise, store) and reports the throughput.
func BenchmarkTraceUploadHTTP(b *testing.B) {
	f := newTraceFixture(b, 0)
	id := f.openViaAlert(b, "00000000000000b1", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)
	data := readFixture(b, "llama8b_tp2.pt.trace.json")
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		if i > 0 && i%store.MaxTracesPerIncident == 0 {
			id = f.openViaAlert(b, fmt.Sprintf("%016x", 0xb100+i), "TPOT up")
			api = fmt.Sprintf("/api/v1/incidents/%d/traces", id)
		}
		if r := f.do(b, http.MethodPost, api, bytes.NewReader(data), nil); r.status != http.StatusCreated {
			b.Fatalf("upload: %d %.200s", r.status, r.body)
		}
	}
}

// BenchmarkIncidentPageWithTraces renders an incident page with an
// incident and a baseline trace attached.
func BenchmarkIncidentPageWithTraces(b *testing.B) {
	f := newTraceFixture(b, 0)
	id := f.openViaAlert(b, "00000000000000b2", "TPOT up")
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", id)
	for _, role := range []string{"baseline", "incident"} {
		data := readFixture(b, "llama8b_tp2.pt.trace.json.gz")
		if r := f.do(b, http.MethodPost, api+"?role="+role, bytes.NewReader(data), nil); r.status != http.StatusCreated {
			b.Fatalf("upload: %d %.200s", r.status, r.body)
		}
	}
	page := fmt.Sprintf("/incidents/%d", id)
	for b.Loop() {
		if r := f.do(b, http.MethodGet, page, nil, nil); r.status != 200 || !strings.Contains(r.body, `data-testid="trace-compare"`) {
			b.Fatalf("page: %d", r.status)
		}
	}
}

func TestTracePanel(t *testing.T) {
	f := newTraceFixture(t, 0)
	id := f.openViaAlert(t, "00000000000000t3", "TPOT up")
	page := fmt.Sprintf("/incidents/%d", id)
	api := page + "/traces"
	hostile := `<script>alert("k")</script><img src=x onerror=alert(1)>_rms_norm_kernel`

	get := func() string {
		t.Helper()
		r := f.do(t, http.MethodGet, page, nil, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: %d %.300s", page, r.status, r.body)
		}
		return r.body
	}
	post := func(name, role string, data []byte) {
		t.Helper()
		body, hdr := multipartBody(t, name, data, "role", role)
		if r := f.do(t, http.MethodPost, api, body, hdr); r.status != http.StatusSeeOther {
			t.Fatalf("upload %s: %d %.300s", name, r.status, r.body)
		}
	}

	body := get()
	for _, w := range []string{`data-testid="traces"`, `data-testid="trace-none"`, `data-testid="trace-upload-form"`, `enctype="multipart/form-data"`, "512 MiB"} {
		if !strings.Contains(body, w) {
			t.Errorf("page without traces lacks %q", w)
		}
	}

	post("healthy.pt.trace.json", "baseline", chromeTrace(4, 300, 100, 40, hostile))
	if body := get(); !strings.Contains(body, `data-testid="trace-no-incident"`) || strings.Contains(body, `data-testid="trace-summary"`) {
		t.Error("with only a baseline the page should ask for an incident trace")
	}
	// The incident trace: attention doubled per step, the rest unchanged.
	post("slow.pt.trace.json", "incident", chromeTrace(4, 300, 200, 40, hostile))

	body = get()
	for _, w := range []string{
		`data-testid="trace-summary"`, `data-testid="trace-categories"`, `data-category="attention"`, `data-testid="trace-top"`,
		`data-testid="trace-idle"`, `data-testid="trace-timeline"`, `<svg xmlns="http://www.w3.org/2000/svg" class="trace-timeline"`,
		`data-testid="trace-compare"`, `data-testid="trace-headline"`, "Attention + KV write time doubled per step", "per profiler step",
		`data-testid="kernel-evidence"`, `data-cause="` + metrics.CauseMemoryBandwidthBound + `"`, `data-key="trace.attention_ratio"`,
		`data-testid="trace-list"`, "healthy.pt.trace.json", "slow.pt.trace.json",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("incident page lacks %q", w)
		}
	}
	// Kernel evidence sits under the diagnosis.
	if d, k := strings.Index(body, `data-testid="diagnosis"`), strings.Index(body, `data-testid="kernel-evidence"`); d < 0 || k < d {
		t.Errorf("kernel evidence at %d, diagnosis at %d: want it under the diagnosis", k, d)
	}
	// The hostile kernel name appears in the top-kernels table and in the
	// timeline's lane title, escaped in both.
	if strings.Contains(body, `<script>alert("k")`) || strings.Contains(body, `<img src=x`) {
		t.Error("hostile kernel name rendered unescaped")
	}
	if n := strings.Count(body, `&lt;script&gt;alert(`); n < 2 {
		t.Errorf("escaped kernel name appears %d times, want the table and the timeline", n)
	}

	// The shared read-only view shows the traces without any form.
	ts, err := f.st.Traces(context.Background(), id)
	if err != nil || len(ts) != 2 {
		t.Fatalf("traces: %v, %v", ts, err)
	}
	del := fmt.Sprintf("%s/%d/delete", api, ts[1].ID)
	if !strings.Contains(body, `action="`+del+`"`) {
		t.Errorf("page lacks the remove form %s", del)
	}
	if r := f.do(t, http.MethodPost, fmt.Sprintf("%s/%d/delete", api, ts[1].ID+100), nil, nil); r.status != http.StatusNotFound {
		t.Errorf("removing an unknown trace: %d, want 404", r.status)
	}
	if r := f.do(t, http.MethodPost, del, nil, nil); r.status != http.StatusSeeOther {
		t.Fatalf("remove: %d %.300s", r.status, r.body)
	}
	body = get()
	if strings.Contains(body, `data-testid="trace-compare"`) || !strings.Contains(body, `data-testid="trace-no-incident"`) {
		t.Error("after removing the incident trace the page still compares")
	}
}

func TestTracePanelSharedIsReadOnly(t *testing.T) {
	f := newTraceFixture(t, 0)
	id := f.openViaAlert(t, "00000000000000t4", "TPOT up")
	body, hdr := multipartBody(t, "slow.json", chromeTrace(2, 300, 200, 40, "rms_norm_kernel"))
	if r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/traces", id), body, hdr); r.status != http.StatusSeeOther {
		t.Fatalf("upload: %d %.300s", r.status, r.body)
	}
	fb, fh := form("ttl", "168h", "by", "ana")
	r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/shares", id), fb, fh)
	m := shareURL.FindStringSubmatch(r.body)
	if r.status != http.StatusCreated || m == nil {
		t.Fatalf("share: %d %.300s", r.status, r.body)
	}
	shared := f.do(t, http.MethodGet, "/share/"+m[1], nil, nil)
	if shared.status != 200 || !strings.Contains(shared.body, `data-testid="trace-summary"`) {
		t.Fatalf("shared page: %d, trace summary missing", shared.status)
	}
	if strings.Contains(shared.body, `<form`) {
		t.Error("shared page offers trace forms")
	}
}

// FuzzTraceUpload sends arbitrary bodies, raw and as multipart forms with a
// fixed boundary, to the upload API: every answer is a stored trace or a
// 4xx that says what is wrong, never a server error.
func FuzzTraceUpload(f *testing.F) {
	// A lean console (an hour of telemetry, the incident opened in the
	// store directly): each fuzzing worker builds its own.
	st, err := store.Open(context.Background(), filepath.Join(f.TempDir(), "casebook.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	tel := handlerstest.NewTelemetry(handlerstest.Options{Incident: incidentScope, Span: time.Hour})
	diag := &handlerstest.Diagnoser{Result: handlerstest.EvictionDiagnosis()}
	pages, _ := archiveHandlers(handlers.IncidentDeps{TraceMaxBytes: 256 << 10}, st, tel, diag)
	srv := web.New(web.Options{Telemetry: tel, Diagnoser: diag, Incidents: pages})
	inc, _, err := st.OpenIncident(context.Background(), store.NewIncident{
		Title: "TPOT up", Scope: incidentScope, Trigger: store.TriggerManual, OpenedAt: tel.End,
		WindowStart: tel.End.Add(-time.Hour), WindowEnd: tel.End, Snapshot: metrics.Snapshot{At: tel.End, Scope: incidentScope},
	}, store.DiagnosisRecord{EngineVersion: "test", CreatedAt: tel.End, RootCause: metrics.CauseUnknown, Body: []byte(`{}`)})
	if err != nil {
		f.Fatal(err)
	}
	api := fmt.Sprintf("/api/v1/incidents/%d/traces", inc.ID)
	gz := readFixture(f, "llama8b_tp2.pt.trace.json.gz")
	f.Add(gz, false)
	f.Add(gz[:len(gz)/3], false)
	f.Add(chromeTrace(2, 10, 20, 5, "k"), false)
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"x","ts":1e400,"dur":1}]}`), false)
	f.Add([]byte("SQLite format 3\x00garbage"), false)
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"role\"\r\n\r\nbaseline\r\n--B\r\n"+
		"Content-Disposition: form-data; name=\"file\"; filename=\"a.json\"\r\n\r\n{\"traceEvents\":[]}\r\n--B--\r\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, form bool) {
		hdr := map[string]string{"Content-Type": "application/octet-stream"}
		if form {
			hdr["Content-Type"] = "multipart/form-data; boundary=B"
		}
		// In process, without a connection per input.
		req := httptest.NewRequest(http.MethodPost, api, bytes.NewReader(body))
		req.AddCookie(&http.Cookie{Name: handlers.CSRFCookie, Value: testCSRF})
		req.Header.Set("X-CSRF-Token", testCSRF)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusCreated:
		case rec.Code >= 400 && rec.Code < 500:
			if !strings.Contains(rec.Body.String(), `"error"`) {
				t.Errorf("%d without an error message: %.200s", rec.Code, rec.Body.String())
			}
		default:
			t.Errorf("status %d: %.300s", rec.Code, rec.Body.String())
		}
	})
}

func TestTraceCompareHeadline(t *testing.T) {
	f := newTraceFixture(t, 0)
	cases := []struct {
		name      string
		attention float64 // µs per step in the incident trace; the baseline has 100
		want      string  // "" means no headline
	}{
		{"doubled", 200, "Attention + KV write time doubled per step against the baseline (100 µs → 200 µs)."},
		{"tripled", 300, "Attention + KV write time tripled per step"},
		{"grew", 160, "Attention + KV write time grew 1.6× per step"},
		{"halved", 50, "Attention + KV write time halved per step"},
		{"fell", 70, "Attention + KV write time fell to 70% per step"},
		{"unchanged", 104, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := f.openViaAlert(t, fmt.Sprintf("%016x", 0xc0+i), "TPOT up")
			for _, up := range []struct {
				role string
				att  float64
			}{{"baseline", 100}, {"incident", tc.attention}} {
				body, hdr := multipartBody(t, up.role+".json", chromeTrace(3, 300, up.att, 40, "rms_norm_kernel"), "role", up.role)
				if r := f.do(t, http.MethodPost, fmt.Sprintf("/incidents/%d/traces", id), body, hdr); r.status != http.StatusSeeOther {
					t.Fatalf("upload %s: %d %.300s", up.role, r.status, r.body)
				}
			}
			r := f.do(t, http.MethodGet, fmt.Sprintf("/incidents/%d", id), nil, nil)
			if !strings.Contains(r.body, `data-testid="trace-compare"`) {
				t.Fatalf("no comparison on the page (%d)", r.status)
			}
			has := strings.Contains(r.body, `data-testid="trace-headline"`)
			switch {
			case tc.want == "" && has:
				t.Error("headline shown for an unchanged trace")
			case tc.want != "" && !strings.Contains(r.body, tc.want):
				t.Errorf("page lacks headline %q", tc.want)
			}
		})
	}
}

// TestTraceFeedsDiagnosis checks that attaching an incident trace appends a
// diagnosis that carries the trace's kernel evidence, and that a baseline
// trace alone does not re-diagnose.
func TestTraceFeedsDiagnosis(t *testing.T) {
	f := newTraceFixture(t, 0)
	id := f.openViaAlert(t, "00000000000000t9", "TPOT up")
	ctx := context.Background()
	before, err := f.st.Diagnoses(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	gz := readFixture(t, "llama8b_tp2.pt.trace.json.gz")
	b, h := multipartBody(t, "healthy.pt.trace.json.gz", gz, "role", "baseline")
	if r := f.do(t, http.MethodPost, fmt.Sprintf("/api/v1/incidents/%d/traces", id), b, h); r.status != http.StatusCreated {
		t.Fatalf("baseline upload: %d %.300s", r.status, r.body)
	}
	if ds, _ := f.st.Diagnoses(ctx, id); len(ds) != len(before) {
		t.Fatalf("a baseline trace re-diagnosed the incident: %d diagnoses, had %d", len(ds), len(before))
	}
	// A step in which the GPU sits idle most of the time between kernels:
	// the signature of host overhead.
	var events []string
	for i := 0; i < 20; i++ {
		events = append(events, fmt.Sprintf(`{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n","pid":0,"tid":7,"ts":%d,"dur":100,"args":{"stream":7}}`, i*1000))
	}
	starved := `{"schemaVersion":1,"traceEvents":[` + strings.Join(events, ",") + `]}`
	r := f.do(t, http.MethodPost, fmt.Sprintf("/api/v1/incidents/%d/traces?name=slow.json", id),
		strings.NewReader(starved), map[string]string{"Content-Type": "application/octet-stream"})
	if r.status != http.StatusCreated {
		t.Fatalf("incident upload: %d %.300s", r.status, r.body)
	}
	var reply handlers.TraceReply
	if err := json.Unmarshal([]byte(r.body), &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Evidence) == 0 {
		t.Fatal("the fixture trace gave no kernel evidence to fold in")
	}
	after, err := f.st.Diagnoses(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 {
		t.Fatalf("%d diagnoses after the trace, want %d", len(after), len(before)+1)
	}
	latest := string(after[0].Body) // newest first
	for _, e := range reply.Evidence {
		if !strings.Contains(latest, `"kernel:`+e.Key+`"`) {
			t.Errorf("the new diagnosis lacks kernel evidence %q: %.500s", e.Key, latest)
		}
	}
}
