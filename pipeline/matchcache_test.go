package pipeline

import (
	"reflect"
	"testing"

	"github.com/outagewatch/outagewatch/aggregate"
	"github.com/outagewatch/outagewatch/obs"
)

func seriesOf(entities ...string) []*aggregate.Series {
	a := aggregate.New(aggregate.Config{})
	var out []*aggregate.Series
	for _, e := range entities {
		a.Observe(&obs.Observation{Time: 1e9, Signal: obs.TrafficBytes, Entity: e, Value: 1})
		out = append(out, a.Series(aggregate.Key{Signal: obs.TrafficBytes, Entity: e}))
	}
	return out
}

// Series of two aggregators share numbers: each keeps its own rules, and
// equal lists are held once.
func TestMatchCacheKeepsAggregatorsApart(t *testing.T) {
	one, two := seriesOf("asn:1", "asn:2", "asn:3"), seriesOf("country:UG")
	var m matchCache
	if _, ok := m.get(one[0]); ok {
		t.Fatal("an empty cache knows asn:1")
	}
	m.put(one[0], []int{0, 2})
	m.put(one[1], []int{1})
	m.put(one[2], []int{0, 2})
	if got, ok := m.get(two[0]); ok {
		t.Fatalf("country:UG of another aggregator found the rules %v of asn:1", got)
	}
	m.put(two[0], nil)
	for _, c := range []struct {
		s    *aggregate.Series
		want []int
	}{{one[1], []int{1}}, {one[2], []int{0, 2}}, {two[0], nil}} {
		if got, ok := m.get(c.s); !ok || !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: %v %v, want %v", c.s.Entity, got, ok, c.want)
		}
	}
	if _, ok := m.get(one[0]); ok {
		t.Fatal("asn:1 kept its slot after country:UG of another aggregator took its number")
	}
	if len(m.lists) != 3 {
		t.Fatalf("%d lists held, want 3 ([0 2], [1], none)", len(m.lists))
	}
}
