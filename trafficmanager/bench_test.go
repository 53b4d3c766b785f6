package trafficmanager

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A network of 100 locations of three sections each, a tenth of the
// sections over their maximum: one full plan from nothing, then a tick
// that holds it (the steady state a live planner mostly sees).
func benchInput() Input {
	r := rand.New(rand.NewPCG(1, 1))
	in := Input{Latency: map[string]map[string]float64{}}
	th := Thresholds{Max: 0.9, Target: 0.8, Acceptable: 0.7}
	for l := range 100 {
		loc := fmt.Sprintf("L%03d", l)
		in.Latency[loc] = map[string]float64{}
		for o := range l {
			in.Latency[loc][fmt.Sprintf("L%03d", o)] = 1 + 200*r.Float64()
		}
		for s := range 3 {
			u := Unit{Location: loc, Section: fmt.Sprintf("s%d", s), Capacity: 10000, Thresholds: th}
			load := 3000 + 3000*r.Float64()
			if r.IntN(10) == 0 {
				load = 9500 + 2000*r.Float64()
			}
			u.Load = [numPlans]float64{load * 0.4, load * 0.3, load * 0.2, load * 0.1}
			in.Units = append(in.Units, u)
		}
	}
	return in
}

func BenchmarkTick(b *testing.B) {
	in := benchInput()
	first := Tick(in, State{})
	b.Logf("%d units, %d moves, %d notes", len(in.Units), len(first.State.Moves), len(first.Notes))
	b.Run("from-nothing", func(b *testing.B) {
		for b.Loop() {
			Tick(in, State{})
		}
	})
	b.Run("steady", func(b *testing.B) {
		for b.Loop() {
			Tick(in, first.State)
		}
	})
}
