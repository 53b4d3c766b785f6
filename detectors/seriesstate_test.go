package detectors

import (
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

// Two aggregators number their series alike; their states must not mix,
// and each series must find its own state again by number.
func TestByIDKeepsAggregatorsApart(t *testing.T) {
	series := func(entities ...string) []*aggregate.Series {
		a := aggregate.New(aggregate.Config{})
		var out []*aggregate.Series
		for _, e := range entities {
			a.Observe(&obs.Observation{Time: 1e9, Signal: testFailureRatio, Entity: e, Value: 1})
			out = append(out, a.Series(aggregate.Key{Signal: testFailureRatio, Entity: e}))
		}
		return out
	}
	one, two := series("zone:a", "zone:b"), series("zone:c")
	if one[0].ID() != 0 || one[1].ID() != 1 || two[0].ID() != 0 {
		t.Fatalf("ids %d %d %d, want 0 1 0", one[0].ID(), one[1].ID(), two[0].ID())
	}
	states := map[string]*dropState{}
	var b byID[dropState]
	a0, b0 := b.get(one[0], states), b.get(two[0], states)
	if a0 == b0 {
		t.Fatal("series 0 of two aggregators share a state")
	}
	a0.Run, b0.Run = 1, 2
	if got := b.get(one[0], states); got.Run != 1 {
		t.Fatalf("zone:a found the state of run %d, want 1", got.Run)
	}
	if got := b.get(one[1], states); got.Run != 0 || len(states) != 3 {
		t.Fatalf("zone:b: run %d, %d states, want a fresh one of 3", got.Run, len(states))
	}
	if states[testFailureRatio.String()+"{zone:c}"] != b0 {
		t.Fatal("the state of zone:c is not the one kept under its name")
	}
	b.reset()
	if got := b.get(one[0], states); got != a0 {
		t.Fatal("after a reset, zone:a did not find its state by name")
	}
}
