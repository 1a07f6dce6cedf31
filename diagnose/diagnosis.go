package diagnose

// Severity is the user-facing impact of a diagnosis.
type Severity string

// Severities, from the most to the least urgent.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Candidate is one root cause the engine considered, with its score.
type Candidate struct {
	RootCause string  `json:"root_cause"`
	Score     float64 `json:"score"`
	Source    string  `json:"source"` // "rule", "baseline" or "match"
}

// Candidate sources.
const (
	SourceRule     = "rule"
	SourceBaseline = "baseline"
	SourceMatch    = "match"
)

// Evidence is one metric reading that supports a diagnosis.
type Evidence struct {
	Metric       string  `json:"metric"`
	Value        float64 `json:"value"`
	BaselineMean float64 `json:"baseline_mean"`
	Z            float64 `json:"z"`
	Text         string  `json:"text"`
}

// Effect is the expected effect of an action on one metric.
type Effect struct {
	Metric    string `json:"metric"`
	Direction string `json:"direction"` // "up" or "down"
	Size      string `json:"size"`      // e.g. "-20..-40%"
}

// Action is one structured remedy for a root cause: what to change, why,
// what it is expected to do, what can go wrong and how to undo it.
type Action struct {
	ID       string   `json:"id"` // stable, e.g. "raise_gpu_memory_utilization"
	Title    string   `json:"title"`
	Knob     string   `json:"knob,omitempty"`     // a vLLM or deployment knob, or "" for an operational step
	Proposed string   `json:"proposed,omitempty"` // e.g. "0.95"
	Why      string   `json:"why"`
	Effects  []Effect `json:"effects"`
	Risk     string   `json:"risk"`
	Rollback string   `json:"rollback"`
}

// SimilarCase is a labelled past case that resembles the diagnosed snapshot.
type SimilarCase struct {
	ID         string  `json:"id"`
	RootCause  string  `json:"root_cause"`
	Similarity float64 `json:"similarity"`
	// Shared lists the metrics (catalog ids, or the signature's ratio
	// names) on which both cases deviate the same way: what made them
	// close.
	Shared []string `json:"shared,omitempty"`
}

// Diagnosis is the engine's answer for one snapshot. Its JSON shape is the
// contract in DESIGN.md.
type Diagnosis struct {
	RootCause     string        `json:"root_cause"`
	Title         string        `json:"title"`
	Confidence    float64       `json:"confidence"`
	Severity      Severity      `json:"severity"`
	Candidates    []Candidate   `json:"candidates"`
	Evidence      []Evidence    `json:"evidence"`
	CausalChain   []string      `json:"causal_chain"`
	Actions       []Action      `json:"actions"`
	SimilarCases  []SimilarCase `json:"similar_cases"`
	EngineVersion string        `json:"engine_version"`
	Missing       []string      `json:"missing,omitempty"` // catalog ids the rules wanted but the snapshot lacked
	// Notes are sentences about how the diagnosis was reached: a missing
	// baseline, or similar cases that changed the rules' answer and why.
	Notes []string `json:"notes,omitempty"`
	// Uncalibrated is the confidence before the calibration learned from
	// reviews (equal to Confidence until the knowledge base holds enough
	// of them). A review stores it beside its label (LabelledCase) so the
	// calibration is always fitted on raw confidences.
	Uncalibrated float64 `json:"-"`
}

// Deviation is one metric's distance from its own baseline.
type Deviation struct {
	Mean, Std, Z float64 // Z is signed: (value - Mean) / Std
	Anomalous    bool    // |Z| > 3 in the metric's bad direction
}

// BuildVersion is the release the binary was built from, set with -ldflags
// "-X github.com/casebook/casebook/diagnose.BuildVersion=...". The engine
// version in every Diagnosis is derived from it.
var BuildVersion = "dev"
