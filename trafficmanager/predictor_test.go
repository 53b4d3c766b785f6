package trafficmanager

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// A network with a known failover matrix: each location drained three
// times, one tick apart from a baseline, with every location's load
// carrying 1 % noise. The predictor, fed only the ticks' measured loads and
// the plan's withdrawn list, recovers every share to within 3 points and
// replaces the hand-written rows once it has three observations, saying so.
func TestPredictorRecoversMatrix(t *testing.T) {
	known := map[string]map[string]float64{
		"A": {"B": 0.6, "C": 0.3, "D": 0.1},
		"B": {"A": 0.5, "C": 0.5},
		"C": {"D": 0.7, "E": 0.3},
		"D": {"E": 1},
		"E": {"A": 0.4, "B": 0.2, "D": 0.4},
	}
	base := map[string]float64{"A": 1000, "B": 1500, "C": 800, "D": 1200, "E": 600}
	r := rand.New(rand.NewPCG(5, 5))
	tick := func(out string) Input {
		in := Input{Failover: map[string]map[string]float64{"A": {"B": 1}}}
		for _, l := range sortedKeys(base) {
			v := base[l] * (1 + 0.01*r.NormFloat64())
			if l == out {
				v = 0
			}
			if out != "" && l != out {
				v += known[out][l] * base[out]
			}
			in.Units = append(in.Units, Unit{Location: l, Capacity: 4000, Served: v, ServedKnown: true})
		}
		return in
	}
	p := &Predictor{After: 3}
	var notes []string
	for round := range 3 {
		for _, l := range sortedKeys(base) {
			p.Observe(tick(""), nil)
			p.Observe(tick(l), []string{l})
			p.Observe(tick(""), nil) // announced again: not a withdrawal
			if round == 2 && l == "A" {
				_, notes = p.Apply(tick(""))
			}
		}
	}
	if n := p.Observations(); fmt.Sprint(n) != "map[A:3 B:3 C:3 D:3 E:3]" {
		t.Fatalf("observations %v", n)
	}
	m := p.Matrix()
	for from, row := range known {
		for _, to := range sortedKeys(base) {
			if to == from {
				continue
			}
			if d := math.Abs(m[from][to] - row[to]); d > 0.03 {
				t.Errorf("%s→%s learnt %.4f, known %.2f", from, to, m[from][to], row[to])
			}
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "A: failover learnt from 3 withdrawals replaces the topology's: B 58.58%, C 29.47%, D 11.19%, E 0.4299%") {
		t.Fatalf("notes %q", notes)
	}
	in, again := p.Apply(tick(""))
	if math.Abs(in.Failover["A"]["B"]-m["A"]["B"]) > 1e-12 || len(again) != 4 {
		t.Fatalf("applied A→B %v, notes %q", in.Failover["A"]["B"], again)
	}
	if _, more := p.Apply(tick("")); len(more) != 0 {
		t.Fatalf("notes repeated: %q", more)
	}
}

// Two locations withdrawn in the same tick cannot be told apart: nothing
// is recorded. Nor is anything before After observations replaced.
func TestPredictorAmbiguous(t *testing.T) {
	in := Input{Units: []Unit{{Location: "A", Served: 100, ServedKnown: true}, {Location: "B", Served: 100, ServedKnown: true}, {Location: "C", Served: 100, ServedKnown: true}}}
	p := &Predictor{After: 1}
	p.Observe(in, nil)
	p.Observe(in, []string{"A", "B"})
	if n := p.Observations(); len(n) != 0 {
		t.Fatalf("recorded %v", n)
	}
	if out, notes := p.Apply(in); out.Failover != nil || notes != nil {
		t.Fatalf("applied %v %v", out.Failover, notes)
	}
}
