package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/casebook/casebook/diagnose"
	"github.com/casebook/casebook/metrics"
)

// featureWriter writes one CSV row per diagnosed case of a labelled
// corpus: everything the engine reads off a case, so that what a labelled
// archive can teach is measurable with any learner. The columns are the
// label, the cause the rules named, every taxonomy cause's candidate score
// (0 where it was no candidate), the case signature's features
// (sig_*, as the matcher stores them before quantising) and every catalog
// metric's z against the case's own baseline (z_*, empty where the case
// lacks the metric or its baseline).
type featureWriter struct {
	w *csv.Writer
}

// newFeatureWriter writes the header to w.
func newFeatureWriter(w io.Writer) (*featureWriter, error) {
	fw := &featureWriter{w: csv.NewWriter(w)}
	head := []string{"label", "rules_cause"}
	for _, c := range metrics.Causes {
		head = append(head, "score_"+c.ID)
	}
	for i := 0; i < diagnose.SigDim; i++ {
		head = append(head, "sig_"+diagnose.FeatureName(i))
	}
	for _, mt := range metrics.Catalog {
		head = append(head, "z_"+mt.ID)
	}
	return fw, fw.w.Write(head)
}

// add writes the row of case c, which the rules diagnosed as d.
func (fw *featureWriter) add(c metrics.Case, d diagnose.Diagnosis) error {
	row := []string{c.Label, d.RootCause}
	scores := map[string]float64{}
	for _, cd := range d.Candidates {
		if cd.Source != diagnose.SourceMatch && cd.Score > scores[cd.RootCause] {
			scores[cd.RootCause] = cd.Score
		}
	}
	for _, cs := range metrics.Causes {
		row = append(row, num(scores[cs.ID]))
	}
	for _, v := range diagnose.NewSignature(c.Snapshot) {
		row = append(row, strconv.FormatFloat(float64(v), 'g', -1, 32))
	}
	dev := diagnose.Deviations(c.Snapshot)
	for _, mt := range metrics.Catalog {
		z := ""
		if dv, ok := dev[mt.ID]; ok {
			z = num(dv.Z)
		}
		row = append(row, z)
	}
	return fw.w.Write(row)
}

// close flushes the rows and reports the first write error.
func (fw *featureWriter) close() error {
	fw.w.Flush()
	if err := fw.w.Error(); err != nil {
		return fmt.Errorf("write features: %w", err)
	}
	return nil
}

// num formats x in the fewest digits that read back to the same float64.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
