package detectors

import "github.com/outagewatch/outagewatch/aggregate"

// seriesStates holds a detector's per-series states by value, found
// through the series' dense number: judging a bucket of many series costs
// two slice indexes per point, instead of building the series' name and
// hashing it, and a million states are a few hundred allocations instead
// of a million (plus a map of their names).
//
// Names are what checkpoints hold, so they are built only there
// (byName); restored states wait by name (parked) until their series
// first appears, and then move into a slot. A slot remembers whose series
// it was filled for: series of different aggregators share numbers, so a
// series whose number is held by another series of another name gets a
// slot of its own (others), and one of the same name (the same entity
// through a restored aggregator) takes the slot over with its state, as
// the state is the name's.
type seriesStates[S any] struct {
	// index is 1 + the slot number of each series number, 0 for none.
	index []int32
	// pages hold the slots, statePage each, and never move, so that a
	// state's address stays valid while its series is judged.
	pages  []*[statePage]stateSlot[S]
	n      int32
	others map[*aggregate.Series]int32
	parked map[string]*S
}

// statePage is how many states a page holds: a few hundred kilobytes of
// traffic_drop states, small beside a million series, large enough that
// the page list stays short.
const statePage = 256

type stateSlot[S any] struct {
	series *aggregate.Series
	state  S
}

// get returns the state of s, creating it (or taking its parked state) on
// first use.
func (b *seriesStates[S]) get(s *aggregate.Series) *S {
	if id := s.ID(); id < len(b.index) {
		if i := b.index[id]; i != 0 {
			if sl := b.slot(i - 1); sl.series == s {
				return &sl.state
			}
		}
	}
	return b.miss(s)
}

func (b *seriesStates[S]) slot(i int32) *stateSlot[S] {
	return &b.pages[i/statePage][i%statePage]
}

// miss finds or makes the slot of a series that its number's slot does
// not hold.
func (b *seriesStates[S]) miss(s *aggregate.Series) *S {
	id := s.ID()
	if id < len(b.index) && b.index[id] != 0 {
		if i, ok := b.others[s]; ok {
			return &b.slot(i).state
		}
		sl := b.slot(b.index[id] - 1)
		if sl.series.Key == s.Key {
			sl.series = s
			return &sl.state
		}
		if b.others == nil {
			b.others = map[*aggregate.Series]int32{}
		}
		i := b.add(s)
		b.others[s] = i
		return &b.slot(i).state
	}
	if id >= len(b.index) {
		b.index = append(b.index, make([]int32, id+1-len(b.index))...)
	}
	i := b.add(s)
	b.index[id] = i + 1
	return &b.slot(i).state
}

// add fills a new slot for s with its parked state, or a zero one.
func (b *seriesStates[S]) add(s *aggregate.Series) int32 {
	i := b.n
	if int(i/statePage) == len(b.pages) {
		b.pages = append(b.pages, new([statePage]stateSlot[S]))
	}
	b.n++
	sl := b.slot(i)
	sl.series = s
	if len(b.parked) > 0 {
		name := s.Key.String()
		if st, ok := b.parked[name]; ok {
			sl.state = *st
			delete(b.parked, name)
		}
	}
	return i
}

// byName returns every state under its series' name (signal{entity}), as
// checkpoints keep them; the pointers are the states themselves.
func (b *seriesStates[S]) byName() map[string]*S {
	m := make(map[string]*S, int(b.n)+len(b.parked))
	for i := range b.n {
		sl := b.slot(i)
		if name := sl.series.Key.String(); m[name] == nil {
			m[name] = &sl.state
		}
	}
	for name, st := range b.parked {
		if m[name] == nil {
			m[name] = st
		}
	}
	return m
}

// len is how many states are held, in slots and parked.
func (b *seriesStates[S]) len() int { return int(b.n) + len(b.parked) }

// restore replaces every state with the restored ones, parked by name
// until their series appear.
func (b *seriesStates[S]) restore(m map[string]*S) {
	*b = seriesStates[S]{parked: m}
}
