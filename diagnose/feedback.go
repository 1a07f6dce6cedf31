package diagnose

import (
	"fmt"
	"math/rand"

	m "github.com/casebook/casebook/metrics"
)

// FeedbackOptions configures a feedback replay (EvaluateFeedback).
type FeedbackOptions struct {
	// Engine configures both engines; its Cases field is ignored (the
	// replay builds its own knowledge base).
	Engine Options
	// Block is the learning-curve block size in cases. Default 100.
	Block int
	// Noise is the share of fed-back labels replaced by a wrong cause,
	// 0-1.
	Noise float64
	// Seed drives the label noise.
	Seed int64
}

// FeedbackBlock is one block of the learning curve: cases From..To-1 of
// the replay, diagnosed with a knowledge base of From..To-1 earlier cases.
type FeedbackBlock struct {
	From  int     `json:"from"`
	To    int     `json:"to"`
	Rules float64 `json:"rules_top1"`
	Match float64 `json:"match_top1"`
	// KNN is the plain 5-nearest-neighbour baseline (PlainKNN) fed the
	// same labels.
	KNN float64 `json:"knn_top1"`
}

// FeedbackReport is the result of a feedback replay.
type FeedbackReport struct {
	Cases int `json:"cases"`
	// Rules and Match are the top-1 accuracy of rules alone and of rules
	// with matching over the whole replay.
	Rules float64 `json:"rules_top1"`
	Match float64 `json:"match_top1"`
	KNN   float64 `json:"knn_top1"`
	// After is the case count after which AfterRules and AfterMatch are
	// measured (500, or half the corpus when it is smaller).
	After      int     `json:"after"`
	AfterRules float64 `json:"after_rules_top1"`
	AfterMatch float64 `json:"after_match_top1"`
	AfterKNN   float64 `json:"after_knn_top1"`
	// AfterMatchAnyLabel also counts a diagnosis naming a secondary label
	// of a multi-fault case as right, after the same point.
	AfterMatchAnyLabel float64 `json:"after_match_top1_any_label"`
	// WorstDeficit is the largest lead, in accuracy points, of rules alone
	// over matching in any block (0 when matching never trails).
	WorstDeficit float64         `json:"worst_deficit_points"`
	Blocks       []FeedbackBlock `json:"blocks"`
	Noise        float64         `json:"noise"`
	// Flipped is how many fed-back labels the noise made wrong.
	Flipped int `json:"flipped"`
	// Overturned counts diagnoses where matching changed the rules'
	// answer, and OverturnedRight how many of those changes were right.
	Overturned      int `json:"overturned"`
	OverturnedRight int `json:"overturned_right"`
	// MatchReport is the full evaluation of the engine with matching,
	// RulesReport that of rules alone (for their calibration).
	MatchReport EvalReport `json:"match_report"`
	RulesReport EvalReport `json:"rules_report"`
}

// EvaluateFeedback replays cases in order the way the archive learns: each
// case is diagnosed by rules alone, by rules with a knowledge base of every
// earlier case and by the plain kNN baseline over the same cases, then its label is fed back (with probability Noise a
// wrong one) as a confirmation when it names the cause the engine gave and
// as a correction otherwise, as an engineer's review would. Accuracy is
// always measured against the true label.
func EvaluateFeedback(cases []m.Case, opts FeedbackOptions) (FeedbackReport, error) {
	if opts.Noise < 0 || opts.Noise > 1 {
		return FeedbackReport{}, fmt.Errorf("diagnose: feedback noise %v is not in 0-1", opts.Noise)
	}
	block := opts.Block
	if block <= 0 {
		block = 100
	}
	rulesOpts := opts.Engine
	rulesOpts.Cases = nil
	rulesEngine := New(rulesOpts)
	kb := NewKnowledgeBase()
	matchOpts := opts.Engine
	matchOpts.Cases = kb
	matchEngine := New(matchOpts)
	knn := NewPlainKNN(5)

	labels := labelSet(cases)
	rng := rand.New(rand.NewSource(opts.Seed))
	rep := FeedbackReport{Cases: len(cases), Noise: opts.Noise, Blocks: []FeedbackBlock{}}
	rep.After = 500
	if len(cases) < 2*rep.After {
		rep.After = len(cases) / 2
	}
	var ev, rev Evaluation
	var rulesOK, matchOK, knnOK, afterRules, afterMatch, afterKNN, afterAny, afterN int
	var cur FeedbackBlock
	var bRules, bMatch, bKNN, bN int
	for i, c := range cases {
		rd := rulesEngine.Diagnose(c.Snapshot)
		md := matchEngine.Diagnose(c.Snapshot)
		ev.AddCase(c, md)
		rev.AddCase(c, rd)
		rOK, mOK := rd.RootCause == c.Label, md.RootCause == c.Label
		kOK := knn.Classify(c.Snapshot) == c.Label
		if md.RootCause != rd.RootCause {
			rep.Overturned++
			if mOK {
				rep.OverturnedRight++
			}
		}
		rulesOK += b2i(rOK)
		matchOK += b2i(mOK)
		knnOK += b2i(kOK)
		if i >= rep.After {
			afterN++
			afterRules += b2i(rOK)
			afterMatch += b2i(mOK)
			afterKNN += b2i(kOK)
			afterAny += b2i(mOK || contains(c.Secondary, md.RootCause))
		}
		if bN == 0 {
			cur = FeedbackBlock{From: i}
		}
		bN++
		bRules += b2i(rOK)
		bMatch += b2i(mOK)
		bKNN += b2i(kOK)
		if bN == block || i == len(cases)-1 {
			cur.To = i + 1
			cur.Rules = float64(bRules) / float64(bN)
			cur.Match = float64(bMatch) / float64(bN)
			cur.KNN = float64(bKNN) / float64(bN)
			if d := 100 * (cur.Rules - cur.Match); d > rep.WorstDeficit {
				rep.WorstDeficit = d
			}
			rep.Blocks = append(rep.Blocks, cur)
			bN, bRules, bMatch, bKNN = 0, 0, 0, 0
		}

		label := c.Label
		if opts.Noise > 0 && len(labels) > 1 && rng.Float64() < opts.Noise {
			label = wrongLabel(label, labels, rng)
			rep.Flipped++
		}
		// As in the archive, the label confirms or corrects the diagnosis
		// the engine gave.
		review := Confirmed
		if label != md.RootCause {
			review = Corrected
		}
		knn.Add(c.Snapshot, label)
		if err := kb.Add(LabelledCase{ID: fmt.Sprintf("case-%d", i+1), Snapshot: c.Snapshot, Cause: label, Review: review, Confidence: md.Uncalibrated, RulesCause: rd.RootCause}); err != nil {
			return rep, fmt.Errorf("diagnose: feedback case %d: %w", i+1, err)
		}
	}
	if n := len(cases); n > 0 {
		rep.Rules = float64(rulesOK) / float64(n)
		rep.Match = float64(matchOK) / float64(n)
		rep.KNN = float64(knnOK) / float64(n)
	}
	if afterN > 0 {
		rep.AfterRules = float64(afterRules) / float64(afterN)
		rep.AfterMatch = float64(afterMatch) / float64(afterN)
		rep.AfterKNN = float64(afterKNN) / float64(afterN)
		rep.AfterMatchAnyLabel = float64(afterAny) / float64(afterN)
	}
	rep.MatchReport = ev.Report()
	rep.RulesReport = rev.Report()
	return rep, nil
}

// labelSet lists the distinct labels of cases in first-seen order.
func labelSet(cases []m.Case) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range cases {
		if !seen[c.Label] {
			seen[c.Label] = true
			out = append(out, c.Label)
		}
	}
	return out
}

// wrongLabel picks a label other than label, uniformly.
func wrongLabel(label string, labels []string, rng *rand.Rand) string {
	for {
		l := labels[rng.Intn(len(labels))]
		if l != label {
			return l
		}
	}
}

// contains reports whether xs holds x.
func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
