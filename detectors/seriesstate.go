package detectors

import "github.com/outagewatch/outagewatch/aggregate"

// byID finds a detector's state of a series through the series' dense
// number, so that judging a bucket of many series costs a slice index per
// point instead of building the series' name and hashing it. The states
// themselves stay in the detector's map by name, which is what
// checkpoints hold; a slot remembers whose series it was filled for, so a
// series of another aggregator with the same number takes the map path.
type byID[S any] struct {
	slots []idSlot[S]
}

type idSlot[S any] struct {
	series *aggregate.Series
	state  *S
}

// get returns the state of s, creating it in states on first use.
func (b *byID[S]) get(s *aggregate.Series, states map[string]*S) *S {
	id := s.ID()
	if id < len(b.slots) && b.slots[id].series == s {
		return b.slots[id].state
	}
	st := stateOf(states, s.Key.String())
	if id >= len(b.slots) {
		b.slots = append(b.slots, make([]idSlot[S], id+1-len(b.slots))...)
	}
	b.slots[id] = idSlot[S]{s, st}
	return st
}

// reset forgets every slot: the states were replaced (a restore).
func (b *byID[S]) reset() { b.slots = nil }
