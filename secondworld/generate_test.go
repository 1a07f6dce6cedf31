package secondworld

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casebook/casebook/metrics"
)

var (
	corpusOnce sync.Once
	corpus     []trace
)

// bigCorpus is the 2,000-case corpus several tests share.
func bigCorpus(t *testing.T) []trace {
	t.Helper()
	corpusOnce.Do(func() {
		var err error
		corpus, err = generate(Options{N: 2000, Seed: 11})
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
	})
	if len(corpus) != 2000 {
		t.Fatalf("corpus has %d cases", len(corpus))
	}
	return corpus
}

func TestGenerateIsDeterministicPerSeed(t *testing.T) {
	a, err := Generate(Options{N: 40, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(Options{N: 40, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("the same seed gave different corpora")
	}
	// each case is its own stream: a shorter corpus is a prefix of a longer one
	short, err := Generate(Options{N: 10, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(short, a[:10]) {
		t.Error("the first 10 cases of a 40-case corpus differ from a 10-case corpus")
	}
	c, err := Generate(Options{N: 40, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	jc, _ := json.Marshal(c)
	if string(jc) == string(ja) {
		t.Error("seeds 5 and 6 gave the same corpus")
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string // "" means valid
	}{
		{name: "zero cases", opts: Options{N: 0}},
		{name: "some cases", opts: Options{N: 3, Seed: -4}},
		{name: "negative N", opts: Options{N: -1}, wantErr: "must not be negative"},
		{name: "too many", opts: Options{N: MaxCases + 1}, wantErr: "above the limit"},
		{name: "start too early", opts: Options{N: 1, Start: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)}, wantErr: "outside the years"},
		{name: "start fine", opts: Options{N: 1, Start: time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := Generate(tc.opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(cases) != tc.opts.N {
					t.Fatalf("got %d cases, want %d", len(cases), tc.opts.N)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q: want ErrOptions containing %q", err, tc.wantErr)
			}
			if cases != nil {
				t.Error("cases returned with an error")
			}
		})
	}
}

func TestEveryLabelInSensibleShares(t *testing.T) {
	tr := bigCorpus(t)
	count := map[string]int{}
	withSecondary := 0
	for _, x := range tr {
		count[x.c.Label]++
		if len(x.c.Secondary) > 0 {
			withSecondary++
			if x.c.Label == metrics.CauseNone {
				t.Errorf("a none case has secondary %v", x.c.Secondary)
			}
			for _, s := range x.c.Secondary {
				if s == x.c.Label {
					t.Errorf("secondary %q repeats the label", s)
				}
				if _, ok := metrics.LookupCause(s); !ok {
					t.Errorf("secondary %q is not a taxonomy id", s)
				}
			}
		}
	}
	want := append(metrics.FaultCauses(), metrics.CauseNone)
	for _, id := range want {
		share := float64(count[id]) / float64(len(tr))
		lo, hi := 0.04, 0.12
		if id == metrics.CauseNone {
			lo, hi = 0.09, 0.2
		}
		if share < lo || share > hi {
			t.Errorf("label %s: share %.3f outside %.2f..%.2f", id, share, lo, hi)
		}
	}
	if len(count) != len(want) {
		t.Errorf("labels %v, want exactly %v", count, want)
	}
	share := float64(withSecondary) / float64(len(tr))
	if share < 0.1 || share > 0.3 {
		t.Errorf("%.3f of cases have a secondary disturbance, want 0.1..0.3", share)
	}
}

func TestCasesKeepTheContract(t *testing.T) {
	tr := bigCorpus(t)
	noProfiling, noGateway := 0, 0
	for i, x := range tr {
		c := x.c
		if len(c.History) != HistoryPoints {
			t.Fatalf("case %d: %d history points, want %d", i, len(c.History), HistoryPoints)
		}
		for k, p := range c.History {
			if want := c.At.Add(time.Duration(k-HistoryPoints) * time.Minute); !p.At.Equal(want) {
				t.Fatalf("case %d: history[%d] at %s, want %s", i, k, p.At, want)
			}
		}
		if c.Scope.Model == "" || c.Scope.Instance == "" {
			t.Fatalf("case %d: scope %+v incomplete", i, c.Scope)
		}
		for _, vals := range append([]metrics.Values{c.Current}, pointValues(c.History)...) {
			for id, v := range vals {
				m, ok := metrics.Lookup(id)
				if !ok {
					t.Fatalf("case %d: unknown metric id %q", i, id)
				}
				if msg := m.Check(v); msg != "" {
					t.Fatalf("case %d: %s %s", i, id, msg)
				}
			}
		}
		if i < 200 { // the wire format round-trips through the contract's decoder
			line, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			back, err := metrics.DecodeCase(line)
			if err != nil {
				t.Fatalf("case %d does not decode: %v", i, err)
			}
			if back.Label != c.Label || len(back.History) != HistoryPoints {
				t.Fatalf("case %d changed in a round trip", i)
			}
		}
		if _, ok := c.Current[metrics.TensorActive]; !ok {
			noProfiling++
			for _, p := range c.History {
				if _, ok := p.Values[metrics.DRAMActive]; ok {
					t.Fatalf("case %d: dram_active in history without profiling fields", i)
				}
			}
		}
		if !anyHas(c, metrics.ArrivalRPS) {
			noGateway++
			if c.Label == metrics.CauseTransportLatency {
				t.Errorf("case %d: transport_latency without gateway metrics", i)
			}
		}
	}
	if s := float64(noProfiling) / float64(len(tr)); s < 0.28 || s > 0.45 {
		t.Errorf("%.3f of cases lack profiling fields, want 0.28..0.45", s)
	}
	if s := float64(noGateway) / float64(len(tr)); s < 0.15 || s > 0.4 {
		t.Errorf("%.3f of cases lack gateway fields, want 0.15..0.4", s)
	}
}

func anyHas(c metrics.Case, id string) bool {
	if _, ok := c.Current[id]; ok {
		return true
	}
	return len(c.Series(id)) > 0
}

func pointValues(ps []metrics.Point) []metrics.Values {
	out := make([]metrics.Values, len(ps))
	for i, p := range ps {
		out[i] = p.Values
	}
	return out
}

func TestPhysicalSanity(t *testing.T) {
	tr := bigCorpus(t)
	for i, x := range tr {
		for k := range x.served {
			if x.served[k] > x.capacity[k]*(1+1e-9) {
				t.Fatalf("case %d minute %d: served %.3f req/s above capacity %.3f", i, k, x.served[k], x.capacity[k])
			}
			if x.kvUse[k] < 0 || x.kvUse[k] > 1 {
				t.Fatalf("case %d minute %d: KV usage %.3f", i, k, x.kvUse[k])
			}
		}
		for k, v := range append(pointValues(x.c.History), x.c.Current) {
			ttft, ok1 := v.Get(metrics.TTFT)
			q, ok2 := v.Get(metrics.QueueTime)
			if ok1 && ok2 && ttft < q {
				t.Fatalf("case %d point %d: TTFT %.1f ms below queue time %.1f ms", i, k, ttft, q)
			}
			e2e, ok3 := v.Get(metrics.E2E)
			if ok1 && ok3 && x.c.Label != metrics.CauseEngineErrors && e2e < ttft {
				t.Fatalf("case %d point %d: E2E %.1f ms below TTFT %.1f ms", i, k, e2e, ttft)
			}
			for _, pair := range [][2]string{{metrics.TTFT, metrics.TTFTP99}, {metrics.TPOT, metrics.TPOTP99}, {metrics.E2E, metrics.E2EP99}} {
				mean, ok1 := v.Get(pair[0])
				p99, ok2 := v.Get(pair[1])
				if ok1 && ok2 && p99 < mean {
					t.Fatalf("case %d point %d: %s %.1f below its mean %.1f", i, k, pair[1], p99, mean)
				}
			}
			if gw, ok := v.Get(metrics.GatewayE2E); ok && ok3 && gw < e2e {
				t.Fatalf("case %d point %d: gateway E2E %.1f below engine E2E %.1f", i, k, gw, e2e)
			}
		}
	}
}

func TestThrottlingLowersTheClock(t *testing.T) {
	tr := bigCorpus(t)
	checked, lower := 0, 0
	for i, x := range tr {
		f := x.primary
		if x.c.Label != metrics.CauseGPUThrottling || f.sev < 0.3 || f.onset < f.ramp+5 {
			continue // weak or still ramping (a GPU takes minutes to heat up)
		}
		cur, ok := x.c.Current.Get(metrics.SMClock)
		hist := x.c.Series(metrics.SMClock)
		if !ok || len(hist) < 50 {
			continue
		}
		mean := 0.0
		for _, v := range hist[:50] {
			mean += v
		}
		mean /= 50
		checked++
		if cur < mean {
			lower++
		} else {
			t.Logf("case %d (variant %d, severity %.2f): clock %.0f, history mean %.0f", i, f.variant, f.sev, cur, mean)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d developed throttling cases to check", checked)
	}
	if lower != checked {
		t.Errorf("%d of %d developed throttling cases show a lower SM clock than their history", lower, checked)
	}
}

func TestHealthyCasesStayInTheirBaseline(t *testing.T) {
	tr := bigCorpus(t)
	for i, x := range tr {
		if x.c.Label != metrics.CauseNone {
			continue
		}
		// healthy load stays below capacity, so no backlog and no aborts
		for k := range x.served {
			if x.served[k] > 0.99*x.capacity[k] {
				t.Errorf("none case %d minute %d runs at %.1f%% of capacity", i, k, 100*x.served[k]/x.capacity[k])
				break
			}
		}
		if e, ok := x.c.Current.Get(metrics.ErrorRate); ok && e > 0.05 {
			t.Errorf("none case %d has error rate %.3f", i, e)
		}
	}
}

func TestFaultsMoveTheirOwnMetric(t *testing.T) {
	// For a strong, developed fault the metric that is its physical cause
	// moves the right way against the case's own history.
	tr := bigCorpus(t)
	type probe struct {
		id   string
		sign float64
	}
	probes := map[string]probe{
		metrics.CauseSpecDecodeDegradation: {metrics.RejectionRate, 1},
		metrics.CauseLongPromptPrefill:     {metrics.MeanPromptTokens, 1},
		metrics.CausePrefixCacheMiss:       {metrics.KVCacheHitRate, -1},
		metrics.CauseEngineErrors:          {metrics.ErrorRate, 1},
		metrics.CauseTransportLatency:      {metrics.GatewayE2E, 1},
		metrics.CauseKVCacheEviction:       {metrics.KVCacheUsage, 1},
		metrics.CauseQueueBacklog:          {metrics.QueueTime, 1},
	}
	moved, total := map[string]int{}, map[string]int{}
	for _, x := range tr {
		p, ok := probes[x.c.Label]
		if !ok || x.primary.sev < 0.4 || x.primary.level(0) < 1 {
			continue
		}
		cur, ok := x.c.Current.Get(p.id)
		hist := x.c.Series(p.id)
		if !ok || len(hist) < 50 {
			continue
		}
		mean := 0.0
		for _, v := range hist[:50] {
			mean += v
		}
		mean /= 50
		total[x.c.Label]++
		if (cur-mean)*p.sign > 0 {
			moved[x.c.Label]++
		}
	}
	for cause := range probes {
		if total[cause] < 10 {
			t.Errorf("%s: only %d strong developed cases", cause, total[cause])
			continue
		}
		if frac := float64(moved[cause]) / float64(total[cause]); frac < 0.9 {
			t.Errorf("%s: %s moved the right way in %.2f of strong cases", cause, probes[cause].id, frac)
		}
	}
}

func TestRejectionRateAndAcceptance(t *testing.T) {
	tests := []struct {
		name      string
		a         float64
		k         int
		wantRej   float64
		wantSteps float64
	}{
		{"no speculation", 0.7, 0, 0, 1},
		{"perfect drafts", 1, 3, 0, 4},
		{"half acceptance k=2", 0.5, 2, 1 - (0.5+0.25)/2, 1.75},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rejectionRate(tc.a, tc.k); math.Abs(got-tc.wantRej) > 1e-9 {
				t.Errorf("rejection = %v, want %v", got, tc.wantRej)
			}
			if got := acceptedPerStep(tc.a, tc.k); math.Abs(got-tc.wantSteps) > 1e-9 {
				t.Errorf("tokens per step = %v, want %v", got, tc.wantSteps)
			}
		})
	}
}
