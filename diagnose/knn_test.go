package diagnose

import (
	"math"
	"testing"

	m "github.com/casebook/casebook/metrics"
)

func TestPlainKNN(t *testing.T) {
	k := NewPlainKNN(0)
	if got := k.Classify(synth(1, nil)); got != "" {
		t.Errorf("empty baseline named %q", got)
	}
	causes := []string{m.CauseEngineErrors, m.CauseTransportLatency, m.CauseNone}
	for i := int64(0); i < 12; i++ {
		c := causes[i%3]
		k.Add(synth(10+i, faults[c]), c)
	}
	if k.Len() != 12 {
		t.Fatalf("Len = %d, want 12", k.Len())
	}
	for _, c := range causes {
		if got := k.Classify(synth(99, faults[c])); got != c {
			t.Errorf("classified a %s snapshot as %s", c, got)
		}
	}
}

func TestPlainFeaturesAreFinite(t *testing.T) {
	s := synth(1, m.Values{m.ErrorRate: 0.5, m.PreemptionRate: 40})
	delete(s.Current, m.TPOT)
	s.Current[m.Power] = math.NaN()
	f := plainFeatures(s)
	if len(f) != len(m.Catalog) {
		t.Fatalf("%d features, want one per catalog metric (%d)", len(f), len(m.Catalog))
	}
	for i, x := range f {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > knnClip {
			t.Errorf("feature %s = %v", m.Catalog[i].ID, x)
		}
		if id := m.Catalog[i].ID; (id == m.TPOT || id == m.Power) && x != 0 {
			t.Errorf("missing or NaN %s gave %v, want 0", id, x)
		}
	}
	if f[indexOf(m.ErrorRate)] <= 1 {
		t.Errorf("error rate 0.002 -> 0.5 gave log-ratio %v, want well above 1", f[indexOf(m.ErrorRate)])
	}
}

func indexOf(id string) int {
	for i, mt := range m.Catalog {
		if mt.ID == id {
			return i
		}
	}
	return -1
}
