package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/casebook/casebook/metrics"
)

// Case signatures. The diagnoser's knowledge base holds one signature per
// reviewed incident. The archive stores each signature beside the label it
// was computed for (case_signatures), so a start reads one row per case
// instead of decoding and re-deriving every snapshot. Beside it sits the
// cause the rules alone named for the snapshot (migration 10), which the
// diagnoser's classifier reads as a feature; it is NULL for signatures
// stored before. The store treats the signature as opaque bytes with a
// format version; the diagnoser encodes and decodes it.

// MaxSignatureBytes bounds a stored signature (the schema enforces it too).
const MaxSignatureBytes = 1024

// reviewedCause is the cause a reviewed incident teaches: its true cause,
// or the diagnosed one for a confirmation stored without one. Empty means
// the incident teaches nothing.
const reviewedCause = `CASE WHEN i.true_cause != '' THEN i.true_cause WHEN i.verdict = 'correct' THEN i.root_cause ELSE '' END`

// CaseSignature is the signature of a reviewed incident under the label it
// was computed for.
type CaseSignature struct {
	IncidentID int64
	// Version is the signature format (diagnose.SignatureVersion).
	Version int
	// Verdict and Cause are the label the signature was computed for.
	Verdict   Verdict
	Cause     string
	Signature []byte
	// RulesCause is the cause the rules alone named for the snapshot
	// (diagnose.Engine.RulesCause); "" is stored as unknown (NULL).
	RulesCause string
}

// ReviewedCase is a reviewed incident as the knowledge base loads it.
type ReviewedCase struct {
	IncidentID int64
	Verdict    Verdict
	// Cause is the cause the case teaches (see reviewedCause).
	Cause string
	// At is when the incident opened.
	At time.Time
	// Signature is the stored signature of the requested version computed
	// for the current label, or nil when there is none. It is valid only
	// until the callback returns.
	Signature []byte
	// RulesCause is the cause the rules alone named, stored with the
	// signature; "" when unknown (no signature, or one stored before the
	// archive kept it).
	RulesCause string
}

// EachReviewedCase calls fn for every reviewed incident that teaches a
// cause, oldest first, in one streaming query, with its stored signature
// of format version when one matches its current label. An error from fn
// stops the scan and is returned.
func (s *Store) EachReviewedCase(ctx context.Context, version int, fn func(ReviewedCase) error) error {
	rows, err := s.r.QueryContext(ctx, `
		SELECT i.id, i.verdict, `+reviewedCause+`, i.opened_at, s.signature, coalesce(s.rules_cause, '')
		FROM incidents i
		LEFT JOIN case_signatures s ON s.incident_id = i.id AND s.version = ?
			AND s.verdict = i.verdict AND s.cause = `+reviewedCause+`
		WHERE i.verdict IN ('correct', 'wrong') AND `+reviewedCause+` != ''
		ORDER BY i.opened_at, i.id`, version)
	if err != nil {
		return fmt.Errorf("store: reviewed cases: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c       ReviewedCase
			verdict string
			at      int64
			sig     sql.RawBytes
		)
		if err := rows.Scan(&c.IncidentID, &verdict, &c.Cause, &at, &sig, &c.RulesCause); err != nil {
			return fmt.Errorf("store: reviewed cases: %w", err)
		}
		c.Verdict, c.At, c.Signature = Verdict(verdict), fromNanos(at), sig
		if err := fn(c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: reviewed cases: %w", err)
	}
	return nil
}

// PutCaseSignatures stores signatures in one transaction, each replacing
// its incident's earlier one, and returns how many it stored. A signature
// whose verdict and cause are no longer its incident's current label (the
// incident was relabelled meanwhile) or whose incident is gone is skipped.
func (s *Store) PutCaseSignatures(ctx context.Context, sigs []CaseSignature) (int, error) {
	for _, c := range sigs {
		if c.Verdict != VerdictCorrect && c.Verdict != VerdictWrong {
			return 0, fmt.Errorf("store: put case signatures: %w", invalidf("incident %d: verdict %q is not correct or wrong", c.IncidentID, c.Verdict))
		}
		if len(c.Signature) == 0 || len(c.Signature) > MaxSignatureBytes {
			return 0, fmt.Errorf("store: put case signatures: %w", invalidf("incident %d: signature of %d bytes, want 1-%d", c.IncidentID, len(c.Signature), MaxSignatureBytes))
		}
	}
	if len(sigs) == 0 {
		return 0, nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("store: put case signatures: begin: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `
		INSERT INTO case_signatures (incident_id, version, verdict, cause, signature, rules_cause)
		SELECT i.id, ?, i.verdict, `+reviewedCause+`, ?, nullif(?, '') FROM incidents i
		WHERE i.id = ? AND i.verdict = ? AND `+reviewedCause+` = ?
		ON CONFLICT (incident_id) DO UPDATE SET version = excluded.version, verdict = excluded.verdict,
			cause = excluded.cause, signature = excluded.signature, rules_cause = excluded.rules_cause`)
	if err != nil {
		return 0, fmt.Errorf("store: put case signatures: %w", err)
	}
	defer stmt.Close()
	n := 0
	for _, c := range sigs {
		res, err := stmt.ExecContext(ctx, c.Version, c.Signature, c.RulesCause, c.IncidentID, string(c.Verdict), c.Cause)
		if err != nil {
			return 0, fmt.Errorf("store: put case signature of incident %d: %w", c.IncidentID, err)
		}
		if k, err := res.RowsAffected(); err == nil {
			n += int(k)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("store: put case signatures: commit: %w", err)
	}
	return n, nil
}

// CaseSnapshots returns the archived snapshots of the incidents ids, by id;
// ids that do not exist are absent. It reads the snapshots alone, not the
// chart windows, for computing signatures the archive lacks. Incidents
// whose snapshot cannot be decoded are absent too and listed in
// unreadable.
func (s *Store) CaseSnapshots(ctx context.Context, ids []int64) (map[int64]metrics.Snapshot, []int64, error) {
	out := make(map[int64]metrics.Snapshot, len(ids))
	var unreadable []int64
	const batch = 500
	for lo := 0; lo < len(ids); lo += batch {
		part := ids[lo:min(lo+batch, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := s.r.QueryContext(ctx, `SELECT incident_id, snapshot FROM incident_evidence
			WHERE incident_id IN (?`+strings.Repeat(", ?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("store: case snapshots: %w", err)
		}
		for rows.Next() {
			var id int64
			var blob sql.RawBytes
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("store: case snapshots: %w", err)
			}
			snap, err := unpackSnapshot(blob)
			if err != nil {
				// One damaged snapshot must not keep every other
				// case out of the knowledge base.
				unreadable = append(unreadable, id)
				continue
			}
			out[id] = snap
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("store: case snapshots: %w", err)
		}
	}
	return out, unreadable, nil
}
