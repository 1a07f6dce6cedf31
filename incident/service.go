package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
	"github.com/casebook/casebook/store"
)

// Archive is what the service needs from the incident archive.
// *store.Store implements it.
type Archive interface {
	OpenIncident(ctx context.Context, in store.NewIncident, d store.DiagnosisRecord) (store.Incident, bool, error)
	IncidentByAlert(ctx context.Context, fingerprint string, startsAt time.Time) (store.Incident, error)
	ResolveAlert(ctx context.Context, fingerprint string, startsAt, resolvedAt time.Time) (int64, error)
	Incident(ctx context.Context, id int64) (store.Incident, error)
	ReplaceWindows(ctx context.Context, id int64, windows []metrics.Series) error
	AddDiagnosis(ctx context.Context, incidentID int64, d store.DiagnosisRecord) (store.Diagnosis, error)
	AddLabel(ctx context.Context, l store.NewLabel) (store.Label, error)
	AddNote(ctx context.Context, n store.NewNote) (store.Note, error)
	Causes(ctx context.Context) ([]store.Cause, error)
	EachReviewedCase(ctx context.Context, version int, fn func(store.ReviewedCase) error) error
	PutCaseSignatures(ctx context.Context, sigs []store.CaseSignature) (int, error)
	CaseSnapshots(ctx context.Context, ids []int64) (map[int64]metrics.Snapshot, []int64, error)
}

// Capture reads the evidence an incident archives. *telemetry.Telemetry
// implements it.
type Capture interface {
	Snapshot(ctx context.Context, scope metrics.Scope, at time.Time) (metrics.Snapshot, error)
	Range(ctx context.Context, scope metrics.Scope, ids []string, r metrics.Range) ([]metrics.Series, error)
	// Scopes lists the scopes with data; it maps an alert that names only
	// an instance to its model.
	Scopes(ctx context.Context) ([]metrics.Scope, error)
}

// Diagnoser diagnoses a snapshot. *diagnose.Engine implements it.
type Diagnoser interface {
	Diagnose(s metrics.Snapshot) diagnose.Diagnosis
}

// CaseLearner learns reviewed incidents for similar-case matching, from
// signatures computed once per label. *diagnose.Engine implements it.
type CaseLearner interface {
	// LearnSigned replaces every learned case.
	LearnSigned(cases []diagnose.SignedCase) error
	// LearnSignedCase learns one case, replacing an earlier one with its ID.
	LearnSignedCase(c diagnose.SignedCase) error
	// RulesCause is the cause the rules alone name for a snapshot, stored
	// with a labelled case's signature.
	RulesCause(s metrics.Snapshot) string
}

// Options are the service's dependencies and settings. Archive, Capture
// and Diagnoser are required.
type Options struct {
	Archive   Archive
	Capture   Capture
	Diagnoser Diagnoser
	// Learner, when set, is taught every reviewed incident (usually the
	// same engine as Diagnoser); nil diagnoses with the rules alone.
	Learner CaseLearner
	// InstanceLabel is the alert label that names an engine instance
	// (--instance-label); "" means "pod".
	InstanceLabel string
	Logger        *slog.Logger
	Now           func() time.Time // nil means time.Now
	// Before and After bound the archived chart windows around the
	// trigger; zero means 1 h before and 15 min after.
	Before, After time.Duration
	// Step is the archived windows' resolution; zero means 30 s.
	Step time.Duration
}

// Service opens, diagnoses and reviews incidents.
type Service struct {
	o        Options
	cases    caseState
	captures captures
}

// New builds the service, filling in defaults.
func New(o Options) *Service {
	if o.Archive == nil || o.Capture == nil || o.Diagnoser == nil {
		panic("incident: New needs Archive, Capture and Diagnoser")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.InstanceLabel == "" {
		o.InstanceLabel = "pod"
	}
	if o.Before <= 0 {
		o.Before = time.Hour
	}
	if o.After <= 0 {
		o.After = 15 * time.Minute
	}
	if o.Step <= 0 {
		o.Step = 30 * time.Second
	}
	return &Service{o: o}
}

// Trigger describes what opens an incident.
type Trigger struct {
	Kind  store.TriggerKind
	Scope metrics.Scope
	// At is the trigger instant: alert start, click time, detection time.
	At     time.Time
	Title  string          // "" means a title from the scope and diagnosis
	Detail json.RawMessage // kept with the incident
	Alert  *store.Alert
	// Severity overrides the diagnosis's severity when set (an alert's).
	Severity string
	// Snapshot, when set, is archived instead of capturing one at At;
	// Diagnosis, when also set, is its diagnosis.
	Snapshot  *metrics.Snapshot
	Diagnosis *diagnose.Diagnosis
}

// Open opens an incident the same way whatever triggered it: capture the
// snapshot at the trigger (unless one is given) and the chart windows
// around it, diagnose (unless a diagnosis of the given snapshot is given),
// and store everything in one transaction. A capture failure does not lose
// the incident: it is stored with what could be captured and the failure
// in its trigger detail. It reports whether the incident is new (an alert
// seen before returns its incident).
func (s *Service) Open(ctx context.Context, tr Trigger) (store.Incident, bool, error) {
	now := s.o.Now().UTC()
	at := tr.At.UTC()
	if at.IsZero() || at.After(now) {
		at = now
	}
	scope, diag := tr.Scope, tr.Diagnosis
	var ev evidence
	if tr.Snapshot == nil {
		diag = nil // a given diagnosis belongs to a given snapshot
		at = at.Truncate(time.Second)
		ev = s.captures.get(ctx, scope, at, now, func(ctx context.Context) evidence {
			var ev evidence
			ev.snap, ev.snapErr = s.o.Capture.Snapshot(ctx, scope, at)
			ev.windows, ev.windowsErr = s.captureWindows(ctx, scope, at, now)
			return ev
		})
	} else {
		ev.snap = *tr.Snapshot
		ev.windows, ev.windowsErr = s.captureWindows(ctx, scope, at, now)
	}
	var captureErrs []string
	if ev.snapErr != nil {
		s.o.Logger.WarnContext(ctx, "incidents: snapshot failed", "scope", scope.String(), "err", ev.snapErr)
		captureErrs = append(captureErrs, "snapshot: "+ev.snapErr.Error())
		ev.snap = metrics.Snapshot{At: at, Scope: scope, Current: metrics.Values{}}
	}
	windows := ev.windows
	if ev.windowsErr != nil {
		s.o.Logger.WarnContext(ctx, "incidents: chart windows failed", "scope", scope.String(), "err", ev.windowsErr)
		captureErrs = append(captureErrs, "chart windows: "+ev.windowsErr.Error())
		windows = nil
	}
	if diag == nil {
		d := s.diagnose(ctx, ev.snap)
		diag = &d
	}
	rec, err := EncodeDiagnosis(*diag, now)
	if err != nil {
		return store.Incident{}, false, err
	}
	title := tr.Title
	if title == "" {
		title = metrics.CauseTitle(diag.RootCause) + " on " + scope.String()
	}
	sev := tr.Severity
	if sev == "" {
		sev = string(diag.Severity)
	}
	detail := tr.Detail
	if len(captureErrs) > 0 {
		detail = withCaptureErrors(detail, captureErrs)
	}
	in := store.NewIncident{
		Title: truncate(title, store.MaxTitleBytes), Scope: scope, Trigger: tr.Kind, TriggerDetail: detail, Alert: tr.Alert,
		OpenedAt: now, WindowStart: at.Add(-s.o.Before), WindowEnd: at.Add(s.o.After),
		Severity: sev, Snapshot: ev.snap, Windows: windows,
	}
	inc, created, err := s.o.Archive.OpenIncident(ctx, in, rec)
	if err != nil {
		return store.Incident{}, false, fmt.Errorf("incidents: open for %s: %w", scope, err)
	}
	return inc, created, nil
}

// Diagnose diagnoses a snapshot with the knowledge base loaded, without
// opening an incident.
func (s *Service) Diagnose(ctx context.Context, snap metrics.Snapshot) diagnose.Diagnosis {
	return s.diagnose(ctx, snap)
}

func (s *Service) diagnose(ctx context.Context, snap metrics.Snapshot) diagnose.Diagnosis {
	s.ensureCases(ctx)
	return s.o.Diagnoser.Diagnose(snap)
}

// DiagnoseNow opens an incident for "Diagnose now": the scope's snapshot
// is captured at the click, diagnosed and archived with its windows.
func (s *Service) DiagnoseNow(ctx context.Context, snap metrics.Snapshot) (store.Incident, error) {
	detail, _ := json.Marshal(map[string]string{"source": "diagnose now"})
	d := s.diagnose(ctx, snap)
	inc, _, err := s.Open(ctx, Trigger{Kind: store.TriggerManual, Scope: snap.Scope, At: snap.At, Detail: detail, Snapshot: &snap, Diagnosis: &d})
	return inc, err
}

// Rediagnose diagnoses an archived incident's snapshot with the current
// engine, its knowledge base and the incident's kernel evidence (nil
// without a trace), and appends the result beside the earlier diagnoses.
func (s *Service) Rediagnose(ctx context.Context, id int64, kernel []diagnose.KernelEvidence) (store.Diagnosis, error) {
	inc, err := s.o.Archive.Incident(ctx, id)
	if err != nil {
		return store.Diagnosis{}, err
	}
	d := diagnose.FoldKernelEvidence(s.diagnose(ctx, inc.Snapshot), kernel)
	rec, err := EncodeDiagnosis(d, s.o.Now().UTC())
	if err != nil {
		return store.Diagnosis{}, err
	}
	return s.o.Archive.AddDiagnosis(ctx, id, rec)
}

func withCaptureErrors(detail json.RawMessage, errs []string) json.RawMessage {
	m := map[string]any{}
	if len(detail) > 0 {
		_ = json.Unmarshal(detail, &m)
	}
	m["capture_errors"] = errs
	out, err := json.Marshal(m)
	if err != nil {
		return detail
	}
	return out
}

// truncate cuts s to at most n bytes at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Diagnoser is the service's diagnosis as a plain Diagnoser, for callers
// without a context (the JSON API): it loads the knowledge base first.
func (s *Service) Diagnoser() Diagnoser { return serviceDiagnoser{s} }

type serviceDiagnoser struct{ s *Service }

func (d serviceDiagnoser) Diagnose(snap metrics.Snapshot) diagnose.Diagnosis {
	return d.s.diagnose(context.Background(), snap)
}

// EncodeDiagnosis is the stored form of a diagnosis made at `at`: the
// engine's JSON as the body, and the columns the archive lists and counts.
func EncodeDiagnosis(d diagnose.Diagnosis, at time.Time) (store.DiagnosisRecord, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return store.DiagnosisRecord{}, fmt.Errorf("incidents: encode diagnosis: %w", err)
	}
	version := d.EngineVersion
	if version == "" {
		version = "unknown"
	}
	conf := d.Confidence
	if !(conf >= 0) {
		conf = 0
	}
	conf = min(conf, 1)
	return store.DiagnosisRecord{
		EngineVersion: version, CreatedAt: at, RootCause: d.RootCause, Confidence: conf,
		Severity: string(d.Severity), Body: body,
	}, nil
}

// DecodeDiagnosis reads a stored diagnosis; a body that no longer decodes
// is rebuilt from its columns.
func DecodeDiagnosis(d store.Diagnosis) diagnose.Diagnosis {
	var out diagnose.Diagnosis
	if err := json.Unmarshal(d.Body, &out); err != nil || out.RootCause == "" {
		out = diagnose.Diagnosis{RootCause: d.RootCause, Confidence: d.Confidence, Severity: diagnose.Severity(d.Severity)}
	}
	if out.EngineVersion == "" {
		out.EngineVersion = d.EngineVersion
	}
	return out
}
