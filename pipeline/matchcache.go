package pipeline

import (
	"strconv"
	"strings"

	"github.com/outagewatch/outagewatch/aggregate"
)

// matchCache remembers which rules watch each series, by the series'
// dense number: a slice index per point instead of a map keyed by the
// series' address, and 16 bytes a series instead of a map entry and a
// list of its own. Series share few distinct lists (one per combination
// of rules), so a slot names its list in lists. A slot remembers whose
// series it holds: a series of another aggregator with the same number
// has its rules matched again.
type matchCache struct {
	slots []matchSlot
	lists [][]int
	byKey map[string]int32 // list contents → index in lists
}

type matchSlot struct {
	series *aggregate.Series
	list   int32
}

// get returns the indexes of the rules that watch s, if known.
func (m *matchCache) get(s *aggregate.Series) ([]int, bool) {
	if id := s.ID(); id < len(m.slots) && m.slots[id].series == s {
		return m.lists[m.slots[id].list], true
	}
	return nil, false
}

// put remembers the indexes of the rules that watch s.
func (m *matchCache) put(s *aggregate.Series, idx []int) {
	id := s.ID()
	if id >= len(m.slots) {
		m.slots = append(m.slots, make([]matchSlot, id+1-len(m.slots))...)
	}
	m.slots[id] = matchSlot{s, m.intern(idx)}
}

// intern returns the index of the list equal to idx, adding it if new.
func (m *matchCache) intern(idx []int) int32 {
	var b strings.Builder
	for _, i := range idx {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	k := b.String()
	if i, ok := m.byKey[k]; ok {
		return i
	}
	if m.byKey == nil {
		m.byKey = map[string]int32{}
	}
	i := int32(len(m.lists))
	m.lists = append(m.lists, idx)
	m.byKey[k] = i
	return i
}
