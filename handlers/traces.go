package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/internal/route"
	"github.com/casebook/casebook/store"
	"github.com/casebook/casebook/traces"
	"github.com/casebook/casebook/views"
)

// TraceArchive is what kernel-trace attachments need from the archive.
// *store.Store implements it; an Archive that does not turns the trace
// routes into 404s and leaves the section off the incident page.
type TraceArchive interface {
	AddTrace(ctx context.Context, t store.NewTrace) (store.Trace, error)
	Traces(ctx context.Context, incidentID int64) ([]store.Trace, error)
	DeleteTrace(ctx context.Context, incidentID, id int64) error
}

// DefaultTraceMaxBytes is the trace upload limit when
// IncidentDeps.TraceMaxBytes is zero.
const DefaultTraceMaxBytes = 512 << 20

// DefaultTraceParseTimeout bounds the parse of one trace upload when
// IncidentDeps.TraceParseTimeout is zero. A 1 GiB trace parses in a few
// seconds; this leaves room for a busy machine.
const DefaultTraceParseTimeout = 2 * time.Minute

// DefaultTraceUploads is how many trace uploads are received and parsed at
// once when IncidentDeps.TraceUploads is zero. Each may hold a core and up
// to DefaultTraceMaxBytes (plus an inflated Nsight export) on disk.
const DefaultTraceUploads = 2

// Spool file name patterns: an upload, and an Nsight export inflated from
// a gzip upload (named by the traces package).
const (
	traceSpoolPattern = "casebook-trace-*"
	nsysSpoolPattern  = "casebook-nsys-*"
)

// traceExpansion is how many times its upload size a compressed trace may
// grow to when decompressed (kineto JSON compresses about tenfold).
const traceExpansion = 4

// EnforcesOwnBodyLimit reports whether the matched route bounds its request
// body itself: the trace uploads, which stream to disk under
// IncidentDeps.TraceMaxBytes. A console-wide body limit (a few MB) should
// skip these routes, for example as the Skipper of echo's BodyLimit
// middleware, or it refuses every real trace first.
func EnforcesOwnBodyLimit(c echo.Context) bool {
	if c.Request().Method != http.MethodPost {
		return false
	}
	p := c.Path()
	return p == route.IncidentTraceCreate.Pattern() || p == route.APIIncidentTraceCreate.Pattern()
}

func (d *IncidentDeps) traceArchive() (TraceArchive, error) {
	ta, ok := d.Archive.(TraceArchive)
	if !ok {
		return nil, HTTPError(http.StatusNotFound, "error.no_traces")
	}
	return ta, nil
}

func (d *IncidentDeps) traceMaxBytes() int64 {
	if d.TraceMaxBytes > 0 {
		return d.TraceMaxBytes
	}
	return DefaultTraceMaxBytes
}

// UploadTrace attaches a trace from the incident page's multipart form and
// redirects back to the page's trace section.
func (h *Traces) UploadTrace(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	tr, _, err := h.receiveTrace(c, id)
	if err != nil {
		return err
	}
	if tr.Role == store.TraceIncident {
		h.rediagnoseWithTrace(c.Request().Context(), id)
	}
	return redirect(c, route.URL(route.IncidentShow, id)+"#traces")
}

// TraceReply is the JSON answer to a trace upload.
type TraceReply struct {
	Trace    store.Trace       `json:"trace"` // its summary is the traces.Summary JSON
	Evidence []traces.Evidence `json:"evidence"`
}

// APIUploadTrace attaches a trace sent as the raw request body (name and
// role in the query: ?name=step.pt.trace.json.gz&role=baseline) or as a
// multipart form (fields "file", "role" and optionally "name"), and
// answers 201 with the stored trace, its summary and its kernel evidence:
// for an incident trace against the latest baseline trace, for a baseline
// trace on its own.
func (h *Traces) APIUploadTrace(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	tr, sum, err := h.receiveTrace(c, id)
	if err != nil {
		return err
	}
	var base *traces.Summary
	if tr.Role == store.TraceIncident {
		base = h.d.latestBaseline(c.Request().Context(), id)
	}
	ev := traces.Evidences(sum, base)
	if ev == nil {
		ev = []traces.Evidence{}
	}
	if tr.Role == store.TraceIncident {
		h.rediagnoseWithTrace(c.Request().Context(), id)
	}
	return c.JSON(http.StatusCreated, TraceReply{Trace: tr, Evidence: ev})
}

// APITraces lists an incident's traces with their summaries.
func (h *Traces) APITraces(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	ta, err := h.d.traceArchive()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := h.d.Archive.Page(ctx, id); err != nil {
		return archiveError(err, "id")
	}
	ts, err := ta.Traces(ctx, id)
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []store.Trace{}
	}
	return c.JSON(http.StatusOK, map[string]any{"traces": ts})
}

// DeleteTrace removes an attached trace and redirects to the page.
func (h *Traces) DeleteTrace(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	tid, err := strconv.ParseInt(c.Param("trace"), 10, 64)
	if err != nil || tid <= 0 {
		return badParam("trace", "%q is not a trace number", truncate(c.Param("trace"), 32))
	}
	ta, err := h.d.traceArchive()
	if err != nil {
		return err
	}
	if err := ta.DeleteTrace(c.Request().Context(), id, tid); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return HTTPError(http.StatusNotFound, "error.no_trace").SetInternal(err)
		}
		return err
	}
	return redirect(c, route.URL(route.IncidentShow, id)+"#traces")
}

// spooled is an upload written to a temporary file.
type spooled struct {
	path string
	name string
	role store.TraceRole
	size int64
	gzip bool
}

// receiveTrace spools the upload to a temporary file within the size
// limit, parses and summarises it, and stores the summary.
func (h *Traces) receiveTrace(c echo.Context, id int64) (store.Trace, traces.Summary, error) {
	ta, err := h.d.traceArchive()
	if err != nil {
		return store.Trace{}, traces.Summary{}, err
	}
	select {
	case h.uploads <- struct{}{}:
		defer func() { <-h.uploads }()
	default:
		c.Response().Header().Set("Retry-After", "10")
		return store.Trace{}, traces.Summary{}, echo.NewHTTPError(http.StatusServiceUnavailable,
			fmt.Sprintf("%d trace uploads are already being received or parsed, the most at once; try again in a few seconds.", cap(h.uploads)))
	}
	up, err := h.spoolTrace(c)
	if up.path != "" {
		defer os.Remove(up.path)
	}
	if err != nil {
		return store.Trace{}, traces.Summary{}, err
	}
	ctx := c.Request().Context()
	limit := h.d.traceMaxBytes()
	// The request's context ends when the client goes away; the deadline
	// bounds what one upload can cost however it is built.
	pctx, cancel := context.WithTimeout(ctx, h.d.TraceParseTimeout)
	tr, err := traces.ParseFile(pctx, up.path, traces.Options{MaxBytes: traceExpansion * limit, TempDir: h.d.TraceSpoolDir})
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return store.Trace{}, traces.Summary{}, &ParamError{Param: "file", Status: http.StatusRequestEntityTooLarge,
				Reason: fmt.Sprintf("parsing the trace took longer than the %s limit", h.d.TraceParseTimeout)}
		}
		// The temporary path means nothing to the engineer; name the upload.
		msg := strings.ReplaceAll(err.Error(), up.path, up.name)
		switch {
		case errors.Is(err, traces.ErrTooLarge):
			return store.Trace{}, traces.Summary{}, &ParamError{Param: "file", Status: http.StatusRequestEntityTooLarge,
				Reason: fmt.Sprintf("the trace is larger than the limit (%s uploaded, %s decompressed): %s",
					views.FormatBytes(limit), views.FormatBytes(traceExpansion*limit), msg)}
		case errors.Is(err, traces.ErrFormat), errors.Is(err, traces.ErrLimit), errors.Is(err, traces.ErrNoGPUActivity):
			return store.Trace{}, traces.Summary{}, &ParamError{Param: "file", Reason: msg}
		}
		return store.Trace{}, traces.Summary{}, fmt.Errorf("traces: parse upload %q for incident %d: %w", up.name, id, err)
	}
	sum := traces.Summarize(tr)
	body, err := sum.Encode()
	if err != nil {
		return store.Trace{}, traces.Summary{}, fmt.Errorf("%q: %w", up.name, err)
	}
	kind := string(sum.Format)
	if up.gzip {
		kind += "+gzip"
	}
	st, err := ta.AddTrace(ctx, store.NewTrace{
		IncidentID: id, Role: up.role, Name: up.name, Kind: kind, Size: up.size,
		UploadedAt: h.d.Now().UTC(), Summary: body,
	})
	if err != nil {
		return store.Trace{}, traces.Summary{}, archiveError(err, "id")
	}
	h.d.Logger.InfoContext(ctx, "traces: attached", "incident", id, "trace", st.ID, "name", up.name,
		"kind", kind, "bytes", up.size, "activities", sum.Activities)
	return st, sum, nil
}

// multipartSlack is what a multipart envelope may add to the file size.
const multipartSlack = 1 << 20

// spoolTrace streams the request's trace to a temporary file, refusing
// more than the limit. The caller removes the file at the returned path,
// also on error.
func (h *Traces) spoolTrace(c echo.Context) (spooled, error) {
	req := c.Request()
	limit := h.d.traceMaxBytes()
	tooLarge := &ParamError{Param: "file", Status: http.StatusRequestEntityTooLarge,
		Reason: "the trace upload is larger than the " + views.FormatBytes(limit) + " limit"}
	mt, _, _ := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	multipart := mt == "multipart/form-data"
	switch {
	case req.ContentLength > limit+multipartSlack, !multipart && req.ContentLength > limit:
		return spooled{}, tooLarge
	}
	up := spooled{role: store.TraceIncident}
	if h.d.TraceSpoolDir != "" {
		if err := os.MkdirAll(h.d.TraceSpoolDir, 0o700); err != nil {
			return up, fmt.Errorf("traces: spool upload: %w", err)
		}
	}
	f, err := os.CreateTemp(h.d.TraceSpoolDir, traceSpoolPattern)
	if err != nil {
		return up, fmt.Errorf("traces: spool upload: %w", err)
	}
	up.path = f.Name()
	defer f.Close()

	copyFile := func(r io.Reader) error {
		n, err := io.Copy(f, io.LimitReader(r, limit+1))
		up.size = n
		if err != nil {
			return uploadReadError(err, tooLarge)
		}
		if n > limit {
			return tooLarge
		}
		if n == 0 {
			return badParam("file", "the trace file is empty")
		}
		return nil
	}
	role := ""
	if multipart {
		mr, err := req.MultipartReader()
		if err != nil {
			return up, badParam("file", "the upload is not a readable multipart form: %v", err)
		}
		files, named := 0, ""
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return up, uploadReadError(err, badParam("file", "the multipart form is malformed: %v", err))
			}
			switch part.FormName() {
			case "file", "trace":
				if files++; files > 1 {
					return up, badParam("file", "attach one trace per upload")
				}
				up.name = part.FileName()
				if err := copyFile(part); err != nil {
					return up, err
				}
			case "role":
				b, err := io.ReadAll(io.LimitReader(part, 64))
				if err != nil {
					return up, uploadReadError(err, badParam("role", "could not read the role: %v", err))
				}
				role = strings.TrimSpace(string(b))
			case "name":
				b, err := io.ReadAll(io.LimitReader(part, store.MaxNameBytes))
				if err != nil {
					return up, uploadReadError(err, badParam("name", "could not read the name: %v", err))
				}
				named = strings.TrimSpace(string(b))
			default:
				if _, err := io.Copy(io.Discard, io.LimitReader(part, 64<<10)); err != nil {
					return up, uploadReadError(err, badParam("file", "the multipart form is malformed: %v", err))
				}
			}
		}
		if files == 0 {
			return up, badParam("file", "the form has no trace file (field \"file\")")
		}
		if named != "" {
			up.name = named
		}
	} else {
		up.name = c.QueryParam("name")
		if up.name == "" {
			if _, params, err := mime.ParseMediaType(req.Header.Get("Content-Disposition")); err == nil {
				up.name = params["filename"]
			}
		}
		role = c.QueryParam("role")
		if err := copyFile(req.Body); err != nil {
			return up, err
		}
	}
	switch store.TraceRole(role) {
	case "", store.TraceIncident:
		up.role = store.TraceIncident
	case store.TraceBaseline:
		up.role = store.TraceBaseline
	default:
		return up, badParam("role", "%q is not \"incident\" or \"baseline\"", truncate(role, 32))
	}
	up.name = cleanTraceName(up.name)
	var head [2]byte
	if _, err := f.ReadAt(head[:], 0); err == nil {
		up.gzip = head[0] == 0x1f && head[1] == 0x8b
	}
	if err := f.Close(); err != nil {
		return up, fmt.Errorf("traces: spool upload: %w", err)
	}
	return up, nil
}

// cleanTraceSpool creates the spool folder and removes the spool files a
// previous run left in it (a process killed while parsing cannot remove
// its own). Failures are logged: uploads report their own errors.
func cleanTraceSpool(dir string, log *slog.Logger) {
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		log.Warn("traces: spool folder", "dir", dir, "err", err)
		return
	}
	for _, pat := range []string{traceSpoolPattern, nsysSpoolPattern} {
		left, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range left {
			if err := os.Remove(p); err != nil {
				log.Warn("traces: remove a stale spool file", "path", p, "err", err)
			} else {
				log.Info("traces: removed a spool file a previous run left", "path", p)
			}
		}
	}
}

// uploadReadError keeps the console's own body-limit answer (a 413) and
// reports every other read failure as fallback.
func uploadReadError(err error, fallback error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge {
		return &ParamError{Param: "file", Status: http.StatusRequestEntityTooLarge,
			Reason: "the trace upload is larger than the console's request body limit"}
	}
	return fallback
}

// cleanTraceName keeps the base name of an uploaded file's name, as valid
// UTF-8 without control characters, at most 200 bytes; "trace" when
// nothing is left.
func cleanTraceName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/") // a Windows client path
	name = path.Base(strings.ToValidUTF8(name, "�"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(truncate(name, 200))
	if name == "" || name == "." || name == "/" {
		return "trace"
	}
	return name
}

// kernelEvidence is the latest incident trace's evidence, against the
// latest baseline trace, in the engine's terms; nil without a trace.
func (d *IncidentDeps) kernelEvidence(ctx context.Context, id int64) []diagnose.KernelEvidence {
	ts := d.listTraces(ctx, id)
	cur := latestSummary(ts, store.TraceIncident)
	if cur == nil {
		return nil
	}
	var out []diagnose.KernelEvidence
	for _, e := range traces.Evidences(*cur, latestSummary(ts, store.TraceBaseline)) {
		out = append(out, diagnose.KernelEvidence{Cause: e.Cause, Key: e.Key, Value: e.Value, Baseline: e.Baseline, Text: e.Text})
	}
	return out
}

// rediagnoseWithTrace appends a diagnosis that folds in a newly attached
// incident trace, so kernel evidence reaches the diagnosis, not just the page.
func (h *Traces) rediagnoseWithTrace(ctx context.Context, id int64) {
	if err := h.d.rediagnose(ctx, id); err != nil {
		h.d.Logger.WarnContext(ctx, "traces: re-diagnose", "incident", id, "err", err)
	}
}

// latestBaseline returns the summary of the incident's latest baseline
// trace, or nil.
func (d *IncidentDeps) latestBaseline(ctx context.Context, id int64) *traces.Summary {
	return latestSummary(d.listTraces(ctx, id), store.TraceBaseline)
}

// listTraces returns the incident's traces, or nil when the archive keeps
// none or cannot list them (logged).
func (d *IncidentDeps) listTraces(ctx context.Context, id int64) []store.Trace {
	ta, err := d.traceArchive()
	if err != nil {
		return nil
	}
	ts, err := ta.Traces(ctx, id)
	if err != nil {
		d.Logger.WarnContext(ctx, "traces: list", "incident", id, "err", err)
		return nil
	}
	return ts
}

// latestSummary returns the summary of the newest readable trace with the
// given role, or nil.
func latestSummary(ts []store.Trace, role store.TraceRole) *traces.Summary {
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Role != role {
			continue
		}
		if s, err := traces.DecodeSummary(ts[i].Summary); err == nil {
			return &s
		}
	}
	return nil
}

// tracesView builds the incident page's kernel-trace section from the
// stored summaries: the latest incident trace, compared with the latest
// baseline trace. Failures are logged and shown in the section; they never
// break the incident page.
func (d *IncidentDeps) tracesView(ctx context.Context, id int64, readOnly bool) views.TracesView {
	ta, err := d.traceArchive()
	if err != nil {
		return views.TracesView{}
	}
	v := views.TracesView{Enabled: true, ReadOnly: readOnly, Action: route.URL(route.IncidentTraceCreate, id), MaxUpload: views.FormatBytes(d.traceMaxBytes())}
	ts, err := ta.Traces(ctx, id)
	if err != nil {
		d.Logger.WarnContext(ctx, "traces: list", "incident", id, "err", err)
		v.Problems = append(v.Problems, "The attached traces could not be read.")
		return v
	}
	var cur, bl *traces.Summary
	curIdx, blIdx := -1, -1
	for i := len(ts) - 1; i >= 0 && (cur == nil || bl == nil); i-- {
		t := ts[i]
		if (t.Role == store.TraceIncident && cur != nil) || (t.Role == store.TraceBaseline && bl != nil) {
			continue
		}
		s, err := traces.DecodeSummary(t.Summary)
		if err != nil {
			d.Logger.WarnContext(ctx, "traces: decode summary", "incident", id, "trace", t.ID, "err", err)
			v.Problems = append(v.Problems, fmt.Sprintf("The summary of %s could not be read.", t.Name))
			continue
		}
		if t.Role == store.TraceIncident {
			cur, curIdx = &s, i
		} else {
			bl, blIdx = &s, i
		}
	}
	for i, t := range ts {
		v.Uploads = append(v.Uploads, views.TraceRow{
			ID: t.ID, Role: string(t.Role), Name: t.Name, Kind: t.Kind, Size: t.Size, UploadedAt: t.UploadedAt,
			Shown: i == curIdx || i == blIdx, DeleteAction: route.URL(route.IncidentTraceDelete, id, t.ID),
		})
	}
	if blIdx >= 0 {
		row := v.Uploads[blIdx]
		v.Baseline = &row
	}
	if cur == nil {
		return v
	}
	sv := summaryView(ts[curIdx].Name, *cur)
	v.Current = &sv
	if bl != nil {
		cv := compareView(ts[blIdx].Name, traces.Compare(*bl, *cur))
		v.Compare = &cv
	}
	for _, e := range traces.Evidences(*cur, bl) {
		v.Evidence = append(v.Evidence, views.TraceEvidenceRow{Cause: e.Cause, CauseTitle: views.CauseTitle(e.Cause), Key: e.Key, Text: e.Text})
	}
	return v
}

func summaryView(name string, s traces.Summary) views.TraceSummaryView {
	v := views.TraceSummaryView{
		Name: name, Format: formatTitle(s.Format), Span: s.Span, GPUTime: s.GPUTime, Activities: s.Activities,
		Steps: s.Steps, StepTime: s.StepTime, IdleShare: s.Idle.Share, Gaps: s.Idle.Gaps, MeanGap: s.Idle.MeanGap,
		LongestGap: s.Idle.LongestGap, LaunchGapTime: s.Idle.SmallGapTime, Timeline: s.TimelineSVG(),
	}
	if n := len(s.Devices); n > 0 {
		v.Devices = s.Devices[0].Name
		if n > 1 {
			v.Devices = strconv.Itoa(n) + " × " + v.Devices
		}
	}
	for _, c := range s.Categories {
		if c.Time <= 0 {
			continue
		}
		v.Categories = append(v.Categories, views.TraceCategoryRow{
			Category: string(c.Category), Title: c.Category.Title(), Color: traces.CategoryColor(c.Category),
			Time: c.Time, Count: c.Count, Share: c.Share,
		})
	}
	for _, k := range s.Top {
		v.Top = append(v.Top, views.TraceKernelRow{
			Name: k.Name, Category: k.Category.Title(), Count: k.Count, Total: k.Total, Mean: k.Mean, Max: k.Max, Share: k.Share,
		})
	}
	return v
}

func formatTitle(f traces.Format) string {
	switch f {
	case traces.FormatChrome:
		return "PyTorch profiler (Chrome trace)"
	case traces.FormatNsight:
		return "Nsight Systems export"
	}
	return string(f)
}

func deltaRow(d traces.CategoryDelta, title string) views.TraceDeltaRow {
	r := views.TraceDeltaRow{Category: string(d.Category), Title: title, Base: d.Base, Target: d.Target,
		Delta: d.Delta, BaseShare: d.BaseShare, TargetShare: d.TargetShare}
	if d.Relative != nil {
		r.Ratio, r.HasBase = 1+*d.Relative, true
	}
	return r
}

func compareView(baseName string, cmp traces.Comparison) views.TraceCompareView {
	v := views.TraceCompareView{BaseName: baseName, BaseIdleShare: cmp.BaseIdleShare, TargetIdleShare: cmp.TargetIdleShare}
	v.Unit = "per second of GPU span (the traces have no profiler steps)"
	if cmp.Normalization == traces.PerStep {
		v.Unit = "per profiler step"
	}
	for _, d := range cmp.Categories {
		if d.Base == 0 && d.Target == 0 {
			continue
		}
		v.Rows = append(v.Rows, deltaRow(d, d.Category.Title()))
	}
	v.Total = deltaRow(cmp.Total, "All GPU time")
	v.Headline = compareHeadline(cmp)
	return v
}

// compareHeadline names the category whose time changed most, among those
// that hold at least 5% of either trace's GPU time; empty when none moved
// by 10% or more.
func compareHeadline(cmp traces.Comparison) string {
	best, bestMove := -1, 0.0
	for i, d := range cmp.Categories {
		if d.Relative == nil || max(d.BaseShare, d.TargetShare) < 0.05 {
			continue
		}
		r := 1 + *d.Relative
		if r <= 0 {
			continue
		}
		if move := math.Abs(math.Log(r)); move >= math.Log(1.1) && move > bestMove {
			best, bestMove = i, move
		}
	}
	if best < 0 {
		return ""
	}
	d := cmp.Categories[best]
	r := 1 + *d.Relative
	per := " per step"
	if cmp.Normalization != traces.PerStep {
		per = " per second of GPU span"
	}
	var what string
	switch {
	case r >= 1.9 && r < 2.15:
		what = "doubled"
	case r >= 2.85 && r < 3.2:
		what = "tripled"
	case r > 1:
		what = "grew " + strconv.FormatFloat(r, 'f', 1, 64) + "×"
	case r >= 0.45 && r <= 0.55:
		what = "halved"
	default:
		what = "fell to " + strconv.Itoa(int(math.Round(100*r))) + "%"
	}
	return fmt.Sprintf("%s time %s%s against the baseline (%s → %s).",
		d.Category.Title(), what, per, views.FormatNanos(d.Base), views.FormatNanos(d.Target))
}
