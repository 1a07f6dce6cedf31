package diagnose

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/optimize"
)

// Learned classifier. Nearest neighbours vote by resemblance in the whole
// signature, so a feature that varies within a cause (load, the model's
// size) moves a case toward the wrong neighbours as much as a feature that
// tells causes apart moves it toward the right ones; the feature weights
// (weights.go) soften this one feature at a time. A multinomial logistic
// regression of the label on the signature learns which combinations of
// features separate the causes the labels name, with one weight per cause
// and feature: the probability of cause c is
//
//	p(c | x) = exp(w_c·x + b_c) / Σ_k exp(w_k·x + b_k)
//
// where x is the signature's features, their absolute values (how far a
// metric moved whichever way, which a linear score of the signed feature
// alone cannot express) and a one-hot of the cause the rules alone named
// for the case (LabelledCase.RulesCause; all zero where it is unknown),
// fitted by maximum likelihood with an L2 penalty (classifierL2) that keeps
// weights small where few cases speak, by L-BFGS. The rules' answer lets
// it learn where the rules go wrong on this deployment: when the rules
// name a symptom whose root cause the labels keep naming (a cache storm
// called a long prompt), the weight of "the rules said X" toward the
// labelled cause corrects them, with the signature telling the cases
// where X was right from those where it was not. It knows no physics: it
// is one more way of learning from postmortems, and what it says is mixed
// with the neighbours' votes (fuseMatch). It reads only the stored
// signatures, so it learns from the same archive as the matcher.
//
// A full fit of maxClassifierCases cases takes about 0.3 s on one core
// (BenchmarkClassifierFit), so the fit is kept and redone only when the knowledge base changed by refitShare of its
// cases (at least refitMin), starting from the last fit's weights. It uses
// the most recent maxClassifierCases cases, and needs minClassifierCases
// cases of at least two causes.
const (
	classifierL2       = 1e-3
	minClassifierCases = 50
	maxClassifierCases = 4000
	refitMin           = 20
	refitShare         = 0.05
	classifierIters    = 200
	// classifierWeight is the support, in close neighbours' votes, that
	// the classifier's probabilities add to the matcher's (fuseMatch).
	// On the development corpora of both simulated worlds (seeds 11-12,
	// 1,000 cases) 3 and 6 did about as well and 1 half as much while
	// the classifier read the signature alone; once it also read the
	// rules' cause, 6 beat 3 by 0.4 and 1.4 points on the second world
	// and matched it on the first (10 was no better, with a worse
	// calibration).
	classifierWeight = 6.0
)

// classifierDim is the length of a classifier's input row with nRules
// rules' causes: the features, their absolute values, the one-hot of the
// rules' cause and a constant 1 for the bias.
func classifierDim(nRules int) int { return 2*SigDim + nRules + 1 }

// classifier is a fitted regression: causes, the rules' causes of its
// one-hot, and per cause classifierDim(len(rules)) weights, the bias last.
type classifier struct {
	causes []string
	rules  []string
	w      []float64 // len(causes) x classifierDim(len(rules))
}

// classifierRow is the input row of the quantised features f (in ±1) and
// the rules' cause rule (an index into nRules rules' causes, -1 unknown).
func classifierRow(f *[SigDim]float64, rule, nRules int) []float64 {
	d := classifierDim(nRules)
	x := make([]float64, d)
	for i, v := range f {
		x[i] = v
		x[SigDim+i] = math.Abs(v)
	}
	if rule >= 0 && rule < nRules {
		x[2*SigDim+rule] = 1
	}
	x[d-1] = 1
	return x
}

// probs returns p(c | sig, rulesCause) for every cause the classifier
// knows; rulesCause is what the rules alone named ("" unknown; a cause
// no training case had counts as unknown).
func (c *classifier) probs(sig Signature, rulesCause string) map[string]float64 {
	if c == nil || len(c.causes) == 0 {
		return nil
	}
	var f [SigDim]float64
	for i, v := range sig {
		// The stored codes are what it was fitted on: quantise alike.
		f[i] = math.Round(float64(v)*codeScale) / codeScale
	}
	rule := -1
	for i, r := range c.rules {
		if r == rulesCause {
			rule = i
			break
		}
	}
	x := classifierRow(&f, rule, len(c.rules))
	z := make([]float64, len(c.causes))
	softmax(c.w, x, z)
	out := make(map[string]float64, len(c.causes))
	for k, cause := range c.causes {
		out[cause] = z[k]
	}
	return out
}

// softmax writes into p the class probabilities of weights w for x.
func softmax(w, x, p []float64) {
	d := len(x)
	mx := math.Inf(-1)
	for k := range p {
		s := 0.0
		row := w[k*d : (k+1)*d]
		for j, v := range x {
			s += row[j] * v
		}
		p[k] = s
		mx = math.Max(mx, s)
	}
	sum := 0.0
	for k := range p {
		p[k] = math.Exp(p[k] - mx)
		sum += p[k]
	}
	for k := range p {
		p[k] /= sum
	}
}

// fitClassifier fits the regression to xs (classifierRow rows over the
// rules' causes rules) labelled ys (indices into causes), starting from
// init when it has the right length. It returns nil when the fit fails.
func fitClassifier(causes, rules []string, xs [][]float64, ys []int, init []float64) *classifier {
	k, d := len(causes), classifierDim(len(rules))
	n := float64(len(xs))
	p := make([]float64, k)
	loss := func(w, grad []float64) float64 {
		if grad != nil {
			for i := range grad {
				grad[i] = 0
			}
		}
		f := 0.0
		for i, x := range xs {
			softmax(w, x, p)
			f -= math.Log(math.Max(p[ys[i]], 1e-300))
			if grad == nil {
				continue
			}
			for c := range p {
				g := p[c]
				if c == ys[i] {
					g--
				}
				if g == 0 {
					continue
				}
				row := grad[c*d : (c+1)*d]
				for j, v := range x {
					row[j] += g * v
				}
			}
		}
		f /= n
		for i, v := range w {
			if grad != nil {
				grad[i] /= n
			}
			if i%d == d-1 {
				continue // biases are not penalised
			}
			f += classifierL2 / 2 * v * v
			if grad != nil {
				grad[i] += classifierL2 * v
			}
		}
		return f
	}
	w0 := make([]float64, k*d)
	if len(init) == len(w0) {
		copy(w0, init)
	}
	prob := optimize.Problem{
		Func: func(w []float64) float64 { return loss(w, nil) },
		Grad: func(grad, w []float64) { loss(w, grad) },
	}
	// Near the optimum the line search can fail on rounding alone; the
	// best point reached is still the fit.
	res, _ := optimize.Minimize(prob, w0, &optimize.Settings{MajorIterations: classifierIters, GradientThreshold: 1e-5}, &optimize.LBFGS{})
	if res == nil || !(res.F < loss(w0, nil)) && len(init) != len(w0) {
		return nil
	}
	for _, v := range res.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
	}
	return &classifier{causes: causes, rules: rules, w: res.X}
}

// classifierCache keeps the fit of a knowledge base (see the constants).
type classifierCache struct {
	mu     sync.Mutex
	gen    uint64
	n      int
	fitted bool
	fit    *classifier
}

// forKB returns the classifier for kb, refitting when kb changed enough;
// nil while kb holds too few cases.
func (cc *classifierCache) forKB(kb *KnowledgeBase) *classifier {
	kb.mu.RLock()
	gen, n := kb.gen, len(kb.meta)
	kb.mu.RUnlock()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.fitted {
		changed := gen - cc.gen
		if gen < cc.gen {
			changed = math.MaxUint64
		}
		if changed < uint64(max(refitMin, int(refitShare*float64(cc.n)))) {
			return cc.fit
		}
	}
	if n < minClassifierCases {
		cc.fit, cc.fitted = nil, false
		return nil
	}
	ts := kb.trainingSet()
	if len(ts.causes) < 2 {
		cc.fit, cc.fitted = nil, false
		return nil
	}
	var init []float64
	if cc.fit != nil && equalStrings(cc.fit.causes, ts.causes) && equalStrings(cc.fit.rules, ts.rules) {
		init = cc.fit.w
	}
	cc.fit = fitClassifier(ts.causes, ts.rules, ts.xs, ts.ys, init)
	cc.gen, cc.n, cc.fitted = ts.gen, len(ts.xs), true
	return cc.fit
}

// trainingSet is a knowledge base's cases as classifier input.
type trainingSet struct {
	causes []string // the labelled causes, in knowledge-base order
	rules  []string // the rules' causes of the one-hot, in knowledge-base order
	xs     [][]float64
	ys     []int // indices into causes
	gen    uint64
}

// trainingSet reads the most recent maxClassifierCases cases as
// classifierRow rows and cause indices.
func (kb *KnowledgeBase) trainingSet() trainingSet {
	kb.mu.RLock()
	defer kb.mu.RUnlock()
	from := max(0, len(kb.meta)-maxClassifierCases)
	var ts trainingSet
	index := map[uint16]int{}
	ruleIndex := map[uint16]int{}
	for i := from; i < len(kb.meta); i++ {
		ci := kb.meta[i].cause
		k, ok := index[ci]
		if !ok {
			k = len(ts.causes)
			index[ci] = k
			ts.causes = append(ts.causes, kb.causes[ci])
		}
		if r := kb.meta[i].rules; r > 0 {
			if _, ok := ruleIndex[r]; !ok {
				ruleIndex[r] = len(ts.rules)
				ts.rules = append(ts.rules, kb.ruleCauses[r-1])
			}
		}
		ts.ys = append(ts.ys, k)
	}
	ts.xs = make([][]float64, 0, len(ts.ys))
	for i := from; i < len(kb.meta); i++ {
		var c code
		copy(c[:], kb.vecs[i*sigWords:(i+1)*sigWords])
		var f [SigDim]float64
		for j := range f {
			f[j] = float64(c.feature(j)) / codeScale
		}
		rule := -1
		if r := kb.meta[i].rules; r > 0 {
			rule = ruleIndex[r]
		}
		ts.xs = append(ts.xs, classifierRow(&f, rule, len(ts.rules)))
	}
	ts.gen = kb.gen
	return ts
}

// equalStrings reports whether a and b hold the same strings in order.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
