package diagnose

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Stored signatures. The archive keeps each reviewed incident's signature
// beside its label, so the console loads its knowledge base without
// reading and re-deriving every snapshot. A signature travels as SigDim
// float32 features, little-endian (SignatureBytes bytes); the knowledge
// base quantises them exactly as it quantises a signature computed from the
// snapshot, so a stored case matches the same as a recomputed one.

// SignatureVersion identifies how a signature is computed from a snapshot:
// the features, their order, the baseline and the squashing. Any change
// that moves a feature for some snapshot must increase it, so stored
// signatures of the old version are recomputed from their snapshots.
const SignatureVersion = 1

// SignatureBytes is the length of an encoded signature; the decoder
// accepts nothing longer or shorter.
const SignatureBytes = SigDim * 4

// ErrBadSignature reports an encoded signature that is not SignatureBytes
// long or holds a feature outside ±1 (NaN and infinities included).
var ErrBadSignature = errors.New("diagnose: bad signature")

// MarshalBinary encodes sig as SignatureBytes bytes. It never fails.
func (sig Signature) MarshalBinary() ([]byte, error) {
	return sig.AppendBinary(make([]byte, 0, SignatureBytes))
}

// AppendBinary appends the encoding of sig to b. It never fails.
func (sig Signature) AppendBinary(b []byte) ([]byte, error) {
	for _, x := range sig {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b, nil
}

// UnmarshalBinary decodes an encoded signature into sig. Data of the wrong
// length or with a feature that is not a number in ±1 is rejected with
// ErrBadSignature and leaves sig unchanged.
func (sig *Signature) UnmarshalBinary(data []byte) error {
	if len(data) != SignatureBytes {
		return fmt.Errorf("%w: %d bytes, want %d", ErrBadSignature, len(data), SignatureBytes)
	}
	var out Signature
	for i := range out {
		x := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		if !(x >= -1 && x <= 1) { // also NaN
			return fmt.Errorf("%w: feature %d (%s) is %v, want a number in ±1", ErrBadSignature, i, FeatureName(i), x)
		}
		out[i] = x
	}
	*sig = out
	return nil
}

// SignedCase is a labelled case whose signature is already computed (read
// from the archive), so learning it needs no snapshot.
type SignedCase struct {
	ID        string
	Signature Signature
	Cause     string
	Review    Review
	// At is when the incident happened; zero means unknown (no recency
	// weighting for this case).
	At time.Time
	// Confidence is the uncalibrated confidence of the reviewed
	// diagnosis; 0 means unknown (see LabelledCase).
	Confidence float64
	// RulesCause is what the rules alone named; "" means unknown (see
	// LabelledCase).
	RulesCause string
}

// Signed computes c's signature and returns c as a SignedCase.
func (c LabelledCase) Signed() SignedCase {
	return SignedCase{ID: c.ID, Signature: NewSignature(c.Snapshot), Cause: c.Cause, Review: c.Review, At: caseTime(c), Confidence: c.Confidence, RulesCause: c.RulesCause}
}

// PutSigned learns c, replacing the stored case with the same ID if there
// is one (a relabelled incident), else adding it.
func (kb *KnowledgeBase) PutSigned(c SignedCase) error {
	fresh := NewKnowledgeBase()
	if err := fresh.addSigned(c); err != nil {
		return err
	}
	return kb.putFrom(fresh, c.ID)
}

// ReplaceSigned swaps the whole content for cases, in their order (the
// console loads the archive this way); on error the old content stays.
func (kb *KnowledgeBase) ReplaceSigned(cases []SignedCase) error {
	fresh := NewKnowledgeBase()
	fresh.vecs = make([]uint64, 0, len(cases)*sigWords)
	fresh.meta = make([]caseMeta, 0, len(cases))
	for _, c := range cases {
		if err := fresh.addSigned(c); err != nil {
			return err
		}
	}
	kb.swap(fresh)
	return nil
}

// LearnSigned replaces the cases the engine matches against with cases
// whose signatures are precomputed (the console loads them from the
// archive at start). On error the previous cases stay.
func (e *Engine) LearnSigned(cases []SignedCase) error { return e.cases.ReplaceSigned(cases) }

// LearnSignedCase learns one case with a precomputed signature, replacing
// an earlier case with its ID (the console calls it when an incident is
// labelled or relabelled).
func (e *Engine) LearnSignedCase(c SignedCase) error { return e.cases.PutSigned(c) }
