package incident

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/store"
)

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
