package diagnose

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	m "github.com/casebook/casebook/metrics"
)

// signedCorpus is 25 cases of each synthetic fault at varying strength,
// with incident times a day apart, labelled as the archive labels them.
func signedCorpus() []LabelledCase {
	causes := make([]string, 0, len(faults))
	for c := range faults {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	var out []LabelledCase
	for i := 0; i < 25; i++ {
		for j, c := range causes {
			s := synth(int64(1000+i*len(causes)+j), blend(0.4+0.6*float64(i)/24, faults[c]))
			out = append(out, LabelledCase{ID: fmt.Sprint(len(out)), Snapshot: s, Cause: c, Review: Review(i % 2),
				At: testAt.Add(-time.Duration(len(out)) * 24 * time.Hour)})
		}
	}
	return out
}

// TestStoredSignatureDiagnosesTheSame: an engine that learned the cases
// from encoded and decoded signatures gives every query the diagnosis
// (nearest cases, similarities, votes, explained-away pairs, named mild
// faults) of an engine that computed them from the snapshots, and a
// relabel through either path leaves them equal.
func TestStoredSignatureDiagnosesTheSame(t *testing.T) {
	cases := signedCorpus()
	fromSnap := New(Options{})
	if err := fromSnap.Learn(cases); err != nil {
		t.Fatal(err)
	}
	stored := make([]SignedCase, len(cases))
	for i, c := range cases {
		sc := c.Signed()
		b, err := sc.Signature.MarshalBinary()
		if err != nil || len(b) != SignatureBytes {
			t.Fatalf("encode: %d bytes, %v", len(b), err)
		}
		sc.Signature = Signature{}
		if err := sc.Signature.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if sc.Signature != NewSignature(c.Snapshot) {
			t.Fatalf("case %s: decoded signature differs from the computed one", c.ID)
		}
		stored[i] = sc
	}
	fromSig := New(Options{})
	if err := fromSig.LearnSigned(stored); err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		if a, b := fromSnap.Cases().Len(), fromSig.Cases().Len(); a != b {
			t.Fatalf("%s: %d cases from snapshots, %d from signatures", when, a, b)
		}
		n := 0
		for c, f := range faults {
			for _, s := range []float64{0.3, 1} {
				q := synth(int64(7+n), blend(s, overlay(f, faults[m.CauseSpecDecodeDegradation])))
				n++
				a, b := fromSnap.Diagnose(q), fromSig.Diagnose(q)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("%s: %s at %.1f: diagnoses differ:\nsnapshots:  %+v\nsignatures: %+v", when, c, s, a, b)
				}
				if len(a.SimilarCases) == 0 {
					t.Errorf("%s: %s at %.1f: no similar cases to compare", when, c, s)
				}
			}
		}
	}
	same("loaded")
	re := cases[3]
	re.Cause, re.Review = m.CauseUnknown, Corrected
	if err := fromSnap.LearnCase(re); err != nil {
		t.Fatal(err)
	}
	if err := fromSig.LearnSignedCase(re.Signed()); err != nil {
		t.Fatal(err)
	}
	same("relabelled")
}

// TestSignatureDecodeRejects: the decoder refuses wrong lengths and
// features that are not numbers in ±1, and leaves its target unchanged.
func TestSignatureDecodeRejects(t *testing.T) {
	good, _ := NewSignature(synth(1, faults[m.CauseKVCacheEviction])).MarshalBinary()
	with := func(i int, x float32) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"truncated", good[:SignatureBytes-1]},
		{"one feature short", good[:SignatureBytes-4]},
		{"too long", append(append([]byte(nil), good...), 0, 0, 0, 0)},
		{"huge", make([]byte, 1<<20)},
		{"NaN", with(5, float32(math.NaN()))},
		{"+Inf", with(0, float32(math.Inf(1)))},
		{"-Inf", with(SigDim-1, float32(math.Inf(-1)))},
		{"above 1", with(3, 1.5)},
		{"below -1", with(30, -1.0001)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig := Signature{0: 0.25}
			err := sig.UnmarshalBinary(tc.data)
			if !errors.Is(err, ErrBadSignature) {
				t.Errorf("err = %v, want ErrBadSignature", err)
			}
			if sig != (Signature{0: 0.25}) {
				t.Error("a rejected decode changed the signature")
			}
		})
	}
	var sig Signature
	if err := sig.UnmarshalBinary(good); err != nil {
		t.Errorf("a computed signature does not decode: %v", err)
	}
}

// FuzzSignatureDecode: arbitrary bytes never panic the decoder; what it
// accepts encodes back to the same bytes and can be learned and matched.
func FuzzSignatureDecode(f *testing.F) {
	good, _ := NewSignature(synth(1, faults[m.CauseGPUThrottling])).MarshalBinary()
	f.Add(good)
	f.Add(good[:7])
	f.Add([]byte{})
	nan := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(nan[8:], 0x7fc00000)
	f.Add(nan)
	f.Add(make([]byte, SignatureBytes))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sig Signature
		if err := sig.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrBadSignature) {
				t.Fatalf("error %v is not ErrBadSignature", err)
			}
			return
		}
		back, _ := sig.MarshalBinary()
		if string(back) != string(data) {
			t.Fatalf("re-encoding changed the bytes")
		}
		kb := NewKnowledgeBase()
		if err := kb.PutSigned(SignedCase{ID: "x", Signature: sig, Cause: m.CauseNone}); err != nil {
			t.Fatal(err)
		}
		if nb := kb.Nearest(sig, 1); len(nb) != 1 || nb[0].Similarity != 1 {
			t.Fatalf("a decoded signature is not its own nearest case: %+v", nb)
		}
	})
}
