package diagnose

import "github.com/casebook/casebook/metrics"

// Options tunes the engine. The zero value means every default.
type Options struct{}

// Engine diagnoses snapshots. It is safe for concurrent use.
type Engine struct {
	opts Options
}

// New returns an engine with opts, defaults filled in.
func New(opts Options) *Engine {
	return &Engine{opts: opts}
}

// Diagnose names the root cause of s. It never panics on odd input: missing
// fields, short history and extreme values give a weaker diagnosis, not an
// error.
func (e *Engine) Diagnose(s metrics.Snapshot) Diagnosis {
	return Diagnosis{
		RootCause:     metrics.CauseNone,
		Title:         "No anomaly",
		Severity:      SeverityInfo,
		Candidates:    []Candidate{},
		Evidence:      []Evidence{},
		CausalChain:   []string{},
		Actions:       []Action{},
		SimilarCases:  []SimilarCase{},
		EngineVersion: "casebook-rules/" + BuildVersion,
	}
}

// Deviations returns the deviation of every catalog id present in
// s.Current from its history.
func Deviations(s metrics.Snapshot) map[string]Deviation {
	return map[string]Deviation{}
}
