package trafficmanager

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// A p95 latency that rises with the square of CPU and crosses the 20 ms
// SLO at 80 %: 5 + 23.4375 × cpu². Gaussian noise (σ 0.5 ms), and one sample
// in ten an incident 30–80 ms above the curve that has nothing to do with
// CPU.
func syntheticSLI(r *rand.Rand, n int) (samples []Sample, outliers int) {
	for range n {
		cpu := 0.2 + 0.75*r.Float64()
		sli := 5 + 23.4375*cpu*cpu + 0.5*r.NormFloat64()
		if r.IntN(10) == 0 {
			sli += 30 + 50*r.Float64()
			outliers++
		}
		samples = append(samples, Sample{cpu, sli})
	}
	return samples, outliers
}

func TestLearnMaxRecoversThreshold(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		s, outliers := syntheticSLI(r, 500)
		l := LearnMax(s, LearnConfig{})
		if !l.OK {
			t.Fatalf("seed %d: %s", seed, l)
		}
		if math.Abs(l.Max-0.80) > 0.01 {
			t.Errorf("seed %d: max %.4f, want 0.80 ± 0.01 (%s)", seed, l.Max, l)
		}
		if l.Dropped < outliers {
			t.Errorf("seed %d: dropped %d, fewer than the %d injected outliers", seed, l.Dropped, outliers)
		}
	}
}

// Without the outlier cleaning the same data gives a threshold far off, so
// the cleaning is what the test above measures.
func TestLearnMaxOutliersMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 42))
	s, _ := syntheticSLI(r, 500)
	coef, err := fit(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := crossing(coef, 20)
	if ok && math.Abs(x-0.80) < 0.03 {
		t.Fatalf("raw fit crosses at %.4f: the outliers should pull it off", x)
	}
}

func TestLearnMaxLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var s []Sample
	for range 200 {
		cpu := r.Float64()
		s = append(s, Sample{cpu, 2 + 20*cpu + 0.3*r.NormFloat64()})
	}
	l := LearnMax(s, LearnConfig{Degree: 1})
	if !l.OK || math.Abs(l.Max-0.90) > 0.01 {
		t.Fatalf("linear: %s, want max 0.90", l)
	}
}

func TestLearnMaxPoorFit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var s []Sample
	for range 500 {
		s = append(s, Sample{r.Float64(), 10 + 15*r.Float64()})
	}
	l := LearnMax(s, LearnConfig{})
	if l.OK || !strings.Contains(l.Reason, "R²") {
		t.Fatalf("uncorrelated data: %+v, want a poor fit on R²", l)
	}
	// The planner keeps the static maximum and says so.
	in := workedInput()
	in.Units[0].Learnt = &l
	res := Tick(in, State{})
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "A: learnt max threshold not used (R²") || !strings.Contains(res.Notes[0], "static 90%") {
		t.Fatalf("notes %q", res.Notes)
	}
	if len(res.State.Moves) != 5 {
		t.Fatalf("static max not used: %v", res.State.Moves)
	}
}

func TestLearnMaxTooFew(t *testing.T) {
	l := LearnMax([]Sample{{0.5, 10}, {0.6, 12}}, LearnConfig{})
	if l.OK || !strings.Contains(l.Reason, "2 samples") {
		t.Fatalf("%+v", l)
	}
}

// A learnt maximum replaces the static one: with A's maximum learnt at
// 96 %, A at 95.5 % does not move anything.
func TestLearntMaxUsed(t *testing.T) {
	in := workedInput()
	in.Units[0].Learnt = &Learnt{OK: true, Max: 0.96}
	if r := Tick(in, State{}); len(r.State.Moves) != 0 {
		t.Fatalf("moves %v with learnt max 96%%", r.State.Moves)
	}
}

func TestCapacity(t *testing.T) {
	in := workedInput()
	in.Latency["B"] = map[string]float64{"D": 30}
	st := Tick(in, State{}).State
	// After the worked example B and C are at their acceptable level, D has
	// 600 left, A has its own load away and offers nothing.
	a, err := Capacity(in, st, "D", 500)
	if err != nil || !a.OK || math.Abs(a.Room-600) > 1e-9 {
		t.Fatalf("D 500: %+v %v", a, err)
	}
	a, err = Capacity(in, st, "B", 800)
	if err != nil || a.OK || a.Room != 0 || len(a.Nearest) != 1 || a.Nearest[0].Location != "D" || math.Abs(a.Nearest[0].Room-600) > 1e-9 || math.Abs(a.Short-200) > 1e-9 {
		t.Fatalf("B 800: %+v %v", a, err)
	}
	// Before any move: A is over its acceptable level; B, C, D have 300,
	// 300 and 1,000, nearest first.
	a, err = Capacity(in, State{}, "A", 1200)
	if err != nil || a.OK || len(a.Nearest) != 3 || a.Nearest[0].Location != "B" || a.Nearest[1].Location != "C" || a.Nearest[2].Location != "D" || a.Short != 0 {
		t.Fatalf("A 1200: %+v %v", a, err)
	}
	if _, err := Capacity(in, st, "X", 1); err == nil {
		t.Fatal("unknown data center accepted")
	}
}
